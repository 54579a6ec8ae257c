"""A small OpenAI-compatible chat server on 127.0.0.1: the test double for a hosted model.

Deterministic: the same request body always gets the same reply. Readers get
a short answer derived from the request's SHA-256; requests that ask for a
JSON object get one with both a ``label`` and a ``score`` (what the LoCoMo
and BEAM judges read), chosen from the same hash, or the object a test's
``json_reply`` builds (Mem0's ingest). Tests can make chosen
requests fail (``fail_nth={2: 429, 5: 500}`` by arrival number, each once),
hand back non-JSON or empty replies for requests whose text contains a
marker, and hold requests after the N-th answered one (to kill a run half
way). Every request is logged with its body hash and whether it was answered.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Behaviour:
    fail_nth: dict[int, int] = field(default_factory=dict)  # arrival number (1-based) -> HTTP status
    not_json_marker: str | None = None  # JSON asked, but the reply is prose
    empty_marker: str | None = None  # an empty reply
    hold_after: int | None = None  # answer this many, then hold every later request until released
    reader_reply: Any = None  # callable(body) -> str, to override the reader's answer
    judge_label: Any = None  # callable(prompt text) -> "CORRECT" / "WRONG", to override the judge
    json_reply: Any = None  # callable(body) -> dict, the JSON object another client asks for (Mem0's ingest)


@dataclass
class Logged:
    sha256: str
    status: int
    answered: bool
    body: dict[str, Any]


class FakeLLM:
    def __init__(self, behaviour: Behaviour | None = None) -> None:
        self.behaviour = behaviour or Behaviour()
        self.log: list[Logged] = []
        self.lock = threading.Lock()
        self.release = threading.Event()
        self.arrivals = 0
        self.answered = 0
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                raw = self.rfile.read(length)
                body = json.loads(raw or b"{}")
                digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                if self.headers.get("Authorization") != "Bearer test-key":
                    self._send(401, {"error": {"message": "bad key"}})
                    return
                status, payload = fake.respond(body, digest)
                self._send(status, payload)

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if status in (429, 500, 503):
                    self.send_header("retry-after-ms", "10")  # keep the client's backoff short in tests
                self.end_headers()
                with contextlib.suppress(BrokenPipeError):  # a client killed while its request was held
                    self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> FakeLLM:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()

    def respond(self, body: dict[str, Any], digest: str) -> tuple[int, dict[str, Any]]:
        with self.lock:
            self.arrivals += 1
            number = self.arrivals
            status = self.behaviour.fail_nth.pop(number, None)
            hold = self.behaviour.hold_after is not None and self.answered >= self.behaviour.hold_after
        if status is not None:
            with self.lock:
                self.log.append(Logged(digest, status, False, body))
            return status, {"error": {"message": f"injected {status}", "type": "test"}}
        if hold:
            with self.lock:
                self.log.append(Logged(digest, 0, False, body))
            self.release.wait(timeout=120)
            return 503, {"error": {"message": "held and released"}}
        text = self.reply_text(body, digest)
        with self.lock:
            self.answered += 1
            self.log.append(Logged(digest, 200, True, body))
        prompt_tokens = sum(len(m.get("content", "").split()) for m in body.get("messages", []))
        return 200, {
            "id": f"chatcmpl-{digest[:12]}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "fake"),
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": len(text.split()),
                "total_tokens": prompt_tokens + len(text.split()),
            },
        }

    def reply_text(self, body: dict[str, Any], digest: str) -> str:
        text = " ".join(m.get("content", "") for m in body.get("messages", []))
        b = self.behaviour
        if b.empty_marker and b.empty_marker in text:
            return ""
        wants_json = (body.get("response_format") or {}).get("type") == "json_object"
        if wants_json:
            if b.not_json_marker and b.not_json_marker in text:
                return "I think the answer is correct."
            if b.json_reply is not None:
                return json.dumps(b.json_reply(body))
            choice = int(digest[:8], 16)
            label = b.judge_label(text) if b.judge_label is not None else None
            return json.dumps(
                {
                    "reasoning": "fake judge",
                    "label": label or ("CORRECT" if choice % 3 else "WRONG"),
                    "score": [1, 0.5, 0][choice % 3],
                    "reason": "fake judge",
                }
            )
        if b.reader_reply is not None:
            return str(b.reader_reply(body))
        return f"answer {digest[:6]}"

    def answered_hashes(self) -> list[str]:
        with self.lock:
            return [entry.sha256 for entry in self.log if entry.answered]

    def wait_for_arrivals(self, count: int, timeout: float = 120) -> bool:
        import time

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if self.arrivals >= count:
                    return True
            time.sleep(0.05)
        return False
