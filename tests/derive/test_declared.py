"""Declared record input (muster_exact.derive.declared): the prefix is read off and kept, the records are
given back byte for byte, cut one unit per record in the declared order, supersession off; bad
input is one typed error. Tokenizer only: no model is loaded here."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from muster_exact import DeclaredError, InputError, SourceOrder, derive
from muster_exact.derive import declared
from muster_exact.text.serials import lex

pytestmark = pytest.mark.fast  # no model, no harness run: `make test-fast`

# Every style the lexer reads, as a producer might write it (its own spacing kept).
STYLED: dict[str, Any] = {
    "step": lambda n, gap: f"Step {n}:{gap}",
    "hash": lambda n, gap: f"#{n}{gap or ' '}",
    "paren": lambda n, gap: f"({n}){gap}",
    "bracket": lambda n, gap: f"[{n}]{gap}",
    "dot": lambda n, gap: f"{n}.{gap or ' '}",
}
# Bodies: any text with something that shows, odd white space and line ends included; a body
# that begins with a space would run into the prefix's own spaces, so it begins with a letter.
body = st.builds(
    lambda first, rest: first + rest,
    st.characters(categories=("L", "So")),
    st.lists(
        st.one_of(
            st.characters(codec="utf-8", exclude_categories=("Cs",)),
            st.sampled_from([" ", "\t", "\n", "\r\n", "\r", "\u00a0", "\u2028", "\u200b", "\ufeff"]),
        ),
        max_size=40,
    ).map("".join),
)
marked = st.builds(
    lambda style, n, gap, text: (style, n, STYLED[style](n, gap) + text, text),
    st.sampled_from(sorted(STYLED)),
    st.integers(0, 10**20),
    st.sampled_from(["", " ", "  ", "   "]),
    body,
)
unmarked = st.builds(lambda text: (None, None, text, text), body.filter(lambda t: lex(t) is None))
entry = st.one_of(marked, unmarked)
metadata = st.dictionaries(
    st.sampled_from(["speaker", "time", "id", "metadata", "role", "x-ü"]),
    st.one_of(st.text(max_size=8), st.integers(), st.none(), st.lists(st.integers(), max_size=3)),
    max_size=4,
)


def as_record(entry: tuple[Any, ...], fields: dict[str, Any], kind: int) -> Any:
    """A string (kind 0), an object with 'text' (1) or with 'content' (2), its fields around it."""
    text = entry[2]
    if kind == 0:
        return text
    key = "text" if kind == 1 else "content"
    return {**fields, key: text, "after": "kept"} if fields else {key: text}


arrays = st.lists(st.tuples(entry, metadata, st.integers(0, 2)), min_size=1, max_size=12).map(
    lambda rows: ([as_record(e, f, k) for e, f, k in rows], [e for e, _, _ in rows])
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(arrays)
def test_roundtrip_gives_the_records_back_byte_for_byte(generated: tuple[list[Any], list[Any]]) -> None:
    records, entries = generated
    given_json = json.dumps(records, ensure_ascii=False)
    ordered = declared.read(records)
    back = ordered.roundtrip()
    assert back == records
    assert json.dumps(back, ensure_ascii=False).encode("utf-8") == given_json.encode("utf-8")
    assert json.dumps(records, ensure_ascii=False) == given_json  # reading changed nothing given
    for (style, number, text, _), got in zip(entries, ordered.records, strict=True):
        assert got.prefix + got.body == text
        assert (got.style, got.serial) == (style, number)
        assert (got.prefix == "") == (style is None)
    back[0] = "changed"  # a copy: the memory's records stay as given
    assert ordered.roundtrip() == records


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(arrays)
def test_one_unit_per_record_in_the_declared_order_every_version_kept(
    generated: tuple[list[Any], list[Any]],
) -> None:
    records, _ = generated
    ordered = declared.read(records)
    derived = declared.analyse(ordered)
    plan, cut = derived.plan, derived.cut
    assert (plan.branch, plan.order, plan.supersession) == ("numbered_log", "stored", False)
    assert [u.records for u in cut.units] == [(i,) for i in range(len(records))]  # short bodies: whole
    assert cut.serial_order == tuple(range(len(cut.units)))  # the array's order, whatever the serials
    assert [u.serial for u in cut.units] == list(ordered.serials)
    for unit, record in zip(cut.units, ordered.records, strict=True):
        shown = record.body.replace("\r\n", "\n").replace("\r", "\n")
        assert cut.text(unit) == cut.retrieval_text(unit) == shown  # the body, the prefix set aside


def test_gaps_resets_and_repeats_neither_sort_nor_merge() -> None:
    records = [
        "Step 9: The CEO of Acme is Ann Lee.",
        "Step 1: The CEO of Acme is Bo Li.",  # a reset
        "Step 1: The CEO of Acme is Cy Wu.",  # a repeat
        "Step 40: The weather in Oslo is cold.",  # a gap
        "no marker at all",
    ]
    derived = declared.analyse(declared.read(records))
    cut = derived.cut
    assert [cut.text(u) for u in cut.units] == [r.split(": ", 1)[-1] for r in records]
    assert cut.serial_order == (0, 1, 2, 3, 4)
    assert cut.parents[cut.units[0].parent] == (0, 1, 2)  # one slot, three versions, all kept
    assert derived.plan.stats.slots_with_versions == 1


def test_the_declaration_is_what_keeps_the_order() -> None:
    # Serials out of order that automatic detection reads as a log (continuous but for one) and
    # sorts; declared, the same records stay where they stand.
    records = [f"Step {n}: The item {n} is here." for n in (*range(2, 40), 1)]
    assert derive(records).order == "serial"
    cut = declared.analyse(declared.read(records)).cut
    assert cut.serial_order == tuple(range(len(records)))
    assert cut.text(cut.units[-1]) == "The item 1 is here."


def test_the_lexer_reads_an_integer_ending_within_32_code_points() -> None:
    assert declared.read(["Step " + "9" * 27 + ": x"]).records[0].serial == int("9" * 27)
    assert declared.read(["Step " + "9" * 28 + ": x"]).records[0].serial is None
    assert declared.read(["ü" * 0 + "#" + "1" * 31 + " x"]).records[0].serial == int("1" * 31)
    assert declared.read(["#" + "1" * 32 + " x"]).records[0].prefix == ""


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: SourceOrder("seriall"), "unknown declared record format 'seriall'; did you mean serial?"),
        (lambda: SourceOrder(3), "is a name (serial), not int"),  # type: ignore[arg-type]
        (lambda: declared.read({"text": "x"}), "a list of records"),
        (lambda: declared.read("Step 1: x"), "a list of records"),
        (lambda: declared.read([]), "is empty"),
        (lambda: declared.read(["Step 3:   "]), "record 0 is only a serial prefix ('Step 3:')"),
        (lambda: declared.envelope([], "f.json"), "f.json: a declared-record envelope is a JSON object"),
        (lambda: declared.envelope({"format": "serial"}, "f"), "missing 'records'"),
        (lambda: declared.envelope({"format": "serial", "records": [], "x": 1}, "f"), "unknown 'x'"),
        (lambda: declared.envelope({"format": "csv", "records": ["a"]}, "f"), "f: unknown declared"),
        (lambda: declared.envelope({"format": "serial", "records": "a"}, "f"), "'records' is a list"),
        (lambda: declared.envelope({"format": "serial", "records": {"a": 1}}, "f"), "not dict"),
        (lambda: declared.declaration(["x"], None, "serial"), "declared_order is a SourceOrder, not str"),
        (lambda: declared.analyse(declared.read(["x"]), preset="beam.u10"), "native mode only"),
        (lambda: declared.analyse(declared.read(["x"]), mode="exact"), "native mode only"),
    ],
)
def test_bad_declared_input_is_one_typed_error(call: Any, message: str) -> None:
    with pytest.raises(DeclaredError) as raised:
        call()
    assert message in str(raised.value)
    assert isinstance(raised.value, InputError)  # the CLI's exit 2, the servers' 422


def test_a_bad_record_is_the_record_rules_error() -> None:
    with pytest.raises(InputError, match="record 1 has no text"):
        declared.read(["Step 1: x", {"speaker": "a"}])


def test_without_a_declaration_nothing_changes() -> None:
    assert declared.declaration(["Step 1: x"], None, None) is None
    ordered = declared.declaration(["Step 1: x"], None, SourceOrder())
    assert ordered is not None and ordered.records[0].body == "x"
