"""MemoryAgentBench, in one folder: ``adapter.py`` (its stores by split, prompts by source and
judging rules), ``scorer.py`` (exact and substring match, ``Answer:`` parsing, EventQA recall,
recommendation recall@k, offline) and ``published.py`` (the published outputs re-scored by our
scorer beside the figure they report)."""
