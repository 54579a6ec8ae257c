"""A model is built once per process whatever the concurrency (issue 32, item 1).

``functools.lru_cache`` does not serialise a call: threads that ask for a model nobody has loaded
yet all build it, at once (with sentence-transformers and torch, one of them then failed with
"Cannot copy out of meta tensor"). Here threads wait behind a barrier and ask for a fresh model at
the same moment; the model's constructor is slow and counts how often it runs. A load that fails
is a typed error naming the cause, shared by the callers that waited on it, and is not remembered:
the next call loads again.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import pytest

from muster_exact import models
from muster_exact.core.errors import ModelLoadError, ResourceMissing
from muster_exact.models import numpy_bert

THREADS = 8


def fresh_ref() -> models.ModelRef:
    """The packaged MiniLM under a revision no other test names: a model this process never loaded."""
    directory = models.resolve(models.ModelRef(models.PACKAGED_MINILM))
    return models.ModelRef(str(directory), revision=f"test-{uuid.uuid4().hex}")


class SlowModel:
    """Stands in for the numpy embedder: slow to build (as a real load is), counting each build,
    and failing while ``failing`` is set."""

    built: ClassVar[list[int]] = []
    failing = False

    def __init__(self, model_id: str, directory: Path, max_length: int) -> None:
        SlowModel.built.append(threading.get_ident())
        time.sleep(0.3)  # long enough that every thread past the barrier arrives during the build
        if SlowModel.failing:
            raise RuntimeError("Cannot copy out of meta tensor; no data!")
        self.model_id = model_id


@pytest.fixture
def slow_model(monkeypatch: pytest.MonkeyPatch) -> type[SlowModel]:
    monkeypatch.setattr(numpy_bert, "NumpyEmbedder", SlowModel)
    SlowModel.built, SlowModel.failing = [], False
    return SlowModel


def at_once(call: Callable[[], Any]) -> list[Any]:
    """``call`` from THREADS threads released together: each one's result or exception."""
    barrier = threading.Barrier(THREADS)
    results: list[Any] = [None] * THREADS

    def run(i: int) -> None:
        barrier.wait()
        try:
            results[i] = call()
        except Exception as exc:  # collected to be checked by the test
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads), "a loader never returned"
    return results


def test_threads_that_ask_for_a_fresh_model_at_once_build_it_once(slow_model: type[SlowModel]) -> None:
    ref = fresh_ref()
    loaded = at_once(lambda: models.load_embedder(ref))
    assert len(slow_model.built) == 1, f"the model was built {len(slow_model.built)} times at once"
    assert all(model is loaded[0] for model in loaded) and isinstance(loaded[0], SlowModel)
    assert models.load_embedder(ref) is loaded[0]  # and kept: a later call builds nothing
    assert len(slow_model.built) == 1


def test_a_failed_load_is_typed_shared_by_its_waiters_and_retried_next_time(
    slow_model: type[SlowModel],
) -> None:
    ref = fresh_ref()
    slow_model.failing = True
    failed = at_once(lambda: models.load_embedder(ref))
    assert len(slow_model.built) == 1  # the waiters got the load's own failure, not a load each
    for exc in failed:
        assert isinstance(exc, ModelLoadError) and isinstance(exc, ResourceMissing), exc
        assert "Cannot copy out of meta tensor" in str(exc) and ref.id in str(exc), exc
    slow_model.failing = False  # the cause is gone (a file restored, memory freed): the next call loads
    assert isinstance(models.load_embedder(ref), SlowModel)
    assert len(slow_model.built) == 2


def test_a_model_library_error_while_loading_is_a_typed_error(tmp_path: Path) -> None:
    """Real files that are not a model (weights cut off): the library's own error, typed."""
    directory = models.resolve(models.ModelRef(models.PACKAGED_MINILM))
    for item in directory.iterdir():
        if item.name != "model.safetensors":
            (tmp_path / item.name).symlink_to(item)
    (tmp_path / "model.safetensors").write_bytes((directory / "model.safetensors").read_bytes()[:4096])
    with pytest.raises(ModelLoadError) as refused:
        models.load_embedder(models.ModelRef(str(tmp_path)))
    assert f"cannot load model {str(tmp_path)!r}" in str(refused.value)
