"""Stage 9, the memory: ``build()`` and ``Memory.context()``, the stages composed.

Takes records (or text, a file, a Source) and a preset or model profile; gives a :class:`Memory`
whose ``context(query, U)`` is the assembled context. :mod:`.settings` sets a build up (models,
rules, the plan), :mod:`.indexes` builds the channels its rules name, :mod:`.pipeline` holds ``Memory``
and ``build``; :mod:`.presets` are the frozen presets, :mod:`.collection` several stores read side
by side, :mod:`.variants` the baselines and ablations.

build: records -> plan, units, parents (derive) -> BM25 index, parent graph,
piece vectors (cached by model and text hash). context (:meth:`Memory.retrieve`,
its steps public so the ablations in ``muster_exact.memory.variants`` compose them):
the channels (``muster_exact.channels.CHANNELS``, in their order) propose
max(2U, 20) units each -> cross-encoder order (without weights, a fusion of
the channels' scores) -> floors by channel name -> assembly in stored order. Which
rules run (``muster_exact.rules``) follows the mode: exact replays the
paper's method, native adds the CPU improvements.
"""

from muster_exact.memory.indexes import embedding_pieces, unit_texts
from muster_exact.memory.pipeline import Memory, Retrieved, build
from muster_exact.memory.settings import (
    DEFAULT_MODELS_ENV,
    checked_query,
    checked_units,
    default_models,
    models_for,
    named_models,
    planned,
    rules_of,
    unit_window,
)

__all__ = [
    "DEFAULT_MODELS_ENV",
    "Memory",
    "Retrieved",
    "build",
    "checked_query",
    "checked_units",
    "default_models",
    "embedding_pieces",
    "models_for",
    "named_models",
    "planned",
    "rules_of",
    "unit_texts",
    "unit_window",
]
