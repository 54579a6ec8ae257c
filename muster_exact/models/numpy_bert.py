"""A BERT sentence embedder on numpy: the CPU profile's vectors without torch (issue 29).

The CPU profile defines a vector as the float64 forward pass of the model, mean-pooled over its
word pieces, L2-normalised and rounded to float32 (``models.SentenceTransformerEmbedder``). That
function needs no torch: this module computes it from the model's own ``model.safetensors`` and
``tokenizer.json`` with numpy's float64 matrix products and scipy's ``erf`` (the exact GELU).
The two paths' float64 results differ in their last bits (other kernels, other summation
orders), far below the float32 rounding, so the rounded vectors are almost always the same bits:
on the reproduced benchmark stores 7 of 67,025 pieces have one of their 384 components one
float32 step (ulp) apart, and no pinned context moved (``results/bench/vectors.md``;
``tests/models/test_numpy_bert.py`` holds every component within one step). They share one
``model_id`` and so one vector cache.

Which models it runs (:func:`runs_on_numpy`): a sentence-transformers directory of a plain
``BertModel`` (absolute positions, GELU) followed by mean pooling and a ``Normalize`` module,
as all-MiniLM-L6-v2 is. Anything else keeps the torch path.

Texts are tokenised as sentence-transformers does: stripped, special tokens added, truncated to
the model's ``max_seq_length``, no padding: each forward pass holds texts of one token count, so
no attention mask is needed and a text's vector never depends on its batch.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from muster_exact.core.optional import INSTALL_CPU, require

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

# Word pieces per forward pass (a batch holds texts of one length): about two windows, so a
# layer's working set stays in the CPU's cache. Measured on 320 LoCoMo texts (2 cores, one run):
# 8,192 pieces a pass 1,586 pieces/s, 2,048: 2,048-2,175, 512: 2,494, 256: 2,372-2,647; the
# torch float64 path 3,984. The vectors are the same bits at every batch size.
BATCH_TOKENS = 512
WORDS = "embeddings.word_embeddings.weight"
MODULES = ("sentence_transformers.models.Transformer", "sentence_transformers.models.Pooling",
           "sentence_transformers.models.Normalize")  # fmt: skip


def _json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def runs_on_numpy(directory: Path) -> bool:
    """Whether ``directory`` holds a model this module computes exactly (see the module doc)."""
    try:
        modules = [m["type"] for m in _json(directory / "modules.json")]
        config = _json(directory / "config.json")
        pooling = _json(directory / "1_Pooling" / "config.json")
    except (OSError, ValueError, KeyError, TypeError):
        return False
    mean_only = pooling.get("pooling_mode_mean_tokens") is True and not any(
        pooling.get(f"pooling_mode_{mode}") for mode in ("cls_token", "max_tokens", "mean_sqrt_len_tokens")
    )
    return (
        tuple(modules) == MODULES
        and config.get("architectures") == ["BertModel"]
        and config.get("hidden_act") == "gelu"
        and config.get("position_embedding_type", "absolute") == "absolute"
        and mean_only
        and (directory / "model.safetensors").is_file()
        and (directory / "tokenizer.json").is_file()
    )


class NumpyBert:
    """The forward pass of a sentence-transformers BERT model in float64 (see the module doc)."""

    def __init__(self, directory: Path, max_length: int) -> None:
        require("numpy", INSTALL_CPU)  # a missing one is a typed error naming the install
        import numpy as np

        load_file = require("safetensors.numpy", INSTALL_CPU).load_file
        erf = require("scipy.special", INSTALL_CPU).erf
        tokenizers = require("tokenizers", INSTALL_CPU)

        config = _json(directory / "config.json")
        self._np, self._erf = np, erf
        self.heads = int(config["num_attention_heads"])
        self.layers = int(config["num_hidden_layers"])
        self.eps = float(config["layer_norm_eps"])
        self.dimension = int(config["hidden_size"])
        weights = load_file(str(directory / "model.safetensors"))
        prefix = "bert." if f"bert.{WORDS}" in weights else ""
        # The word embeddings (a third of the weights) stay float32: a pass converts only the rows
        # it reads, the same float64 values (widening is exact), and loading skips the largest copy.
        words = weights.pop(f"{prefix}{WORDS}")
        self._w = {
            # (in, out), C order: ``x @ w`` for each linear layer (astype from the transposed view
            # writes the C-ordered copy in one pass, three times faster than ascontiguousarray).
            name.removeprefix(prefix): (value.T if _linear(name) else value).astype(np.float64, order="C")
            for name, value in weights.items()
            if value.dtype != np.int64  # position_ids
        }
        # Query, key and value in one product per layer (the same dot products, one pass over x).
        for layer in range(self.layers):
            parts = [f"encoder.layer.{layer}.attention.self.{p}" for p in ("query", "key", "value")]
            for kind, axis in (("weight", 1), ("bias", 0)):
                fused = np.concatenate([self._w.pop(f"{p}.{kind}") for p in parts], axis=axis)
                self._w[f"encoder.layer.{layer}.attention.qkv.{kind}"] = np.ascontiguousarray(fused)
        self._words = words
        self._tokenizer = tokenizers.Tokenizer.from_file(str(directory / "tokenizer.json"))
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(max_length=max_length)

    def token_ids(self, texts: list[str]) -> list[list[int]]:
        """Each text's word pieces as the model reads them (stripped, special tokens, truncated)."""
        return [e.ids for e in self._tokenizer.encode_batch([t.strip() for t in texts])]

    def embed_ids(self, ids: list[list[int]], done: Callable[[int], None] | None = None) -> np.ndarray:
        """Unit float32 vectors of texts given as word-piece ids, texts of one length per forward
        pass (``done``: told how many texts each pass finished)."""
        from muster_exact.core.progress import spread
        from muster_exact.models import lanes

        xp = self._np
        out: np.ndarray = xp.empty((len(ids), self.dimension), dtype=xp.float32)
        batches = _batches(ids)
        # Spread, not by length: progress then runs at an even pace (each pass is the same).
        ordered = [batches[index] for index in spread(len(batches))]

        def one_pass(batch: list[int]) -> Callable[[], None]:
            def compute() -> None:
                out[batch] = self.forward(xp.asarray([ids[i] for i in batch], dtype=xp.int64))

            return compute

        # Each pass on a lane of its own, one BLAS thread each (muster_exact.models.lanes).
        told = None if done is None else (lambda index: done(len(ordered[index])))
        lanes.LANES.run([one_pass(b) for b in ordered], told)
        return out

    def forward(self, ids: np.ndarray) -> np.ndarray:
        """(batch, length) ids of one length -> (batch, hidden) unit vectors, float32."""
        xp, w = self._np, self._w
        batch, length = ids.shape
        x = (
            self._words[ids].astype(xp.float64)
            + w["embeddings.position_embeddings.weight"][:length]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = self._norm(x.reshape(batch * length, -1), "embeddings.LayerNorm")
        heads, width = self.heads, self.dimension // self.heads
        scale = 1.0 / xp.sqrt(width)
        for layer in range(self.layers):
            name = f"encoder.layer.{layer}."
            qkv = self._linear(x, name + "attention.qkv").reshape(batch, length, 3, heads, width)
            q, k, v = qkv.transpose(2, 0, 3, 1, 4)  # each (batch, heads, length, width)
            scores = q @ k.transpose(0, 1, 3, 2)
            scores *= scale
            scores -= scores.max(axis=-1, keepdims=True)
            xp.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch * length, -1)
            attended = self._linear(context, name + "attention.output.dense")
            attended += x
            x = self._norm(attended, name + "attention.output.LayerNorm")
            inner = self._linear(x, name + "intermediate.dense")
            gate = inner * (1.0 / xp.sqrt(2.0))  # the exact GELU: x * (1 + erf(x / sqrt 2)) / 2
            self._erf(gate, out=gate)
            gate += 1.0
            gate *= 0.5
            inner *= gate
            out = self._linear(inner, name + "output.dense")
            out += x
            x = self._norm(out, name + "output.LayerNorm")
        pooled = x.reshape(batch, length, -1).mean(axis=1)
        pooled /= xp.maximum(xp.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        result: np.ndarray = pooled.astype(xp.float32)
        return result

    def _linear(self, x: np.ndarray, name: str) -> np.ndarray:
        result: np.ndarray = x @ self._w[name + ".weight"]
        result += self._w[name + ".bias"]
        return result

    def _norm(self, x: np.ndarray, name: str) -> np.ndarray:
        """LayerNorm of ``x``, in place (``x`` is a temporary of the caller)."""
        xp = self._np
        x -= x.mean(axis=-1, keepdims=True)
        variance = xp.einsum("ij,ij->i", x, x)[:, None] / x.shape[-1]
        x /= xp.sqrt(variance + self.eps)
        x *= self._w[name + ".weight"]
        x += self._w[name + ".bias"]
        return x


def _batches(ids: list[list[int]]) -> list[list[int]]:
    """The texts' positions in forward passes: texts of one length, in input order, at most
    ``BATCH_TOKENS`` word pieces a pass (at least one text); by length, shortest first."""
    by_length: dict[int, list[int]] = {}
    for position, pieces in enumerate(ids):
        by_length.setdefault(len(pieces), []).append(position)
    batches: list[list[int]] = []
    for length, members in sorted(by_length.items()):
        step = max(1, BATCH_TOKENS // length)
        batches.extend(members[start : start + step] for start in range(0, len(members), step))
    return batches


def _linear(name: str) -> bool:
    """A linear layer's weight (stored out x in; kept transposed, in x out, for ``x @ W``)."""
    return name.endswith((".query.weight", ".key.weight", ".value.weight", ".dense.weight"))


class NumpyEmbedder:
    """``models.Embedder`` on :class:`NumpyBert`: the same vectors as the torch float64 path, so
    the same ``model_id`` and the same vector cache."""

    def __init__(self, model_id: str, directory: Path, max_length: int) -> None:
        self.model_id = model_id
        self._bert = NumpyBert(directory, max_length)

    def embed(self, texts: list[str]) -> np.ndarray:
        from muster_exact.core import progress

        ids = self._bert.token_ids(texts)
        shown = progress.embedding(len(texts))  # an estimate, then a bar or lines, where shown
        try:
            vectors = self._bert.embed_ids(ids, shown.update)
        finally:
            shown.close()
        return vectors
