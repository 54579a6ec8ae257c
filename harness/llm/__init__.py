"""Readers and judges through the ``openai`` client, with a response cache and retries.

Any OpenAI-compatible endpoint works (OpenAI, vLLM, Ollama, llama.cpp
server): the config names the base URL, the model, the environment variable
that holds the API key, and the sampling settings. Three promises:

* **A request answered once is never sent again.** Every reply is written
  to a SQLite cache, keyed by the SHA-256 of the full request (endpoint and
  body), the moment it arrives. A resumed or repeated run reads it from
  there; only a request cut off in flight (it has no reply to keep) is sent
  again.
* **Transient failures are retried** with exponential backoff: HTTP 429,
  5xx, timeouts and dropped connections (the client's own retry loop, which
  honours ``Retry-After``).
* **One question's failure is recorded, not fatal.** A reply that is empty,
  not JSON where JSON is required, or refused by the server for that request
  (400, 413, 422) becomes a :class:`Failure` for that question. Only what
  would fail every question stops the run, with one clear error: no API key,
  a base URL that cannot be reached, a wrong key or model.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from muster_exact.cache.files import use_wal
from muster_exact.core.errors import MusterError

log = logging.getLogger(__name__)

T = TypeVar("T")
NO_KEY = "no-key-needed"  # what a local server without authentication is sent


class LLMError(MusterError):
    """The endpoint cannot answer any request as configured (key, URL, model)."""


@dataclass(frozen=True)
class Endpoint:
    """Where and how to ask: the reader's or the judge's settings (also their config schema, with
    the fields harness.config adds)."""

    model: str
    # None: the openai client's default (api.openai.com); vLLM/Ollama/llama.cpp: http://HOST:PORT/v1
    base_url: str | None = None
    # The variable holding the key; None or "": a local server without a key.
    api_key_env: str | None = "OPENAI_API_KEY"
    temperature: float = 0.0
    max_tokens: int = 256
    seed: int | None = 0
    timeout_s: float = 60.0
    max_retries: int = 6
    concurrency: int = 4

    def describe(self) -> dict[str, Any]:
        """What the run record keeps (never the key itself)."""
        return {**dataclasses.asdict(self), "api_key_env": self.api_key_env or None}


@dataclass(frozen=True)
class Reply:
    text: str
    request_sha256: str
    prompt_tokens: int
    completion_tokens: int
    cached: bool


@dataclass(frozen=True)
class Failure:
    """A question the endpoint could not answer usefully; recorded in its line, counted in the tables."""

    reason: str
    request_sha256: str


@dataclass
class Usage:
    """Requests and tokens of one stage, for the run record (thread-safe)."""

    sent: int = 0
    cached: int = 0
    failed: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def count(self, outcome: Reply | Failure) -> None:
        with self._lock:
            if isinstance(outcome, Failure):
                self.failed += 1
                return
            if outcome.cached:
                self.cached += 1
            else:
                self.sent += 1
            self.prompt_tokens += outcome.prompt_tokens
            self.completion_tokens += outcome.completion_tokens

    def to_dict(self) -> dict[str, int]:
        return {
            "requests_sent": self.sent,
            "requests_cached": self.cached,
            "failed": self.failed,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
        }


class CacheError(MusterError):
    """``paths.llm_cache`` names a file that is not a readable response cache."""


# PRAGMA application_id of a response cache ("MSLC"): a file without it is not opened as one.
CACHE_APPLICATION_ID = 0x4D534C43
REPLIES_COLUMNS = ("key", "request", "reply", "prompt_tokens", "completion_tokens", "created")
REPLIES_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS replies ("
    "key TEXT PRIMARY KEY, request TEXT NOT NULL, reply TEXT NOT NULL, "
    "prompt_tokens INTEGER, completion_tokens INTEGER, created REAL)"
)


class ResponseCache:
    """Replies by request SHA-256 in one SQLite file; each reply committed as it arrives.

    Opens only its own files: a new or empty one, one marked with :data:`CACHE_APPLICATION_ID`,
    or one from before that mark that holds nothing but the ``replies`` table. Anything else
    (another application's database, a damaged file) is refused before a byte of it is written.
    """

    def __init__(self, path: Path) -> None:
        adopt = _check_cache_file(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        self._path = path
        self._lock = threading.Lock()
        with self._sqlite("open"):
            self._db = sqlite3.connect(path, check_same_thread=False, timeout=30)
            if adopt:
                self._db.execute(f"PRAGMA application_id = {CACHE_APPLICATION_ID}")
            use_wal(self._db, wait_s=30)
            self._db.execute(REPLIES_SCHEMA)
            self._db.commit()

    def get(self, key: str) -> tuple[str, int, int] | None:
        with self._lock, self._sqlite("read"):
            row = self._db.execute(
                "SELECT reply, prompt_tokens, completion_tokens FROM replies WHERE key = ?", (key,)
            ).fetchone()
        return None if row is None else (row[0], int(row[1] or 0), int(row[2] or 0))

    def put(self, key: str, request: str, reply: str, prompt_tokens: int, completion_tokens: int) -> None:
        with self._lock, self._sqlite("write"):
            self._db.execute(
                "INSERT OR REPLACE INTO replies VALUES (?, ?, ?, ?, ?, ?)",
                (key, request, reply, prompt_tokens, completion_tokens, time.time()),
            )
            self._db.commit()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextlib.contextmanager
    def _sqlite(self, doing: str) -> Iterator[None]:
        """SQLite's errors (a damaged page, a full disk) as one line naming the cache."""
        try:
            yield
        except sqlite3.Error as exc:
            raise CacheError(
                f"cannot {doing} the LLM response cache {self._path} ({exc}); free space or fix the "
                "file, or point paths.llm_cache at a new file (replies are then asked again)"
            ) from None


def _check_cache_file(path: Path) -> bool:
    """Whether ``path`` may be opened as the cache, read without writing; True when it is new
    or from before the application id (the mark is then set)."""
    if not path.exists():
        return True
    refuse = f"point paths.llm_cache at a new file, or move {path} away"
    if not path.is_file():
        raise CacheError(f"{path} is not a file, so not an LLM response cache; {refuse}")
    if path.stat().st_size == 0:
        return True  # an empty file is an empty database to SQLite
    application_id, user_version, tables = _read_only(path, refuse)
    if application_id == CACHE_APPLICATION_ID:
        return False
    legacy = set(tables) == {"replies"} and tables["replies"] == REPLIES_COLUMNS
    if application_id or user_version or (tables and not legacy):
        found = ", ".join(sorted(tables)) or "no tables"
        raise CacheError(
            f"{path} is not an LLM response cache: another application's SQLite database "
            f"(application_id {application_id}, user_version {user_version}, {found}); {refuse}"
        )
    return True


def _read_only(path: Path, refuse: str) -> tuple[int, int, dict[str, tuple[str, ...]]]:
    """Application id, user version and table name -> column names, read through an immutable
    SQLite connection: no lock, no -wal or -shm file beside it, not a byte written. The header is
    never read with ``open()``: closing any descriptor of the file would drop the POSIX locks this
    process's live connections hold on it."""
    uri = f"{path.resolve().as_uri()}?mode=ro&immutable=1"
    try:
        db = sqlite3.connect(uri, uri=True)
        try:
            application_id = int(db.execute("PRAGMA application_id").fetchone()[0])
            user_version = int(db.execute("PRAGMA user_version").fetchone()[0])
            names = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            tables = {
                name: tuple(row[1] for row in db.execute("SELECT * FROM pragma_table_info(?)", (name,)))
                for name in names
            }
            return application_id, user_version, tables
        finally:
            db.close()
    except sqlite3.Error as exc:
        raise CacheError(f"{path} is not an SQLite file, or a damaged one ({exc}); {refuse}") from None


def request_body(
    endpoint: Endpoint, messages: list[dict[str, str]], json_reply: bool, seed_offset: int = 0
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": endpoint.model,
        "messages": messages,
        "temperature": endpoint.temperature,
        "max_tokens": endpoint.max_tokens,
    }
    if endpoint.seed is not None:
        body["seed"] = endpoint.seed + seed_offset
    if json_reply:
        body["response_format"] = {"type": "json_object"}
    return body


def request_key(endpoint: Endpoint, body: dict[str, Any]) -> str:
    """SHA-256 of the full request: the endpoint it goes to and the exact body."""
    canonical = json.dumps(
        {"base_url": (endpoint.base_url or "").rstrip("/"), "body": body},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


class Client:
    """One endpoint, its cache and its usage counts. ``ask`` is safe to call from threads."""

    def __init__(self, endpoint: Endpoint, cache: ResponseCache) -> None:
        self.endpoint = endpoint
        self.cache = cache
        self.usage = Usage()
        self._client: Any = None
        self._client_lock = threading.Lock()
        # One lock per request in flight: two threads asking the same thing send it once.
        self._keys: dict[str, threading.Lock] = {}
        self._keys_lock = threading.Lock()

    def _openai(self) -> Any:
        with self._client_lock:
            if self._client is None:
                import openai

                self._client = openai.OpenAI(
                    api_key=api_key(self.endpoint),
                    base_url=self.endpoint.base_url,
                    timeout=self.endpoint.timeout_s,
                    max_retries=self.endpoint.max_retries,
                )
            return self._client

    def ask(
        self, messages: list[dict[str, str]], json_reply: bool = False, seed_offset: int = 0
    ) -> Reply | Failure:
        """One reply (from the cache when this exact request was answered before). ``seed_offset``
        makes repeated runs of one question distinct requests (the judge's runs 2, 3...)."""
        body = request_body(self.endpoint, messages, json_reply, seed_offset)
        key = request_key(self.endpoint, body)
        with self._keys_lock:
            key_lock = self._keys.setdefault(key, threading.Lock())
        with key_lock:
            hit = self.cache.get(key)
            if hit is not None:
                outcome: Reply | Failure = _checked(
                    Reply(hit[0], key, hit[1], hit[2], cached=True), json_reply
                )
            else:
                outcome = self._send(body, key, json_reply)
        with self._keys_lock:
            self._keys.pop(key, None)
        self.usage.count(outcome)
        return outcome

    def _send(self, body: dict[str, Any], key: str, json_reply: bool) -> Reply | Failure:
        import openai

        try:
            response = self._openai().chat.completions.create(**body)
        except openai.AuthenticationError as exc:
            raise LLMError(
                f"{self._where()} refused the API key ({_status(exc)}); check ${self.endpoint.api_key_env}"
            ) from None
        except openai.NotFoundError as exc:
            raise LLMError(
                f"{self._where()} has no model {self.endpoint.model!r} or no chat completions route "
                f"({_status(exc)}); check the model name and the base URL (it usually ends in /v1)"
            ) from None
        except openai.APIConnectionError as exc:  # includes timeouts, after every retry
            raise LLMError(
                f"cannot reach {self._where()} after {self.endpoint.max_retries} retries ({exc}); "
                "check the base URL and that the server is running"
            ) from None
        except openai.RateLimitError as exc:
            raise LLMError(
                f"{self._where()} still rate-limits after {self.endpoint.max_retries} retries "
                f"({_status(exc)}); lower the concurrency or raise max_retries, then rerun to resume"
            ) from None
        except openai.InternalServerError as exc:
            raise LLMError(
                f"{self._where()} kept failing with a server error after {self.endpoint.max_retries} "
                f"retries ({_status(exc)}); rerun later to resume"
            ) from None
        except openai.APIStatusError as exc:  # 400, 413, 422...: this request only
            return Failure(f"the endpoint refused this request ({_status(exc)})", key)
        text = _reply_text(response)
        usage = getattr(response, "usage", None)
        prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
        # Kept whatever it says (also an empty or non-JSON reply): the failure is the reply's, and
        # a resumed run must not pay for it again.
        self.cache.put(key, json.dumps(body, ensure_ascii=False), text, prompt_tokens, completion_tokens)
        return _checked(Reply(text, key, prompt_tokens, completion_tokens, cached=False), json_reply)

    def _where(self) -> str:
        return f"{self.endpoint.base_url or 'the OpenAI API'} (model {self.endpoint.model})"


def api_key(endpoint: Endpoint) -> str:
    """The key from the environment variable the config names; a clear error when it is unset."""
    if not endpoint.api_key_env:
        return NO_KEY
    value = os.environ.get(endpoint.api_key_env, "")
    if not value:
        raise LLMError(
            f"no API key: the environment variable {endpoint.api_key_env} is not set; export it, "
            "or set api_key_env to the variable that holds your key ('' for a local server without one)"
        )
    return value


def check_ready(endpoint: Endpoint) -> None:
    """Fail before the first question, not after it: the key must be there."""
    api_key(endpoint)


def parse_json_reply(text: str) -> dict[str, Any] | None:
    """A JSON object from a reply; tolerates a fenced code block around it, as models often add."""
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.strip("`")
        stripped = stripped[stripped.find("{") :] if "{" in stripped else stripped
    start, end = stripped.find("{"), stripped.rfind("}")
    if start < 0 or end < start:
        return None
    try:
        value = json.loads(stripped[start : end + 1])
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _checked(reply: Reply, json_reply: bool) -> Reply | Failure:
    if not reply.text.strip():
        return Failure("empty reply", reply.request_sha256)
    if json_reply and parse_json_reply(reply.text) is None:
        return Failure(f"reply is not a JSON object: {reply.text[:120]!r}", reply.request_sha256)
    return reply


def _reply_text(response: Any) -> str:
    try:
        content = response.choices[0].message.content
    except (AttributeError, IndexError, TypeError):
        return ""
    return content or ""


def _status(exc: Exception) -> str:
    code = getattr(exc, "status_code", None)
    return f"HTTP {code}" if code else type(exc).__name__


def run_bounded(items: Iterable[T], work: Callable[[T], Any], concurrency: int) -> Iterator[tuple[T, Any]]:
    """``work`` over ``items`` with at most ``concurrency`` in flight; results as they finish.

    Submits lazily, so an error stops the run after the requests in flight,
    not after the whole queue has been sent.
    """
    iterator = iter(items)
    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        pending: dict[Future[Any], T] = {}

        def fill() -> None:
            while len(pending) < max(1, concurrency):
                try:
                    item = next(iterator)
                except StopIteration:
                    return
                pending[pool.submit(work, item)] = item

        fill()
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                item = pending.pop(future)
                yield item, future.result()
            fill()


def endpoint_from(section: Any) -> Endpoint:
    """An :class:`Endpoint` from a reader or judge config section (harness.config.ReaderConfig or
    JudgeConfig, whose schema holds every Endpoint field); an empty base URL or key variable means none."""
    values = {field.name: section[field.name] for field in dataclasses.fields(Endpoint)}
    values["base_url"] = values["base_url"] or None
    values["api_key_env"] = values["api_key_env"] or None
    return Endpoint(**values)
