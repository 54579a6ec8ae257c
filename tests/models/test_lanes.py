"""The embedder's lanes (issue 53, muster_exact/models/lanes.py, decision 0208).

1. A vector is the same bits on one lane and on every lane, and alone or in a build.
2. A build never runs more arithmetic threads than the process has cores: at each forward pass
   the BLAS threads are counted through threadpoolctl, times the passes running at once.
3. Two embeddings at once in one process (a server's request beside a build) share the lanes.
4. The lanes follow the process's share of the cores (its affinity, the usual thread variables).
5. A slow build of fewer than 200 pieces still says what it is doing (by time, not by count).
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from muster_exact import models
from muster_exact.core import progress
from muster_exact.memory import build
from muster_exact.models import lanes
from muster_exact.models.numpy_bert import NumpyBert
from muster_exact.verify.corpora import locomo_stores

pytestmark = pytest.mark.slow

MINILM = models.ModelRef(models.PACKAGED_MINILM)


@pytest.fixture(scope="module")
def texts(data: Path) -> list[str]:
    store = next(locomo_stores(data / "locomo/locomo10.json"))
    return [line for line in store.source.text.splitlines() if line.strip()][:120]


@pytest.fixture
def embedder() -> models.Embedder:
    return models.load_embedder(MINILM)


def bits(vectors: np.ndarray) -> np.ndarray:
    return vectors.view(np.uint32)


def test_a_vector_is_the_same_bits_on_one_lane_and_on_many(embedder, texts, monkeypatch) -> None:
    monkeypatch.setattr(lanes, "LANES", lanes.Lanes(1))
    one = embedder.embed(texts)
    alone = np.vstack([embedder.embed([t]) for t in texts[:20]])
    monkeypatch.setattr(lanes, "LANES", lanes.Lanes(4))  # more lanes than passes need: still the same
    many = embedder.embed(texts)
    assert np.array_equal(bits(one), bits(many))
    assert np.array_equal(bits(one[:20]), bits(alone))


class Counting:
    """NumpyBert.forward, counting at each pass the BLAS threads and the passes running at once."""

    def __init__(self, forward) -> None:
        self.forward = forward
        self.lock = threading.Lock()
        self.running = 0
        self.most_running = 0
        self.most_threads = 0  # BLAS threads times passes running at once, at its highest

    def __call__(self, bert: NumpyBert, ids: np.ndarray) -> np.ndarray:
        blas = max(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")
        with self.lock:
            self.running += 1
            self.most_running = max(self.most_running, self.running)
            self.most_threads = max(self.most_threads, blas * self.running)
        try:
            return self.forward(bert, ids)
        finally:
            with self.lock:
                self.running -= 1


def test_a_build_never_runs_more_blas_threads_than_cores(embedder, texts, monkeypatch) -> None:
    counting = Counting(NumpyBert.forward)
    monkeypatch.setattr(NumpyBert, "forward", lambda bert, ids: counting(bert, ids))
    monkeypatch.setattr(lanes, "LANES", lanes.Lanes(2))  # two lanes even on one core: the rule still holds
    before = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
    build([{"id": f"r{i}", "text": t} for i, t in enumerate(texts)], models="cpu-small", cache=False)
    assert counting.most_running == 2  # the passes did run side by side
    assert counting.most_threads <= 2  # one BLAS thread each
    after = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
    assert after == before  # the process's own setting given back


def test_a_request_and_a_build_in_one_process_share_the_lanes(embedder, texts, monkeypatch) -> None:
    counting = Counting(NumpyBert.forward)
    monkeypatch.setattr(NumpyBert, "forward", lambda bert, ids: counting(bert, ids))
    monkeypatch.setattr(lanes, "LANES", lanes.Lanes(2))
    errors: list[BaseException] = []

    def request() -> None:
        try:
            for text in texts[:30]:
                embedder.embed([text])  # a read's query, one pass each
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    reader = threading.Thread(target=request)
    reader.start()
    embedder.embed(texts)  # the build, on every lane
    reader.join()
    assert not errors
    assert counting.most_running <= 2 and counting.most_threads <= 2


def test_lanes_follow_the_process_share_of_the_cores(monkeypatch) -> None:
    for name in lanes.THREAD_ENVS:
        monkeypatch.delenv(name, raising=False)
    assert lanes.lane_count() == lanes.cores()
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert lanes.lane_count() == 1
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "999")  # the first one set decides, capped by the cores
    assert lanes.lane_count() == lanes.cores()
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "zero")  # not a count: the next one
    assert lanes.lane_count() == 1


def test_an_error_in_one_pass_is_raised_and_the_rest_are_not_started() -> None:
    started: list[int] = []

    def one(index: int):
        def compute() -> None:
            started.append(index)
            if index == 0:
                raise ValueError("pass 0")

        return compute

    with pytest.raises(ValueError, match="pass 0"):
        lanes.Lanes(1).run([one(i) for i in range(50)])
    assert started == [0]
    started.clear()
    with pytest.raises(ValueError, match="pass 0"):
        lanes.Lanes(2).run([one(i) for i in range(500)])  # on two lanes: the rest are cancelled
    assert 0 in started and len(started) < 500
    assert not lanes._ONE_THREAD._users  # the BLAS count given back after the error too


def test_a_slow_small_build_says_what_it_is_doing(texts, monkeypatch, capsys) -> None:
    # A build of under 200 pieces said nothing however long it took; now, by time. A neighbour's
    # load is what makes it slow on a laptop; here the heartbeat is shortened instead.
    monkeypatch.setattr(progress, "HEARTBEAT_S", 0.01)
    records = [{"id": f"r{i}", "text": t} for i, t in enumerate(texts[:40])]
    build(records, models="cpu-small", cache=False, progress=True)
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert lines[0] == "building a memory ..."
    assert any(line.startswith("embed (") and line.endswith("pieces ...") for line in lines)
    assert lines[-1].startswith("building a memory: done in ")


def test_each_pass_is_told_as_it_finishes_not_at_the_end() -> None:
    # Every pass but the first waits until the first one has been told done: told only at the
    # end (as a wait for the first error would), they would each wait out their timeout.
    told = threading.Event()
    waited_out: list[int] = []

    def one(index: int):
        def compute() -> None:
            if index and not told.wait(timeout=10):
                waited_out.append(index)

        return compute

    lanes.Lanes(2).run([one(i) for i in range(6)], lambda index: told.set())
    assert waited_out == []
