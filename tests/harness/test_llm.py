"""The openai client wrapper against a real loopback server: cache, retries, failures, errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.llm import (
    Client,
    Endpoint,
    Failure,
    LLMError,
    Reply,
    ResponseCache,
    parse_json_reply,
    run_bounded,
)
from tests.harness.fake_llm import Behaviour, FakeLLM

MESSAGES = [{"role": "user", "content": "When did Caroline go to the support group?"}]


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MUSTER_TEST_KEY", "test-key")


def client(fake: FakeLLM, tmp_path: Path, **settings: object) -> Client:
    endpoint = Endpoint(
        model="fake-reader", base_url=fake.base_url, api_key_env="MUSTER_TEST_KEY", max_retries=3, **settings
    )
    return Client(endpoint, ResponseCache(tmp_path / "cache.sqlite"))


def test_a_reply_is_cached_and_never_requested_again(tmp_path: Path, key: None) -> None:
    with FakeLLM() as fake:
        first = client(fake, tmp_path).ask(MESSAGES)
        again = client(fake, tmp_path).ask(MESSAGES)  # a new client over the same cache file
        assert isinstance(first, Reply) and isinstance(again, Reply)
        assert first.text == again.text and not first.cached and again.cached
        assert len(fake.log) == 1
        assert first.prompt_tokens > 0 and again.prompt_tokens == first.prompt_tokens


def test_429_and_500_are_retried_with_backoff(tmp_path: Path, key: None) -> None:
    with FakeLLM(Behaviour(fail_nth={1: 429, 2: 500})) as fake:
        reply = client(fake, tmp_path).ask(MESSAGES)
        assert isinstance(reply, Reply)
        assert [entry.status for entry in fake.log] == [429, 500, 200]


def test_retries_exhausted_stop_the_run_with_a_clear_error(tmp_path: Path, key: None) -> None:
    with FakeLLM(Behaviour(fail_nth={n: 500 for n in range(1, 10)})) as fake:
        with pytest.raises(LLMError, match="server error after 3 retries"):
            client(fake, tmp_path).ask(MESSAGES)
        assert len(fake.log) == 4  # the first try and three retries


def test_non_json_and_empty_replies_are_failures_of_that_question(tmp_path: Path, key: None) -> None:
    with FakeLLM(Behaviour(not_json_marker="NOTJSON", empty_marker="EMPTY")) as fake:
        c = client(fake, tmp_path)
        not_json = c.ask([{"role": "user", "content": "judge NOTJSON"}], json_reply=True)
        empty = c.ask([{"role": "user", "content": "answer EMPTY"}])
        fine = c.ask([{"role": "user", "content": "judge this"}], json_reply=True)
        assert isinstance(not_json, Failure) and "not a JSON object" in not_json.reason
        assert isinstance(empty, Failure) and empty.reason == "empty reply"
        assert isinstance(fine, Reply) and parse_json_reply(fine.text) is not None
        # The failed replies are cached too: a rerun does not pay for them again.
        assert isinstance(c.ask([{"role": "user", "content": "answer EMPTY"}]), Failure)
        assert len(fake.log) == 3
        assert c.usage.to_dict()["failed"] == 3


def test_no_api_key_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MUSTER_TEST_KEY", raising=False)
    with FakeLLM() as fake, pytest.raises(LLMError, match="MUSTER_TEST_KEY is not set"):
        client(fake, tmp_path).ask(MESSAGES)


def test_wrong_key_wrong_route_and_unreachable_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeLLM() as fake:
        monkeypatch.setenv("MUSTER_TEST_KEY", "wrong")
        with pytest.raises(LLMError, match="refused the API key"):
            client(fake, tmp_path).ask(MESSAGES)
        monkeypatch.setenv("MUSTER_TEST_KEY", "test-key")
        no_v1 = Endpoint(model="m", base_url=fake.base_url[: -len("/v1")], api_key_env="MUSTER_TEST_KEY")
        with pytest.raises(LLMError, match="usually ends in /v1"):
            Client(no_v1, ResponseCache(tmp_path / "c2.sqlite")).ask(MESSAGES)
        port = fake.server.server_address[1]
    closed = Endpoint(
        model="m", base_url=f"http://127.0.0.1:{port}/v1", api_key_env="MUSTER_TEST_KEY", max_retries=1
    )
    with pytest.raises(LLMError, match="cannot reach"):
        Client(closed, ResponseCache(tmp_path / "c3.sqlite")).ask(MESSAGES)


def test_json_replies_in_fences_are_read() -> None:
    assert parse_json_reply('```json\n{"label": "CORRECT"}\n```') == {"label": "CORRECT"}
    assert parse_json_reply('Sure: {"score": 0.5}') == {"score": 0.5}
    assert parse_json_reply("CORRECT") is None and parse_json_reply("[1, 2]") is None


def test_bounded_concurrency_keeps_at_most_n_in_flight() -> None:
    import threading
    import time

    active, peak, lock = 0, 0, threading.Lock()

    def work(item: int) -> int:
        nonlocal active, peak
        with lock:
            active += 1
            peak = max(peak, active)
        time.sleep(0.01)
        with lock:
            active -= 1
        return item * 2

    results = dict(run_bounded(range(40), work, concurrency=3))
    assert results == {i: 2 * i for i in range(40)} and peak == 3
