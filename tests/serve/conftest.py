"""A LoCoMo store shared by the inspector's tests, built and read once per session, and a server
of a copy of it per test module."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.report import inspector
from muster_exact.store import Store
from tests.serve.test_http import TOKEN, Server


@pytest.fixture(scope="session")
def locomo_store(data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store of the first LoCoMo conversation's first turns (each with its session as
    metadata), read once so its vectors are in the file. Copy it (:func:`copied`) to change it."""
    path = tmp_path_factory.mktemp("locomo-store") / "locomo.muster"
    with Store.open(path, models="cpu-small") as store:
        store.add(inspector.locomo_records(data))
        store.memory()
    return path


def copied(store: Path, folder: Path) -> Path:
    """A copy of a closed store file, for a test that writes."""
    target = folder / store.name
    shutil.copyfile(store, target)
    return target


@pytest.fixture(scope="module")
def served(locomo_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """``muster http --token`` over a copy of :func:`locomo_store`, for one test module."""
    store = copied(locomo_store, tmp_path_factory.mktemp("locomo-served"))
    running = Server(store, "--token", TOKEN)
    yield running
    running.stop()
