"""truememory 0.7.6.2 on benchmark stores: one message per turn, its agentic search without reranker.

Run by ``.venv-peers/truememory/bin/python`` (``make peers``; the harness writes the input:
``harness/systems/external.py``).

* Embedder: truememory's default tier (``edge``) is Model2Vec potion-base-8M and its others are
  Qwen3-Embedding, all hub downloads. It also knows ``minilm`` (all-MiniLM-L6-v2, 384 d), chosen
  here with its documented switch ``TRUEMEMORY_EMBED_MODEL=minilm``; it loads that model as
  ``SentenceTransformer("all-MiniLM-L6-v2")``, which sentence-transformers reads from a local
  directory of that name when there is one. The adapter runs in a temporary directory holding
  ``all-MiniLM-L6-v2``, a link to the packaged weights, with the hub offline: no download.
  In-process model (``TRUEMEMORY_NO_MODEL_SERVER=1``), telemetry off, ``HOME`` a temporary
  directory (nothing under ``~/.truememory``).
* Reranker: off (``search_agentic(..., use_reranker=False)``): its cross-encoders are hub
  downloads. No HyDE and no LLM (no ``llm_fn``), as in its own Edge benchmark.
* Ingest: truememory's own LoCoMo benchmark (``benchmarks/locomo/scripts/bench_truememory_edge.py``):
  one message per record (sender, recipient, ISO timestamp = session date + 30 s per turn, category
  = the session, where the benchmark gives them; else sender ``user`` and the record's text as
  MUSTER stores it) through ``TrueMemoryEngine.ingest``; the words verbatim (that benchmark's
  rewrite of "yesterday" and the like into dates is left out), with the image caption as MUSTER
  shows it. A memory is shown as that benchmark shows a result: ``[sender | timestamp | session]
  text``.
* Search: ``search_agentic(question, limit, use_hyde=False, use_reranker=False)``, ``limit`` =
  ``--top`` (0, the default: every turn of the store). The order depends a little on ``limit``:
  on conv-26's first 60 questions, ``limit=100`` (its benchmark's) ranked 13 of them otherwise
  than every turn does, with the same recall at native's budget; ``limit=200`` gave the same
  first 100 for all 60. Its salience guard and its de-duplication by text leave some turns out of
  every ranking. Rows that are not a stored message (summaries, contradiction and profile rows)
  are counted in ``other`` and left out of the ranking.
* Installed with its ``[clustering]`` extra (hdbscan): without it ``ingest`` fails its
  scene-clustering step and the search has no cluster supplements. Its vector search loads
  sqlite-vec, so its Python's sqlite3 must load extensions (``make peers`` picks one that can).
"""

from __future__ import annotations

import datetime
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common

SETTINGS = {
    "TRUEMEMORY_EMBED_MODEL": "minilm",
    "TRUEMEMORY_NO_MODEL_SERVER": "1",
    "TRUEMEMORY_TELEMETRY": "off",
}
DATE_FORMATS = ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %B %Y")  # the benchmark's own two


def timestamp(date: str, index: int) -> str:
    for pattern in DATE_FORMATS:
        try:
            start = datetime.datetime.strptime(date.strip(), pattern)
        except ValueError:
            continue
        return (start + datetime.timedelta(seconds=30 * index)).strftime("%Y-%m-%dT%H:%M:%S")
    return date


def messages(store: dict[str, Any]) -> list[dict[str, Any]]:
    speakers = common.speakers(store)
    out = []
    for record in store["records"]:
        sender = record.get("speaker") or "user"
        other = [s for s in speakers if s != sender]
        out.append(
            {
                "content": common.words(record),
                "sender": sender,
                "recipient": other[0] if other else "",
                "timestamp": timestamp(record.get("time", ""), record.get("index", 0)),
                "category": f"session_{record.get('group', 0)}",
                "modality": "conversation",
                "metadata": {"turn": record["id"]},
            }
        )
    return out


def shown(message: dict[str, Any]) -> str:
    """The memory as truememory's LoCoMo benchmark shows a result (``_tm_format_ctx``)."""
    return f"[{message['sender']} | {message['timestamp']} | {message['category']}] {message['content']}"


def run_store(store: dict[str, Any], work: Path, top: int, out: Any) -> None:
    from truememory.engine import TrueMemoryEngine

    rows = messages(store)
    source = work / "messages.json"
    source.write_text(json.dumps(rows, ensure_ascii=False), encoding="utf-8")
    engine = TrueMemoryEngine(db_path=work / "memory.db")
    steps = engine.ingest(source)
    failed = {k: v for k, v in steps.items() if isinstance(v, str) and v.startswith("ERROR")}
    if failed or not engine.stats.get("capabilities", {}).get("vector_search"):
        raise SystemExit(f"truememory: {store['store']}: ingest incomplete: {failed or steps}")
    # Message ids are truememory's; the turn id rides in each message's metadata.
    turn_of = {r["id"]: r["metadata"]["turn"] for r in engine.get_all(limit=len(rows) + 1)}
    text_of = {m["metadata"]["turn"]: m["content"] for m in rows}
    common.write(out, {"store": store["store"], "memories": {m["metadata"]["turn"]: shown(m) for m in rows}})
    for question in store["questions"]:
        found = engine.search_agentic(question["text"], limit=top, use_hyde=False, use_reranker=False)
        # A stored message is one whose id and text are a turn's; other rows may reuse small ids.
        ids = [turn_of.get(r.get("id")) for r in found]
        ranked = [i for i, r in zip(ids, found, strict=True) if i and text_of[i] == r.get("content")]
        common.write_ranking(out, store, question, ranked, len(found) - len(ranked))
    engine.close()


def main() -> None:
    args = common.arguments(__doc__.splitlines()[0])
    output = Path(args.output).resolve()
    source = Path(args.input).resolve()
    common.go_offline()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="muster-peers-truememory-") as tmp:
        home = Path(tmp)
        (home / common.MODEL_NAME).symlink_to(common.model_path(), target_is_directory=True)
        os.environ.update({**SETTINGS, "HOME": str(home)})
        os.chdir(home)
        common.one_thread()
        with output.open("w", encoding="utf-8") as out:
            for number, store in enumerate(common.stores(str(source))):
                work = home / f"store-{number}"
                work.mkdir()
                run_store(store, work, args.top or len(store["records"]), out)
                out.flush()
                common.progress("truememory", store, started, len(store["questions"]))


if __name__ == "__main__":
    main()
