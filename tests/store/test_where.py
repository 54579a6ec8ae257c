"""A read narrowed by ``where`` on a real LoCoMo conversation: every record shown matches, the
rest of the rule is the whole store's (a filter that matches everything changes nothing), and
each block carries its records' metadata. The packaged embedder, real SQLite."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest

from muster_exact.core.errors import InputError
from muster_exact.store import Store
from muster_exact.store.where import checked_where, parse_time
from tests.conftest import run_muster
from tests.store.test_store import MODELS, locomo_records

pytestmark = pytest.mark.slow
QUESTIONS = (
    "What did Caroline research?",
    "When did Melanie paint a sunrise?",
    "What is Caroline's identity?",
)


@pytest.fixture(scope="module")
def chat(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    """The first 240 turns of a LoCoMo conversation, each with its session number as metadata."""
    turns, _ = locomo_records(240)
    sessions = {date: n for n, date in enumerate(dict.fromkeys(t["time"] for t in turns), start=1)}
    records = [{**t, "metadata": {"session": sessions[t["time"]]}} for t in turns]
    path = tmp_path_factory.mktemp("where") / "chat.muster"
    with Store.open(path, models=MODELS) as store:
        store.add(records)
    return path, records


def shown_records(context, records: list[dict]) -> list[dict]:  # type: ignore[no-untyped-def]
    by_id = {r["id"]: r for r in records}
    return [by_id[r] for b in context.blocks for r in b.records]


def test_a_speaker_filter_shows_that_speakers_turns_only(chat: tuple[Path, list[dict]]) -> None:
    path, records = chat
    with Store.open(path, models=MODELS) as store:
        for question in QUESTIONS:
            context = store.context(question, where={"speaker": "Caroline"})
            shown = shown_records(context, records)
            assert shown and {r["speaker"] for r in shown} == {"Caroline"}
            lines = [line for line in context.text.splitlines() if line.strip()]
            assert all(re.match(r"^\[[^\]]+\] Caroline: ", line) for line in lines), lines[:3]
            both = store.context(question, where={"speaker": ["Caroline", "Melanie"]})
            assert both == store.context(question)  # every turn matches: nothing changes


def test_a_time_range_and_metadata_narrow_to_those_records(chat: tuple[Path, list[dict]]) -> None:
    path, records = chat
    times = sorted({parse_time(r["time"]) for r in records})
    start, end = times[2], times[4]
    where = {"time": {"from": start.isoformat(), "to": end.date().isoformat()}}
    with Store.open(path, models=MODELS) as store:
        for question in QUESTIONS:
            shown = shown_records(store.context(question, where=where), records)
            assert shown and all(start <= parse_time(r["time"]) <= end for r in shown)
            session = store.context(question, where={"metadata": {"session": 3}})
            assert {r["metadata"]["session"] for r in shown_records(session, records)} == {3}
            assert all(b.metadata == {r: {"session": 3} for r in b.records} for b in session.blocks)
            # Every part given must hold; a value compares as JSON ("3" is not 3).
            assert store.context(question, where={"metadata": {"session": "3"}}).text == ""
            assert store.context(question, where={"speaker": "Nobody"}).text == ""


def test_blocks_carry_metadata_without_a_filter_and_bad_filters_are_one_error(
    chat: tuple[Path, list[dict]],
) -> None:
    path, records = chat
    with Store.open(path, models=MODELS) as store:
        context = store.context(QUESTIONS[0])
        by_id = {r["id"]: r for r in records}
        assert all(b.metadata == {r: by_id[r]["metadata"] for r in b.records} for b in context.blocks)
        for where, message in (
            ({"speakr": "x"}, "where: unknown field 'speakr'"),
            ({"speaker": []}, "where.speaker must be"),
            ({"time": {"from": "2023-06-01", "to": "2023-05-01"}}, "'from' (2023-06-01) is after 'to'"),
            ({"time": {"after": "2023-06-01"}}, "where.time must be"),
            ({"metadata": []}, "where.metadata must be"),
            ("Caroline", "where must be an object"),
        ):
            with pytest.raises(InputError, match=re.escape(message)):
                store.context(QUESTIONS[0], where=where)


def test_the_cli_reads_with_a_filter(chat: tuple[Path, list[dict]]) -> None:
    path, _ = chat
    env = {"MUSTER_MODELS": MODELS}
    read = run_muster(
        "query", "--store", str(path), QUESTIONS[0], "--where", '{"speaker": "Melanie"}', env=env
    )
    assert read.returncode == 0, read.stderr
    lines = [line for line in read.stdout.splitlines() if line.strip()]
    assert lines and all("] Melanie: " in line for line in lines)
    bad = run_muster("query", "--store", str(path), QUESTIONS[0], "--where", "{speaker}", env=env)
    assert bad.returncode == 2 and bad.stderr.startswith("muster: error: --where is not JSON")


def test_record_times_are_read_in_the_forms_the_benchmarks_use() -> None:
    assert parse_time("1:56 pm on 8 May, 2023") == dt.datetime(2023, 5, 8, 13, 56)
    assert parse_time("10:37 am on 27 June, 2023") == dt.datetime(2023, 6, 27, 10, 37)
    assert parse_time("May 8, 2023") == parse_time("8 May 2023") == dt.datetime(2023, 5, 8)
    assert parse_time("3pm on 8 May 2023") == dt.datetime(2023, 5, 8, 15)
    assert parse_time("2023-05-08T14:30:00Z") == dt.datetime(2023, 5, 8, 14, 30)
    assert parse_time("2023-05-08T16:30:00+02:00") == dt.datetime(2023, 5, 8, 14, 30)
    assert parse_time(0) == dt.datetime(1970, 1, 1)
    assert parse_time("yesterday") is None and parse_time("31 June 2023") is None and parse_time(True) is None
    assert checked_where({}) is None and checked_where(None) is None
    day = checked_where({"time": {"to": "2023-05-08"}})
    assert day is not None and day.end == dt.datetime(2023, 5, 8, 23, 59, 59, 999999)
