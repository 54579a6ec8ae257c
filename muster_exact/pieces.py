"""What the embedder is shown of each unit: pieces that fit its window.

A unit is one piece, its whole retrieval text, when the embedder's window
holds it (always with bge-m3's 8,192 word pieces; numbered-log lines with
any model). A longer unit would otherwise be embedded by its start alone
(all-MiniLM-L6-v2 reads 256 word pieces of a 512-token unit), so it is
shown in parts that follow the store's own structure:

* a unit of several records: one piece per record (the part of it inside
  the unit), since a record is what the store itself separates;
* a record, or a one-record unit, longer than the window: overlapping
  windows of the window's size, each starting half a window after the last,
  so every sentence is seen whole by at least one window.

The dense channel scores a unit by pooling its pieces' scores (max: a unit
is as relevant as its most relevant part). Pieces are keyed, like unit
vectors before them, by the SHA-256 of their text: a new record in a store
embeds its own piece and nothing else.

``pieces="unit"`` keeps the old rule (the whole unit, truncated by the
model), for measuring what pieces change.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from muster_exact.cut import Cut, Unit

PieceRule = Literal["records", "unit"]
PIECE_RULES: tuple[PieceRule, ...] = ("records", "unit")


class WindowLike(Protocol):
    size: int

    def pieces(self, texts: list[str]) -> list[int]: ...

    def windows(self, text: str) -> list[tuple[int, int]]: ...


@dataclass(frozen=True)
class Pieces:
    """Piece texts in unit order; ``unit[i]`` owns piece i; ``start[u]`` is unit u's first piece."""

    texts: tuple[str, ...]
    unit: tuple[int, ...]
    start: tuple[int, ...]


def pieces_of(cut: Cut, window: WindowLike | None, rule: PieceRule = "records") -> Pieces:
    """Every unit's pieces. ``window=None`` or ``rule="unit"``: one piece per unit, its whole text."""
    whole = [cut.retrieval_text(u) for u in cut.units]
    texts: list[str] = []
    owner: list[int] = []
    start: list[int] = []
    if window is None or rule == "unit":
        fits = [True] * len(whole)
    else:
        fits = [n <= window.size for n in window.pieces(whole)]
    for unit, text, fit in zip(cut.units, whole, fits, strict=True):
        start.append(len(texts))
        parts = [text] if fit else _split(cut, unit, text, window)  # type: ignore[arg-type]
        texts.extend(parts)
        owner.extend([unit.id] * len(parts))
    return Pieces(tuple(texts), tuple(owner), tuple(start))


def _split(cut: Cut, unit: Unit, text: str, window: WindowLike) -> list[str]:
    if len(unit.records) <= 1:
        return _windowed(text, window)
    store_text = cut.source.text
    spans = []
    for index in unit.records:
        record = cut.source.records[index]
        first, last = max(record.start, unit.start), min(record.end, unit.end)
        if last > first:
            spans.append(store_text[first:last])
    counts = window.pieces(spans)
    parts: list[str] = []
    for span, n in zip(spans, counts, strict=True):
        parts.extend([span] if n <= window.size else _windowed(span, window))
    return parts


def _windowed(text: str, window: WindowLike) -> list[str]:
    return [text[a:b] for a, b in window.windows(text)]
