"""Pieces: what the embedder sees of a unit, cut with the packaged MiniLM's own tokenizer."""

from __future__ import annotations

import numpy as np
import pytest

from muster_exact.channels.dense import DenseChannel
from muster_exact.derive import analyse
from muster_exact.derive.pieces import pieces_of, record_spans
from muster_exact.models import PACKAGED_MINILM, ModelRef, load_window

pytestmark = pytest.mark.fast  # no model, no harness run: `make test-fast`


@pytest.fixture(scope="module")
def window():
    return load_window(ModelRef(PACKAGED_MINILM))


def test_the_window_is_read_from_the_models_files(window) -> None:
    # all-MiniLM-L6-v2's sentence_bert_config says 256, [CLS] and [SEP] included.
    assert window.limit == 256 and window.size == 254
    assert window.pieces(["hello world"]) == [2]


def _turns(n: int) -> str:
    return "\n\n".join(
        f"[D1:{i} | 8 May 2023] Caroline: turn {i} is about painting number {i} and the lake we saw."
        for i in range(n)
    )


def test_a_unit_that_fits_is_one_piece_its_whole_text(window) -> None:
    cut = analyse(_turns(3)).cut
    pieces = pieces_of(cut, window)
    assert pieces.texts == tuple(cut.retrieval_text(u) for u in cut.units)
    assert pieces.start == tuple(range(len(cut.units)))


def test_a_longer_unit_is_cut_into_its_records(window) -> None:
    cut = analyse(_turns(60)).cut
    long_units = [u for u in cut.units if window.pieces([cut.retrieval_text(u)])[0] > window.size]
    assert long_units, "the test needs units longer than the window"
    pieces = pieces_of(cut, window)
    for unit in long_units:
        own = [t for t, owner in zip(pieces.texts, pieces.unit, strict=True) if owner == unit.id]
        assert own == [cut.source.record_text(cut.source.records[r]) for r in unit.records]
    # Every unit owns a contiguous run of pieces, starting where start says.
    assert list(pieces.unit) == sorted(pieces.unit)
    assert all(pieces.unit[s] == u for u, s in enumerate(pieces.start))


def test_a_record_longer_than_the_window_gets_overlapping_windows(window) -> None:
    words = " ".join(f"word{i}" for i in range(300))  # ~900 word pieces, one record within the budget
    cut = analyse(words).cut
    pieces = pieces_of(cut, window)
    assert len(pieces.texts) > 1
    counts = window.pieces(list(pieces.texts))
    assert max(counts) <= window.size
    # Each window starts half a window after the last, so neighbours overlap and the whole text is read.
    text = cut.retrieval_text(cut.units[0])
    assert text.startswith(pieces.texts[0]) and text.endswith(pieces.texts[-1])
    for a, b in zip(pieces.texts, pieces.texts[1:], strict=False):
        assert b.split()[0] in a.split()  # whole words, and the next window starts inside this one
        assert a.split()[-1] in words.split()


def _one_unit_at_a_time(cut, window) -> list[str]:  # type: ignore[no-untyped-def]
    """The rule as the module doc states it, unit by unit: a unit that fits is one piece; else its
    record spans, each whole when it fits, else in windows."""
    out: list[str] = []
    for unit in cut.units:
        text = cut.retrieval_text(unit)
        if window.pieces([text])[0] <= window.size:
            out.append(text)
            continue
        for span in record_spans(cut, unit, text):
            if window.pieces([span])[0] <= window.size:
                out.append(span)
            else:
                out.extend(span[a:b] for a, b in window.windows([span])[0])
    return out


def test_the_tokenizer_reads_each_text_once_in_two_calls_per_build(window) -> None:
    # Short turns packed several to a unit, every fifth one long: units too long for the window,
    # record spans to count, and spans still too long to cut into windows.
    turns = [" ".join(f"w{i}x{j}" for j in range(80 if i % 5 == 0 else 25)) for i in range(60)]
    long_turns = "\n\n".join(turns)
    cut = analyse(long_turns).cut
    assert sum(len(u.records) > 1 for u in cut.units) > 5
    assert max(window.pieces([cut.source.record_text(r) for r in cut.source.records])) > window.size
    calls = {"pieces": 0, "windows": 0}
    read: list[str] = []

    class Counting:
        size = window.size

        def pieces(self, texts: list[str]) -> list[int]:
            calls["pieces"] += 1
            read.extend(texts)
            return window.pieces(texts)

        def windows(self, texts: list[str]) -> list[list[tuple[int, int]]]:
            calls["windows"] += 1
            read.extend(texts)
            return window.windows(texts)

    pieces = pieces_of(cut, Counting())
    assert len(pieces.texts) > 2 * len(cut.units) > 20  # many units cut, into several pieces each
    assert calls == {"pieces": 1, "windows": 1}
    # No text is tokenized twice, and what is read is at most the units and their record spans.
    assert len(read) == len(set(read))
    assert sum(map(len, read)) < 2 * sum(len(cut.retrieval_text(u)) for u in cut.units)
    assert list(pieces.texts) == _one_unit_at_a_time(cut, window)


def test_rule_unit_and_no_window_keep_one_piece_per_unit(window) -> None:
    cut = analyse(_turns(60)).cut
    whole = tuple(cut.retrieval_text(u) for u in cut.units)
    assert pieces_of(cut, window, "unit").texts == whole
    assert pieces_of(cut, None).texts == whole


def test_dense_pooling_max_and_mean_over_pieces() -> None:
    class Fixed:
        model_id = "fixed"

        def embed(self, texts: list[str]) -> np.ndarray:
            return np.array([[1.0, 0.0]], dtype=np.float32)

    # Unit 0 has pieces scoring 0.2 and 0.8; unit 1 one piece at 0.5; unit 2 pieces 0.1, 0.1, 0.4.
    vectors = np.array([[0.2, 0], [0.8, 0], [0.5, 0], [0.1, 0], [0.1, 0], [0.4, 0]], dtype=np.float32)
    starts = [0, 2, 3]
    top = DenseChannel(vectors, Fixed(), starts, "max")
    np.testing.assert_allclose(top.scores("q"), [0.8, 0.5, 0.4], rtol=1e-6)
    assert top.propose("q", 3).units == (0, 1, 2)
    mean = top.pooled("mean")
    np.testing.assert_allclose(mean.scores("q"), [0.5, 0.5, 0.2], rtol=1e-6)
    assert mean.propose("q", 3).units == (0, 1, 2)  # a tie breaks by position


def test_dense_scores_are_float64_sums_rounded_to_float32() -> None:
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((300, 384)).astype(np.float32)
    vectors[150] = vectors[40]  # one text stored twice: the copies tie, and the earlier leads
    query = rng.standard_normal(384).astype(np.float32)

    class Fixed:
        model_id = "fixed-384"  # query vectors are shared per process by (model, query)

        def embed(self, texts: list[str]) -> np.ndarray:
            return query[None, :]

    channel = DenseChannel(vectors, Fixed())
    scores = channel.scores("q")
    expected = (vectors.astype(np.float64) @ query.astype(np.float64)).astype(np.float32)
    assert scores.dtype == np.float32 and np.array_equal(scores, expected)
    assert scores[40] == scores[150]
    ranked = channel.propose("q", 300).units
    assert ranked.index(40) == ranked.index(150) - 1
