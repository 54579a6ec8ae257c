"""LoCoMo, in one folder: ``adapter.py`` (its stores, prompts and judging rules), ``scorer.py``
(token F1 by LoCoMo's own rules, offline) and ``audit.py`` (the judge audit of its wrong golds
and the published outputs re-scored)."""
