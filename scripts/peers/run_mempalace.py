"""mempalace 3.11.0 on benchmark stores: one drawer per turn, its own hybrid search per question.

Run by ``.venv-peers/mempalace/bin/python`` (``make peers``; the harness writes the input:
``harness/systems/external.py``).

* Embedder: mempalace's default (``minilm``) is chromadb's ONNX export of all-MiniLM-L6-v2,
  downloaded on first use. Instead it is configured, through its documented settings, for an
  OpenAI-compatible embeddings endpoint (``MEMPALACE_EMBEDDING_MODEL=openai-compat``,
  ``MEMPALACE_EMBEDDING_API_URL``, ``MEMPALACE_EMBEDDING_API_MODEL``), served here on 127.0.0.1 by
  sentence-transformers from the packaged all-MiniLM-L6-v2 weights. mempalace L2-normalises what
  the endpoint returns, as it does for every embedder.
* Ingest: one drawer per record through ``mempalace.miner.add_drawer`` (its API for external
  callers; the text verbatim, no LLM), wing ``muster``, room the session where the benchmark has
  sessions. Where the benchmark names the speaker (LoCoMo), the drawer's text is mempalace's own
  LoCoMo benchmark format (``benchmarks/locomo_bench.py``: ``Speaker said, "text"``) with the
  session date in front, which that benchmark keeps in metadata only; else (BEAM) the record's
  text as MUSTER stores it.
* Search: ``mempalace.searcher.search_memories`` (a vector pool of 4 x ``n_results`` re-ranked by
  0.6 cosine + 0.4 BM25 with the pool's own IDF, its defaults), ``n_results`` = ``--top`` (0, the
  default: every turn of the store, so the pool is the whole store). No closets (``add_drawer``
  files none), so no closet boost. A fresh palace and config directory per store, in a temporary
  directory; nothing under ``~``.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common

WING = "muster"


def memory_text(record: dict[str, Any]) -> str:
    if not record.get("speaker"):
        return str(record["text"])
    return f'[{record.get("time", "")}] {record["speaker"]} said, "{common.words(record)}"'


def serve_embeddings(model: Any) -> HTTPServer:
    """An OpenAI-compatible ``/v1/embeddings`` on 127.0.0.1 (a free port), backed by ``model``."""

    class Embeddings(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
            vectors = model.encode(texts, batch_size=64, convert_to_numpy=True)
            data = [
                {"object": "embedding", "index": i, "embedding": v.tolist()} for i, v in enumerate(vectors)
            ]
            payload = json.dumps({"object": "list", "data": data, "model": body.get("model")}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Embeddings)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def configure(home: Path, server: HTTPServer) -> None:
    os.environ.update(
        {
            "MEMPALACE_CONFIG_DIR": str(home / "config"),
            "MEMPALACE_EMBEDDING_MODEL": "openai-compat",
            "MEMPALACE_EMBEDDING_API_URL": f"http://127.0.0.1:{server.server_address[1]}",
            "MEMPALACE_EMBEDDING_API_MODEL": common.MODEL_NAME,
            "ANONYMIZED_TELEMETRY": "False",  # chromadb's
        }
    )


def run_store(store: dict[str, Any], palace: Path, top: int, out: Any) -> None:
    from mempalace.miner import add_drawer
    from mempalace.palace import get_collection
    from mempalace.searcher import search_memories

    collection = get_collection(str(palace), create=True)
    record_of: dict[str, str] = {}
    memories: dict[str, str] = {}
    for record in store["records"]:
        source = f"{WING}/{store['store']}/{record['id']}"
        record_of[source] = record["id"]
        memories[record["id"]] = memory_text(record)
        room = f"session_{record.get('group', 0)}"
        add_drawer(collection, WING, room, memories[record["id"]], source, 0, "muster-peers")
    common.write(out, {"store": store["store"], "memories": memories})
    for question in store["questions"]:
        found = search_memories(question["text"], str(palace), n_results=top)
        if "error" in found:
            raise SystemExit(f"mempalace: {store['store']} {question['id']}: {found['error']}")
        ids = [record_of.get(hit.get("source_path", "")) for hit in found["results"]]
        ranked = [i for i in ids if i is not None]
        common.write_ranking(out, store, question, ranked, len(ids) - len(ranked))


def main() -> None:
    args = common.arguments(__doc__.splitlines()[0])
    common.go_offline()
    common.one_thread()
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(common.model_path()), device="cpu")
    server = serve_embeddings(model)
    started = time.perf_counter()
    with (
        tempfile.TemporaryDirectory(prefix="muster-peers-mempalace-") as tmp,
        open(args.output, "w", encoding="utf-8") as out,
    ):
        configure(Path(tmp), server)
        for number, store in enumerate(common.stores(args.input)):
            run_store(store, Path(tmp) / f"palace-{number}", args.top or len(store["records"]), out)
            out.flush()
            common.progress("mempalace", store, started, len(store["questions"]))
    server.shutdown()


if __name__ == "__main__":
    main()
