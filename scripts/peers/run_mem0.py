"""Mem0 (mem0ai 2.2.1) on benchmark stores: an LLM writes the memories from each record.

Run by ``.venv-peers/mem0/bin/python`` (``make peer-mem0`` builds it; ``make peers`` does not run
it: its ingest asks an LLM for every record). The harness runs it as ``system=mem0`` once the
endpoint is set. No number of it was measured for this project (no LLM endpoint here); its test
runs it against a small OpenAI-compatible server on loopback.

* LLM: Mem0's ``openai`` provider at an OpenAI-compatible endpoint: ``$MUSTER_MEM0_BASE_URL``
  (required; an adapter that would silently reach api.openai.com is refused), the key from
  ``$MUSTER_MEM0_API_KEY`` (else ``$OPENAI_API_KEY``), the model ``$MUSTER_MEM0_MODEL``
  (default ``gpt-4o-mini``, Mem0's own), temperature 0.
* Embedder: Mem0's ``huggingface`` provider with the packaged all-MiniLM-L6-v2 (its local path,
  384 d), as the ``cpu-small`` profile; Mem0's default is another hub model.
* Vector store: Qdrant embedded in the process, in a temporary directory (nothing under
  ``~/.mem0``: ``MEM0_DIR`` and the history database are in it too); telemetry off.
* Left out, each a download this machine cannot make: Mem0's BM25 channel (fastembed's
  ``Qdrant/bm25``) and its entity boosts and lemmas (a spaCy model). Mem0 falls back to its
  semantic search over the memories it wrote, which is what ranks here.
* Ingest: ``Memory.add`` once per record, in stored order, ``[{"role": "user", "content": text}]``
  with the record's text as MUSTER stores it (speaker and time in its header), ``infer=True``
  (Mem0's extraction; its own default), the store as ``user_id`` and the record id as metadata,
  so every memory the LLM writes names the record it came from. A record the LLM drew nothing
  from has no memory and is never ranked.
* Search: ``Memory.search(question, top_k, filters={"user_id": store}, threshold=0)``; ``top_k``
  is ``--top`` (0, the default: every memory of the store). A record's rank is its best memory's;
  it is shown as the memories Mem0 wrote from it, one per line, in the order it wrote them.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common

ENDPOINT = "MUSTER_MEM0_BASE_URL"
DEFAULT_MODEL = "gpt-4o-mini"
DIMENSIONS = 384  # all-MiniLM-L6-v2


def settings(workdir: Path) -> dict[str, Any]:
    """Mem0's configuration for one store, everything it writes under ``workdir``."""
    base_url = os.environ.get(ENDPOINT)
    if not base_url:
        sys.exit(f"mem0: set {ENDPOINT} to an OpenAI-compatible endpoint (its ingest asks an LLM)")
    key = os.environ.get("MUSTER_MEM0_API_KEY") or os.environ.get("OPENAI_API_KEY")
    if not key:
        sys.exit("mem0: set MUSTER_MEM0_API_KEY (or OPENAI_API_KEY) to the endpoint's key")
    return {
        "llm": {
            "provider": "openai",
            "config": {
                "model": os.environ.get("MUSTER_MEM0_MODEL", DEFAULT_MODEL),
                "openai_base_url": base_url,
                "api_key": key,
                "temperature": 0,
            },
        },
        "embedder": {
            "provider": "huggingface",
            "config": {"model": str(common.model_path()), "embedding_dims": DIMENSIONS},
        },
        "vector_store": {
            "provider": "qdrant",
            "config": {
                "collection_name": "records",
                "path": str(workdir / "qdrant"),
                "on_disk": True,
                "embedding_model_dims": DIMENSIONS,
            },
        },
        "history_db_path": str(workdir / "history.db"),
    }


def ingest(memory: Any, store: dict[str, Any]) -> dict[str, str]:
    """Each record through Mem0's extraction, in stored order; the memories written from each
    record, one per line in the order Mem0 wrote them (a record with none has no entry)."""
    written: dict[str, str] = {}
    for record in store["records"]:
        added = memory.add(
            [{"role": "user", "content": record["text"]}],
            user_id=store["store"],
            metadata={"record": record["id"]},
            infer=True,
        )
        texts = [row["memory"] for row in added["results"] if row.get("event") == "ADD"]
        if texts:
            written[record["id"]] = "\n".join(texts)
    return written


def ranking(memory: Any, store: dict[str, Any], question: str, top: int) -> list[str]:
    """Record ids in the order of their best memory among those Mem0 returns."""
    found = memory.search(question, top_k=top, filters={"user_id": store["store"]}, threshold=0.0)
    records = (row.get("metadata", {}).get("record") for row in found["results"])
    return list(dict.fromkeys(r for r in records if r is not None))


def run_store(store: dict[str, Any], top: int, out: Any) -> None:
    from mem0 import Memory  # type: ignore[import-not-found]

    with tempfile.TemporaryDirectory(prefix="mem0-") as tmp:
        memory = Memory.from_config(settings(Path(tmp)))
        started = time.perf_counter()
        written = ingest(memory, store)
        common.write(out, {"store": store["store"], "memories": written})
        every = top or max(1, sum(text.count("\n") + 1 for text in written.values()))  # 0: every memory
        for done, question in enumerate(store["questions"], 1):
            common.write_ranking(out, store, question, ranking(memory, store, question["text"], every), 0)
            if done % 50 == 0:
                common.progress("mem0", store, started, done)


def main() -> None:
    args = common.arguments(__doc__ or "")
    common.go_offline()
    os.environ["MEM0_TELEMETRY"] = "False"
    common.one_thread()
    with tempfile.TemporaryDirectory(prefix="mem0-home-") as home:
        os.environ["MEM0_DIR"] = home
        with open(args.output, "w", encoding="utf-8") as out:
            for store in common.stores(args.input):
                run_store(store, args.top, out)


if __name__ == "__main__":
    main()
