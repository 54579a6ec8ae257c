"""The ONNX Runtime profiles: the packaged MiniLM exported here from its own weights, once, with
vectors that agree with torch's and are cached apart from them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from muster_exact.cache.vectors import VectorCache
from muster_exact.core.optional import Extra
from muster_exact.memory import build
from muster_exact.models import SentenceTransformerEmbedder, load_embedder, profile

TEXTS = [
    "Caroline moved to Lisbon in May.",
    "The chairperson of Fatah is Mahmoud Abbas.",
    "We talked about the project timeline and the budget for the second quarter. " * 5,
]


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("muster-home")


@pytest.mark.parametrize(
    ("name", "lowest_cosine"), [("cpu-small-onnx", 0.9999), ("cpu-small-onnx-int8", 0.95)]
)
def test_an_onnx_profile_embeds_as_torch_does_from_a_local_export(
    home, monkeypatch, name, lowest_cosine
) -> None:
    monkeypatch.setenv("MUSTER_HOME", str(home))
    ref = profile(name).embedder
    onnx = SentenceTransformerEmbedder(ref)  # exports into $MUSTER_HOME/onnx
    exported = sorted(p.relative_to(home) for p in home.rglob("*.onnx"))
    assert exported and not any(p.name.startswith(".export-") for p in home.joinpath("onnx").iterdir())
    torch = load_embedder(profile("cpu-small").embedder)
    a, b = torch.embed(TEXTS), onnx.embed(TEXTS)
    assert a.shape == b.shape
    assert float((a * b).sum(axis=1).min()) >= lowest_cosine
    assert onnx.model_id == f"{ref.id}#{ref.backend}" != torch.model_id
    # A second load reads the export: nothing is exported again.
    before = {p: p.stat().st_mtime_ns for p in home.rglob("*.onnx")}
    SentenceTransformerEmbedder(ref)
    assert {p: p.stat().st_mtime_ns for p in home.rglob("*.onnx")} == before


def test_onnx_vectors_are_cached_apart_from_torch_vectors(home, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("MUSTER_HOME", str(home))
    cache = VectorCache(tmp_path / "vectors.sqlite")
    torch = build(TEXTS, models="cpu-small", cache=cache)
    onnx = build(TEXTS, models="cpu-small-onnx", cache=cache)
    assert torch.embedded > 0 and onnx.embedded == torch.embedded  # none taken from torch's rows
    assert onnx.plan.retrieval is not None and onnx.plan.retrieval.models == "cpu-small-onnx"
    again = build(TEXTS, models="cpu-small-onnx", cache=cache)
    assert again.embedded == 0  # its own rows, read back
    question = "Where did Caroline move?"
    assert again.context(question).text == onnx.context(question).text


def test_without_onnxruntime_the_profile_names_the_extra_to_install(tmp_path) -> None:
    code = (
        "import sys; sys.modules['onnxruntime'] = None\n"
        "from muster_exact.models import MissingExtra, load_embedder, profile\n"
        "try:\n    load_embedder(profile('cpu-small-onnx').embedder)\n"
        "except MissingExtra as e:\n    print(e); sys.exit(3)\n"
    )
    env = {**os.environ, "MUSTER_HOME": str(tmp_path)}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert result.returncode == 3 and str(Extra("onnx")) in result.stdout, result.stdout
    assert not (tmp_path / "onnx").exists()  # nothing half-written


def test_a_folder_in_the_exports_place_without_the_model_is_a_clear_error(tmp_path, monkeypatch) -> None:
    from muster_exact.core.errors import ResourceMissing
    from muster_exact.models import onnx_model

    monkeypatch.setenv("MUSTER_HOME", str(tmp_path))
    ref = profile("cpu-small-onnx").embedder
    onnx_model(ref)
    (directory,) = (tmp_path / "onnx").iterdir()
    for exported in directory.rglob("*.onnx"):
        exported.unlink()  # what an older or damaged export might leave
    with pytest.raises(ResourceMissing, match="remove that folder"):
        onnx_model(ref)
    assert [p.name for p in (tmp_path / "onnx").iterdir()] == [directory.name]  # no temporary left
