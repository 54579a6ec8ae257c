"""A toy peer: the smallest adapter of the harness's peer protocol (harness/systems/external.py).

Run by the Python a test names (``$MUSTER_PEER_PYTHON_TOY``), as the harness runs every adapter:
one process per store (``harness/systems/external.py``).

It keeps one memory per record and ranks them by how many of the question's words each holds
(ties by stored order); the standard library only, so any Python runs it. Each run appends a
line to ``$TOY_PEER_LOG`` (when set), so a test can count its runs; ``$TOY_PEER_FAIL`` makes it
fail, ``$TOY_PEER_UNKNOWN`` makes it rank an id it was not given.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys

WORD = re.compile(r"\w+")


def words(text: str) -> set[str]:
    return {w.lower() for w in WORD.findall(text)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", required=True)
    parser.add_argument("--output", required=True)
    args = parser.parse_args()
    if os.environ.get("TOY_PEER_LOG"):
        with open(os.environ["TOY_PEER_LOG"], "a", encoding="utf-8") as log:
            log.write(args.input + "\n")
    if os.environ.get("TOY_PEER_FAIL"):
        sys.exit("toy peer: asked to fail")
    with open(args.input, encoding="utf-8") as given, open(args.output, "w", encoding="utf-8") as out:
        for line in given:
            store = json.loads(line)
            records = store["records"]
            memories = {r["id"]: f"({r.get('speaker', 'someone')}) {r['text']}" for r in records}
            out.write(json.dumps({"store": store["store"], "memories": memories}) + "\n")
            for question in store["questions"]:
                asked = words(question["text"])
                order = sorted(
                    range(len(records)), key=lambda i: (-len(asked & words(records[i]["text"])), i)
                )
                ranked = [records[i]["id"] for i in order]
                if os.environ.get("TOY_PEER_UNKNOWN"):
                    ranked.insert(0, "no-such-record")
                answer = {"store": store["store"], "question": question["id"], "ranked": ranked, "other": 0}
                out.write(json.dumps(answer) + "\n")


if __name__ == "__main__":
    main()
