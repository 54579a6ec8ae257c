"""The embedder's window: its tokenizer alone (no weights), which cuts a text into the pieces the
model reads whole and counts word pieces."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from muster_exact.models.hub import resolve
from muster_exact.models.profiles import ModelRef, require

# What an embedder reads of a text when its own files do not say (bge-m3's passage length).
DEFAULT_WINDOW = 8192


class Window:
    """How many word pieces an embedder reads, counted with its own tokenizer.

    Read from the model's files (``sentence_bert_config.json``'s
    ``max_seq_length``, else ``tokenizer_config.json``'s ``model_max_length``),
    special tokens included, as the model truncates. Loads only the
    ``tokenizers`` library, never torch, so ``Store.delete`` can ask it too.
    """

    def __init__(self, ref: ModelRef) -> None:
        tokenizers = require("tokenizers")
        directory = resolve(ref)
        self.model_id = ref.id
        self.limit = _max_length(directory)
        self._tokenizer = tokenizers.Tokenizer.from_file(str(directory / "tokenizer.json"))
        self._tokenizer.no_padding()
        self._tokenizer.no_truncation()
        self._special = len(self._tokenizer.encode("").ids)
        self.size = self.limit - self._special  # word pieces of text one sequence holds

    def pieces(self, texts: list[str]) -> list[int]:
        """Word pieces of each text, without special tokens."""
        return [len(e.ids) for e in self._tokenizer.encode_batch(texts, add_special_tokens=False)]

    def fits(self, text: str) -> bool:
        return self.pieces([text])[0] <= self.size

    def windows(self, texts: list[str]) -> list[list[tuple[int, int]]]:
        """For each text, the character spans of overlapping windows of at most ``size`` word
        pieces, each starting about half a window after the last; windows start and end at whole
        words."""
        encodings = self._tokenizer.encode_batch(texts, add_special_tokens=False)
        return [self._windows(text, e) for text, e in zip(texts, encodings, strict=True)]

    def _windows(self, text: str, encoding: Any) -> list[tuple[int, int]]:
        offsets, words = encoding.offsets, encoding.word_ids
        n = len(offsets)
        if n <= self.size:
            return [(0, len(text))]

        def starts_word(i: int) -> bool:
            return i == 0 or i == n or words[i] is None or words[i] != words[i - 1]

        spans: list[tuple[int, int]] = []
        first = 0
        while True:
            end = min(first + self.size, n)
            while end > first + 1 and not starts_word(end):
                end -= 1  # do not end inside a word (a word longer than the window is cut)
            spans.append((offsets[first][0], offsets[end - 1][1]))
            if end == n:
                return spans
            step = first + max(self.size // 2, 1)
            while step < end and not starts_word(step):
                step += 1
            first = step if step < end else end


def _max_length(directory: Path) -> int:
    import json

    for name, key in (
        ("sentence_bert_config.json", "max_seq_length"),
        ("tokenizer_config.json", "model_max_length"),
    ):
        path = directory / name
        if path.is_file():
            value = json.loads(path.read_text(encoding="utf-8")).get(key)
            # tokenizer_config's "no limit" is a huge sentinel (1e30): not a window.
            if isinstance(value, int) and 0 < value <= 1_000_000:
                return value
    return DEFAULT_WINDOW


@functools.lru_cache(maxsize=4)
def load_window(ref: ModelRef) -> Window:
    """The embedder's window for ``ref``, loaded once per process (tokenizer files only)."""
    return Window(ref)
