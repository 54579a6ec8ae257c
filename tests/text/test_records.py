from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from muster_exact import InputError, from_records, from_text, read_file
from muster_exact.text.records import blocks

pytestmark = pytest.mark.fast  # no model, no harness run: `make test-fast`


def test_blocks_split_on_blank_and_whitespace_lines() -> None:
    text = "a\nb\n\n  \n\nc\n \n\n\nd  \n"
    spans = blocks(text)
    assert [text[s:e] for s, e in spans] == ["a\nb", "c", "d  "]


def test_text_keeps_every_character_and_normalises_newlines() -> None:
    source = from_text("\ufeffone\r\ntwo\r\n\r\nthree")
    assert source.text == "one\ntwo\n\nthree"
    assert [source.record_text(r) for r in source.records] == ["one\ntwo", "three"]


def test_records_render_header_and_keep_body_offsets() -> None:
    source = from_records(
        [
            {"speaker": "Caroline", "time": "2023-05-08", "text": "12. I moved to Lisbon."},
            "plain string",
            {"role": "user", "content": "hi", "id": 7},
        ]
    )
    assert source.layout == "records"
    assert source.text == "[2023-05-08] Caroline: 12. I moved to Lisbon.\n\nplain string\n\nuser: hi"
    assert [source.body(r) for r in source.records] == ["12. I moved to Lisbon.", "plain string", "hi"]
    assert source.records[2].source_id == "7"


@pytest.mark.parametrize(
    ("items", "message"),
    [
        ([], "empty input"),
        ([{"speaker": "a"}], "record 0 has no text"),
        (["ok", {"text": 3}], "record 1: 'text' must be a string"),
        (["ok", "   "], "record 1 has empty text"),
        ([1], "record 0 is a int"),
    ],
)
def test_bad_records(items, message) -> None:
    with pytest.raises(InputError, match=message):
        from_records(items)


def test_empty_text() -> None:
    with pytest.raises(InputError, match="empty input"):
        from_text(" \n\n\t")


def test_read_file_kinds(tmp_path) -> None:
    (tmp_path / "a.txt").write_text("1. x\n2. y\n", encoding="utf-8")
    (tmp_path / "a.jsonl").write_text('{"text": "x"}\n\n"y"\n', encoding="utf-8")
    (tmp_path / "a.json").write_text(json.dumps([{"text": "x"}]), encoding="utf-8")
    assert read_file(tmp_path / "a.txt").layout == "text"
    assert len(read_file(tmp_path / "a.jsonl").records) == 2
    assert read_file(tmp_path / "a.json").layout == "records"


def test_read_file_errors(tmp_path) -> None:
    (tmp_path / "latin1.txt").write_bytes("café".encode("latin-1"))
    (tmp_path / "bin.dat").write_bytes(b"\x89PNG\x00\x00")
    (tmp_path / "obj.json").write_text('{"text": "x"}', encoding="utf-8")
    (tmp_path / "bad.jsonl").write_text('{"text": "x"}\n{oops\n', encoding="utf-8")
    cases = {
        tmp_path / "latin1.txt": "not UTF-8 text",
        tmp_path / "bin.dat": "binary file",
        tmp_path / "obj.json": "expected a JSON array",
        tmp_path / "bad.jsonl": "bad.jsonl:2: not valid JSON",
        tmp_path / "missing.txt": "no such file",
        tmp_path: "is a directory",
    }
    for path, message in cases.items():
        with pytest.raises(InputError, match=message):
            read_file(path)


@given(st.lists(st.sampled_from(["a", "b c", "", " ", "\t", "  x  ", "\u3000y"]), max_size=30))
def test_blocks_equal_a_line_by_line_reading(lines: list[str]) -> None:
    text = "\n".join(lines)
    expected, current = [], None
    pos = 0
    for line in lines:
        if line.strip():
            current = [pos, pos + len(line)] if current is None else [current[0], pos + len(line)]
        elif current is not None:
            expected.append(tuple(current))
            current = None
        pos += len(line) + 1
    if current is not None:
        expected.append(tuple(current))
    assert blocks(text) == expected


# One text file, one set of records: `muster query FILE` reads it with read_file, `muster add --store`
# with read_records_file; both split it into blocks by the same rule.
SPLIT_ALIKE = {
    "crlf": (b"Ana adopted a cat.\r\nIts name is Miso.\r\n\r\nBo moved to Lisbon.\r\n", None),
    "cr": (b"Ana adopted a cat.\r\rBo moved to Lisbon.\r", None),
    "whitespace line": (b"Ana adopted a cat.\nIts name is Miso.\n \t \nBo moved to Lisbon.\n", None),
    "invisible line": ("Ana adopted a cat.\nIts name is Miso.\n\u200b \nBo moved to Lisbon.".encode(), None),
    "leading spaces": (b"  Ana adopted a cat.\nIts name is Miso.\n\n\n\nBo moved to Lisbon.  \n", "  Ana"),
}


@pytest.mark.parametrize("name", list(SPLIT_ALIKE))
def test_a_text_file_gives_query_and_add_the_same_records(tmp_path, name: str) -> None:
    from io import BytesIO

    from muster_exact.store import read_records_file

    content, first = SPLIT_ALIKE[name]
    path = tmp_path / "notes.txt"
    path.write_bytes(content)
    source = read_file(path)
    read = [source.record_text(r) for r in source.records]
    assert len(read) == 2 and read[0].startswith(first or "Ana") and read[1].startswith("Bo moved")
    assert "\r" not in "".join(read)
    assert read_records_file(path) == read
    assert read_records_file(None, BytesIO(content)) == read  # standard input, no name to go by
