from __future__ import annotations

import os
import subprocess
import sys

import pytest
import tiktoken

from muster_exact.text import tokens

pytestmark = pytest.mark.fast  # no model, no harness run: `make test-fast`

SAMPLES = [
    "hello world",
    "The chairperson of Fatah is Mahmoud Abbas.\n\n12. Step 3: done",
    "Ünïcödé — ✓ 日本語 emoji 🎉 and   spaces\t\ttabs\r\nCRLF's we'll I'M",
    "123456789 1,234.56 <|endoftext|> code: def f(x):\n    return x**2\n\n\n",
]


def test_hello_world_ids() -> None:
    assert tokens.encoding().encode_ordinary("hello world") == [15339, 1917]


def test_equal_to_tiktoken_registry_offline(monkeypatch) -> None:
    prepared = tokens.prepare()
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(prepared.parent))
    reference = tiktoken.get_encoding("cl100k_base")
    ours = tokens.encoding()
    for text in SAMPLES:
        assert ours.encode_ordinary(text) == reference.encode_ordinary(text)
    assert ours.n_vocab == reference.n_vocab


def test_count_many_matches_count() -> None:
    texts = [f"record {i}: " + "word " * i for i in range(200)]
    assert tokens.count_many(texts) == [tokens.count(t) for t in texts]


def test_prepare_is_idempotent_and_writes_the_tiktoken_cache_name(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("MUSTER_HOME", str(tmp_path))
    first = tokens.prepare()
    mtime = first.stat().st_mtime_ns
    assert tokens.prepare() == first and first.stat().st_mtime_ns == mtime
    names = sorted(p.name for p in first.parent.iterdir())
    assert names == sorted(["cl100k_base.tiktoken", "9b5ad71b2ce5302211f9c61530b329a4922fc6a4"])


def _load_in_subprocess(home: str) -> subprocess.CompletedProcess[str]:
    # bpe_openai is blocked so only the prepared file could serve the encoding.
    code = (
        "import sys; sys.modules['bpe_openai'] = None\n"
        "from muster_exact.text import tokens\n"
        "try:\n    tokens.count('x')\nexcept Exception as e:\n"
        "    print(type(e).__name__, e); sys.exit(3)\n"
    )
    env = {**os.environ, "MUSTER_HOME": home}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)


def test_missing_file_says_what_to_run(tmp_path) -> None:
    result = _load_in_subprocess(str(tmp_path))
    assert result.returncode == 3
    assert "ResourceMissing" in result.stdout and "muster fetch" in result.stdout


def test_corrupt_prepared_file_is_refused(tmp_path) -> None:
    target = tmp_path / "tiktoken" / "cl100k_base.tiktoken"
    target.parent.mkdir(parents=True)
    target.write_bytes(b"not a tokenizer\n")
    result = _load_in_subprocess(str(tmp_path))
    assert result.returncode == 3 and "SHA-256" in result.stdout


def test_prepared_file_alone_suffices(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("MUSTER_HOME", str(tmp_path))
    tokens.prepare()
    result = _load_in_subprocess(str(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr


def test_fetch_writes_the_tokenizer_and_says_the_splitter_needs_no_file(tmp_path) -> None:
    from tests.conftest import run_muster

    done = run_muster("fetch", env={"MUSTER_HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "tiktoken" / "cl100k_base.tiktoken").is_file()
    assert "sentence splitter: rules in the library" in done.stdout and "no file to fetch" in done.stdout
