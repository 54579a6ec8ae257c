"""Model profiles: which embedder and cross-encoder a build uses (``cpu-small``, ``paper``, a local
directory), named by :class:`ModelRef`, and ``require`` for the model libraries."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from muster_exact.core import optional
from muster_exact.core.errors import ResourceMissing
from muster_exact.core.registry import Registry

PACKAGED_MINILM = "packaged:all-MiniLM-L6-v2"


INSTALL_MODELS = optional.INSTALL_MODELS


Backend = Literal["sentence-transformers", "flagembedding", "onnx", "onnx-int8"]


# ONNX Runtime runs of a sentence-transformers model, exported from its local weights once.
ONNX_BACKENDS = ("onnx", "onnx-int8")


INSTALL_ONNX = optional.Extra("onnx")


@dataclass(frozen=True)
class ModelRef:
    id: str
    backend: Backend = "sentence-transformers"
    revision: str | None = None

    @property
    def key(self) -> str:
        """The model a store records as its embedder: the model, and its runtime where that is not
        torch (an ONNX run's vectors differ from torch's in the last bits, so they never mix).
        Vectors are cached under the loaded embedder's ``model_id``, which adds how they were
        computed (:class:`SentenceTransformerEmbedder`)."""
        return self.id if self.backend not in ONNX_BACKENDS else f"{self.id}#{self.backend}"

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "backend": self.backend, "revision": self.revision}


@dataclass(frozen=True)
class Models:
    """What retrieval runs: an embedder and, optionally, a cross-encoder."""

    name: str
    embedder: ModelRef
    reranker: ModelRef | None = None
    # Why ``auto`` chose this profile ('' for a profile named outright): shown by info and explain.
    chosen_by: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "embedder": self.embedder.to_dict(),
            "reranker": None if self.reranker is None else self.reranker.to_dict(),
        }
        if self.chosen_by:
            out["chosen_by"] = self.chosen_by
        return out


PROFILES: Registry[Models] = Registry(
    "model profile",
    {
        "cpu-small": Models("cpu-small", ModelRef(PACKAGED_MINILM)),
        # The same model under ONNX Runtime (muster-memory[onnx]), fp32 or int8: faster on a CPU,
        # with vectors of their own (results/bench/embed.md).
        "cpu-small-onnx": Models("cpu-small-onnx", ModelRef(PACKAGED_MINILM, "onnx")),
        "cpu-small-onnx-int8": Models("cpu-small-onnx-int8", ModelRef(PACKAGED_MINILM, "onnx-int8")),
        "paper": Models(
            "paper",
            ModelRef("BAAI/bge-m3", "flagembedding"),
            ModelRef("BAAI/bge-reranker-v2-m3", "flagembedding"),
        ),
    },
)


AUTO = "auto"


MODELS_ENV = "MUSTER_MODELS"


# What a user can do about a model that is not there, named in every such error.
HOW_TO_CHOOSE = (
    f"choose the models with --models PROFILE|DIR (or ${MODELS_ENV}, or models= in Python): "
    f"{', '.join(PROFILES.names())}, {AUTO}, or a local directory holding a model's files"
)


PAPER = PROFILES.get("paper")


CPU = PROFILES.get("cpu-small")


def looks_like_path(name: str) -> bool:
    return Path(name).expanduser().is_dir() or any(c in name for c in "/\\~") or name.startswith(".")


def from_directory(directory: Path) -> Models:
    """A profile from local files: ``DIR/bge-m3`` (and ``DIR/bge-reranker-v2-m3`` if there) is the
    paper's pair read from disk; any other ``DIR`` is one sentence-transformers embedder, with no
    cross-encoder. Named by the absolute path, so its vectors are cached apart from any other's."""
    path = directory.expanduser().resolve()
    if not path.is_dir():
        raise ResourceMissing(f"no model directory at {directory}; {HOW_TO_CHOOSE}")
    paper, reranker = path / "bge-m3", path / "bge-reranker-v2-m3"
    if paper.is_dir():
        return Models(
            str(path),
            ModelRef(str(paper), "flagembedding"),
            ModelRef(str(reranker), "flagembedding") if reranker.is_dir() else None,
        )
    if not (path / "config.json").is_file():
        raise ResourceMissing(
            f"{directory} holds no model (no config.json, and no bge-m3/ folder); {HOW_TO_CHOOSE}"
        )
    return Models(str(path), ModelRef(str(path)))


def require(module: str) -> Any:
    """A library of the cpu or the models extra (:func:`muster_exact.core.optional.require_extra`)."""
    return optional.require_extra(module)
