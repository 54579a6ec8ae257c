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

from muster_exact.derive.cut import Cut, Unit

PieceRule = Literal["records", "unit"]
PIECE_RULES: tuple[PieceRule, ...] = ("records", "unit")


class WindowLike(Protocol):
    size: int

    def pieces(self, texts: list[str]) -> list[int]: ...

    def windows(self, texts: list[str]) -> list[list[tuple[int, int]]]: ...


@dataclass(frozen=True)
class Pieces:
    """Piece texts in unit order; ``unit[i]`` owns piece i; ``start[u]`` is unit u's first piece."""

    texts: tuple[str, ...]
    unit: tuple[int, ...]
    start: tuple[int, ...]


def pieces_of(cut: Cut, window: WindowLike | None, rule: PieceRule = "records") -> Pieces:
    """Every unit's pieces. ``window=None`` or ``rule="unit"``: one piece per unit, its whole text.

    The embedder's tokenizer reads each text once where it can, every text of a kind in one call:
    a unit of one record is asked for its windows at once (one window: it fits); a unit of several
    records is asked how many word pieces it holds, and when it is too long, each record span is
    asked for its windows (one window: the span fits). Windows and counts are the same function
    of the text as before (a text fits exactly when it is one window), so the pieces are too."""
    whole = [cut.retrieval_text(u) for u in cut.units]
    if window is None or rule == "unit":
        return Pieces(tuple(whole), tuple(u.id for u in cut.units), tuple(range(len(whole))))
    lone = [i for i, u in enumerate(cut.units) if len(u.records) <= 1]
    several = [i for i, u in enumerate(cut.units) if len(u.records) > 1]
    counts = window.pieces([whole[i] for i in several])
    fits = {i: n <= window.size for i, n in zip(several, counts, strict=True)}
    # A unit of several records too long for the window: its record spans, each in its windows.
    spans = {i: record_spans(cut, cut.units[i], whole[i]) for i in several if not fits[i]}
    to_window = [whole[i] for i in lone] + [span for parts in spans.values() for span in parts]
    cuts = dict(zip(to_window, window.windows(to_window), strict=True))
    texts: list[str] = []
    owner: list[int] = []
    start: list[int] = []
    for i, (unit, text) in enumerate(zip(cut.units, whole, strict=True)):
        start.append(len(texts))
        if fits.get(i, False):
            parts = [text]
        else:
            parts = [span[a:b] for span in spans.get(i, [text]) for a, b in cuts[span]]
        texts.extend(parts)
        owner.extend([unit.id] * len(parts))
    return Pieces(tuple(texts), tuple(owner), tuple(start))


def record_spans(cut: Cut, unit: Unit, text: str) -> list[str]:
    """The text of each record a unit holds (one record: the unit's retrieval text)."""
    if len(unit.records) <= 1:
        return [text]
    store_text = cut.source.text
    spans = []
    for index in unit.records:
        record = cut.source.records[index]
        first, last = max(record.start, unit.start), min(record.end, unit.end)
        if last > first:
            spans.append(store_text[first:last])
    return spans
