"""A robot's observation log over HTTP: post what it sees, ask where things were.

    muster http --store robot.muster --models cpu-small &        # the memory, on 127.0.0.1:8765
    python examples/robot_log_http.py --url http://127.0.0.1:8765

Each observation is one record with the robot as speaker and the time it was
made; a request id per observation makes a resent post harmless (a robot on
a flaky link resends). A resend carries the same record, its time included:
the server refuses a request id it has seen with another body (409), so a
retry can never replace what was kept unseen.
"""

from __future__ import annotations

import argparse

import httpx

# The robot's log: where, when (as it was made, not when it is sent) and what it saw.
OBSERVATIONS = [
    ("kitchen", "2026-10-20T10:02:00+00:00", "Red mug on the kitchen table"),
    ("hall", "2026-10-20T10:05:00+00:00", "Blue umbrella leaning by the front door"),
    ("kitchen", "2026-10-20T11:40:00+00:00", "Red mug moved to the dish rack"),
    ("office", "2026-10-20T12:15:00+00:00", "Charger for the drone on the second shelf"),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:8765")
    parser.add_argument("--token", help="the server's bearer token, if it has one")
    args = parser.parse_args()
    headers = {"Authorization": f"Bearer {args.token}"} if args.token else {}
    with httpx.Client(base_url=args.url, headers=headers, timeout=120) as client:
        for n, (room, when, seen) in enumerate(OBSERVATIONS):
            record = {"speaker": "robot", "time": when, "text": seen}
            reply = client.post("/v1/add", json={"records": [record], "request_id": f"obs-{room}-{n}"})
            reply.raise_for_status()
        answer = client.post("/v1/context", json={"query": "Where did I last see the red mug?"})
        answer.raise_for_status()
        print(answer.json()["context"])


if __name__ == "__main__":
    main()
