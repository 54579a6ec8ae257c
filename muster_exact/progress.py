"""Progress bars for long builds, off unless asked for.

The library never prints, so a bar is shown only inside ``with shown(True):``
(``build(progress=True)``, the CLI on a terminal), only on a terminal (tqdm's
``disable=None``), and only where tqdm is installed (it comes with
sentence-transformers). The stages that take long on a big store report
through :func:`bar`: the per-text analyses of the memo (token counts, BM25
documents, entities, word-piece windows), and the embedder, which shows its
own bar over its batches (so its batches, and its vectors, stay those of one
call).
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
from collections.abc import Iterator
from typing import Any

_SHOWN: contextvars.ContextVar[bool] = contextvars.ContextVar("muster_progress", default=False)
# Fewer texts than this are analysed in one call and with no bar: it would only flicker.
SHOWN_FROM = 5_000
CHUNK = 2_000


@contextlib.contextmanager
def shown(enabled: bool) -> Iterator[None]:
    """Within this block, long stages show a bar (where stderr is a terminal)."""
    token = _SHOWN.set(bool(enabled))
    try:
        yield
    finally:
        _SHOWN.reset(token)


def enabled() -> bool:
    """Whether a bar is shown here: asked for, and stderr is a terminal (the embedder's
    ``show_progress_bar``, which would draw on a pipe too)."""
    return _SHOWN.get() and sys.stderr.isatty() and _tqdm() is not None


class Silent:
    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


def bar(total: int, desc: str) -> Any:
    """A bar of ``total`` steps (``update``, ``close``), or one that shows nothing."""
    tqdm = _tqdm() if _SHOWN.get() and total >= SHOWN_FROM else None
    if tqdm is None:
        return Silent()
    # disable=None: no bar when stderr is not a terminal (a log file, CI, a pipe).
    return tqdm(total=total, desc=desc, unit="text", disable=None, leave=False)


def _tqdm() -> Any:
    try:
        from tqdm import tqdm  # type: ignore[import-untyped]
    except ImportError:
        return None
    return tqdm
