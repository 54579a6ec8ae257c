"""BEAM, in one folder: ``adapter.py`` (its chats by size, prompts and rubric judging) and
``scorer.py`` (rubric means, ``tau_norm`` rank score and the two-level aggregation, offline)."""
