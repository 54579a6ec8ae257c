"""The embedders and cross-encoders themselves, one class per library, loaded once per model
(``load_embedder``, ``load_reranker``: once whatever the concurrency, :mod:`.once`)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Protocol

from muster_exact.core import progress
from muster_exact.core.errors import ModelLoadError, MusterError
from muster_exact.models.hub import resolve
from muster_exact.models.once import OncePerKey
from muster_exact.models.onnx import onnx_model
from muster_exact.models.profiles import HOW_TO_CHOOSE, ONNX_BACKENDS, ModelRef, require
from muster_exact.models.window import _max_length

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

EMBED_BATCH = 32


# Tokens per forward pass of the exact torch path: texts of one token count are batched together,
# as many as fit (SentenceTransformerEmbedder).
EMBED_TOKENS = 4096


RERANK_BATCH = 32


class Embedder(Protocol):
    model_id: str

    def embed(self, texts: list[str]) -> np.ndarray: ...


class Reranker(Protocol):
    model_id: str

    def score(self, query: str, texts: list[str]) -> list[float]: ...


def _length_sorted(texts: list[str]) -> list[int]:
    return sorted(range(len(texts)), key=lambda i: (len(texts[i]), i))


def _unsorted(vectors: np.ndarray, order: list[int]) -> np.ndarray:
    """Rows computed in ``order`` put back in input order."""
    np_ = require("numpy")
    out: np.ndarray = np_.empty_like(vectors)
    out[order] = vectors
    return out


class SentenceTransformerEmbedder:
    """A sentence-transformers embedder. Under torch a text's vector is the same bits whatever it
    is embedded with and on whichever CPU: each forward pass holds texts of one token count (no
    padding) and runs in float64, and the vector is rounded to float32 at the end.

    Why: a float32 run's last bits follow the batch it is in (the padding changes the kernels'
    blocking), the thread split and the SIMD width, and one ulp is enough to swap two near-tied
    units, so a context would depend on the cache's history and on the CPU
    (docs/decisions/0118-float64-vectors.md). float64 differences sit ~1e-16 below
    the float32 rounding, so the rounded vectors agree. An ONNX run keeps float32 and is cached
    apart (``ModelRef.key``)."""

    # Set apart the vectors cached by the float32 runs before this rule: they differ in the last bits.
    NUMERICS = "f64"

    def __init__(self, ref: ModelRef) -> None:
        st = require("sentence_transformers")
        self._exact = ref.backend not in ONNX_BACKENDS
        if not self._exact:
            directory, file_name = onnx_model(ref)
            self.model_id = ref.key
            self._model = st.SentenceTransformer(
                str(directory), device="cpu", backend="onnx", model_kwargs={"file_name": file_name}
            )
        else:
            self.model_id = f"{ref.key}#{self.NUMERICS}"
            self._model = st.SentenceTransformer(str(resolve(ref)), device="cpu")
            self._model.to(require("torch").float64)

    def embed(self, texts: list[str]) -> np.ndarray:
        if self._exact:
            return self._embed_exact(texts)
        np = require("numpy")
        order = _length_sorted(texts)  # similar lengths per batch: less padding
        vectors = self._model.encode(
            [texts[i] for i in order],
            batch_size=EMBED_BATCH,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=progress.enabled(),
        ).astype(np.float32)
        return _unsorted(vectors, order)

    def _embed_exact(self, texts: list[str]) -> np.ndarray:
        np_ = require("numpy")
        torch = require("torch")
        out: np.ndarray = np_.empty((len(texts), _dimension(self._model)), dtype=np_.float32)
        groups = sorted(self._by_token_count(texts).items())
        shown = progress.embedding(len(texts))  # an estimate, then a bar or lines, where shown
        try:
            # Spread, not by length: progress runs at an even pace (each group's call is the same).
            for index in progress.spread(len(groups)):
                count, members = groups[index]
                rows = self._model.encode(
                    [texts[i] for i in members],
                    batch_size=max(1, EMBED_TOKENS // count),
                    normalize_embeddings=True,
                    convert_to_tensor=True,
                    show_progress_bar=False,
                )
                out[members] = rows.to(torch.float32).numpy()
                shown.update(len(members))
        finally:
            shown.close()
        return out

    def _by_token_count(self, texts: list[str]) -> dict[int, list[int]]:
        """Text positions by the number of tokens the model reads of each (after truncation)."""
        groups: dict[int, list[int]] = {}
        for start in range(0, len(texts), 1024):
            mask = _tokenized(self._model, texts[start : start + 1024])["attention_mask"]
            for offset, count in enumerate(mask.sum(dim=1).tolist()):
                groups.setdefault(int(count), []).append(start + offset)
        return groups


def _tokenized(model: Any, texts: list[str]) -> Any:
    """The model's own tokenization, as ``encode`` does it (``preprocess`` from 5.x, else
    ``tokenize``)."""
    return (getattr(model, "preprocess", None) or model.tokenize)(texts)


def _dimension(model: Any) -> int:
    get = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    return int(get() or 0)


class BGEM3Embedder:
    def __init__(self, ref: ModelRef) -> None:
        directory = resolve(ref)  # first: a missing model is said before FlagEmbedding loads
        flag = require("FlagEmbedding")
        self.model_id = ref.id
        self._model = flag.BGEM3FlagModel(str(directory), use_fp16=False, devices="cpu")

    def embed(self, texts: list[str]) -> np.ndarray:
        np = require("numpy")
        order = _length_sorted(texts)
        dense = self._model.encode([texts[i] for i in order], batch_size=EMBED_BATCH)["dense_vecs"]
        vectors = np.asarray(dense, dtype=np.float32)
        vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        return _unsorted(vectors, order)


class CrossEncoderReranker:
    def __init__(self, ref: ModelRef) -> None:
        directory = resolve(ref)
        st = require("sentence_transformers")
        self.model_id = ref.id
        self._model = st.CrossEncoder(str(directory), device="cpu")

    def score(self, query: str, texts: list[str]) -> list[float]:
        scores = self._model.predict(
            [(query, t) for t in texts], batch_size=RERANK_BATCH, show_progress_bar=False
        )
        return [float(s) for s in scores]


class FlagCrossEncoder:
    def __init__(self, ref: ModelRef) -> None:
        directory = resolve(ref)
        flag = require("FlagEmbedding")
        self.model_id = ref.id
        self._model = flag.FlagReranker(str(directory), use_fp16=False, devices="cpu")

    def score(self, query: str, texts: list[str]) -> list[float]:
        scores = self._model.compute_score([[query, t] for t in texts], batch_size=RERANK_BATCH)
        return [float(s) for s in (scores if isinstance(scores, list) else [scores])]


def load_embedder(ref: ModelRef) -> Embedder:
    """The embedder for ``ref``, loaded once per process, whatever the concurrency (callers that
    ask while it loads wait for that load); a load that fails is :class:`ModelLoadError` naming
    the cause, and the next call loads again (:mod:`.once`)."""
    return _EMBEDDERS(ref)


def load_reranker(ref: ModelRef) -> Reranker:
    """The cross-encoder for ``ref``, loaded as :func:`load_embedder` loads an embedder."""
    return _RERANKERS(ref)


def _embedder(ref: ModelRef) -> Embedder:
    with _typed(ref):
        if ref.backend == "flagembedding":
            log.info("loading embedder %s (FlagEmbedding)", ref.id)
            return BGEM3Embedder(ref)
        if ref.backend not in ONNX_BACKENDS:
            from muster_exact.models import numpy_bert

            directory = resolve(ref)
            if numpy_bert.runs_on_numpy(directory):
                # The torch float64 path's function on numpy: the same vectors but for a rare
                # component one float32 step apart (results/bench/vectors.md), so the same model_id.
                # Said as what runs (numpy), not as the format its files are in.
                log.info("loading embedder %s (numpy, float64)", ref.id)
                model_id = f"{ref.key}#{SentenceTransformerEmbedder.NUMERICS}"
                return numpy_bert.NumpyEmbedder(model_id, directory, _max_length(directory))
        log.info("loading embedder %s (%s)", ref.id, ref.backend)
        return SentenceTransformerEmbedder(ref)


def _reranker(ref: ModelRef) -> Reranker:
    log.info("loading cross-encoder %s (%s)", ref.id, ref.backend)
    with _typed(ref):
        if ref.backend == "flagembedding":
            return FlagCrossEncoder(ref)
        return CrossEncoderReranker(ref)


@contextlib.contextmanager
def _typed(ref: ModelRef) -> Iterator[None]:
    """A model library's own error while loading ``ref`` as :class:`ModelLoadError`, with its type
    and message (the libraries raise many types: OSError, RuntimeError, a safetensors error...).
    Our typed errors (a missing extra, files not found) pass as they are."""
    try:
        yield
    except MusterError:
        raise
    except Exception as exc:
        log.warning("loading model %s failed: %s: %s", ref.id, type(exc).__name__, exc)
        raise ModelLoadError(
            f"cannot load model {ref.id!r} ({type(exc).__name__}: {exc}); the next request tries "
            f"again. If its files are damaged, restore them or {HOW_TO_CHOOSE}"
        ) from exc


MODELS_KEPT = 4  # per kind: a process reads with one or two profiles; more are built again when used
_EMBEDDERS: OncePerKey[ModelRef, Embedder] = OncePerKey(_embedder, MODELS_KEPT)
_RERANKERS: OncePerKey[ModelRef, Reranker] = OncePerKey(_reranker, MODELS_KEPT)
