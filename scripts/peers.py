"""MUSTER native against two peers that also keep text verbatim and call no LLM on ingest (issue 28).

``make peers`` (not part of ``make reproduce`` or ``make test``) puts each peer in its own virtual
environment under ``.venv-peers/`` and then runs this script, which

* writes each LoCoMo conversation as the peers' input (one memory per turn, with its session
  date; both benchmarks share the conversations, so each is ingested once per peer) and runs each
  peer's adapter, ``scripts/peers/run_<peer>.py``, under that peer's venv python, with every
  model hub offline and the packaged all-MiniLM-L6-v2 weights as the embedder (each adapter's
  docstring says how it configures its peer, and what it turns off);
* per question with evidence ids, builds MUSTER native's context (preset ``locomo.u10``,
  ``cpu-small``, the library's current native rules) and gives each peer that context's cl100k
  tokens: the peer's turns in its own rank order, each counted as the peer shows it, the way the
  harness fills a baseline (a turn that does not fit is passed over, the next may fit);
* scores evidence recall for native, each peer and the harness's BM25 baseline, and writes
  ``results/<benchmark>/peers.md`` (overall and per category, 95% bootstrap intervals, paired
  intervals of native minus each system) and ``peers.csv`` (per category, for the results page).

A peer's rankings are kept under ``$MUSTER_HOME/peers/`` by the SHA-256 of its input, adapter and
installed versions, so a rerun scores again without running the peers.

    python scripts/peers.py --data ../shared/data    # after make peers has built .venv-peers/
"""

from __future__ import annotations

import argparse
import ast
import csv
import hashlib
import io
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from harness import benchmarks  # noqa: E402
from harness.benchmarks.metrics import question_scores  # noqa: E402
from harness.config import BenchmarkConfig  # noqa: E402
from harness.data import DataRoot  # noqa: E402
from harness.tables import BOOTSTRAP, SEED, bootstrap_ci  # noqa: E402
from muster_exact.memory import build, variants  # noqa: E402
from muster_exact.rules import EXACT, NATIVE  # noqa: E402
from muster_exact.text import tokens  # noqa: E402
from muster_exact.verify.corpora import LOCOMO, LOCOMO_REFINED_RAW, BenchmarkStore, Question, locomo_sessions  # noqa: E402

ADAPTERS = REPO / "scripts" / "peers"
PEERS = tuple(sorted(p.stem.removeprefix("run_") for p in ADAPTERS.glob("run_*.py")))
# Each benchmark with the raw file its conversations come from.
BENCHMARKS = {"locomo": LOCOMO, "locomo_refined": LOCOMO_REFINED_RAW}
PRESET, MODELS = "locomo.u10", "cpu-small"
NATIVE_ROW, BM25_ROW = "muster_native", "bm25"
# What each peer's record names: the peer and what its embedder and search stand on.
VERSIONS = (
    "mempalace",
    "truememory",
    "chromadb",
    "sqlite-vec",
    "hdbscan",
    "sentence-transformers",
    "transformers",
    "torch",
)
TOP = 0  # results asked of a peer per question; 0: as many as the conversation has turns
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


@dataclass
class Ranked:
    """A peer's output: per conversation its memories as shown, per question text its turn ids."""

    memories: dict[str, dict[str, str]] = field(default_factory=dict)
    ranked: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    other: dict[tuple[str, str], int] = field(default_factory=dict)


@dataclass
class Row:
    question: Question
    budget: int
    scores: dict[str, float]
    shown_tokens: dict[str, int]
    shown_turns: dict[str, int]
    exhausted: dict[str, bool]
    other: dict[str, int]


# --- the peers' input and runs --------------------------------------------------------------------


def conversation_turns(data: DataRoot, raw: Path) -> dict[str, list[dict[str, Any]]]:
    samples = json.loads(data.path(str(raw)).read_text(encoding="utf-8"))
    out = {}
    for sample in samples:
        out[sample["sample_id"]] = [
            {
                "id": turn["dia_id"],
                "speaker": turn["speaker"],
                "text": turn["text"],
                "caption": turn.get("blip_caption") or "",
                "date": date,
                "session": number,
                "index": index,
            }
            for number, date, turns in locomo_sessions(sample["conversation"])
            for index, turn in enumerate(turns)
        ]
    return out


def scored(store: BenchmarkStore, limit: int | None) -> list[Question]:
    """The questions with evidence ids (evidence recall is undefined without), first ``limit``."""
    return [q for q in store.questions[:limit] if q.evidence]


def peer_input(
    stores: dict[str, list[BenchmarkStore]],
    turns: dict[str, dict[str, list[dict[str, Any]]]],
    limit: int | None,
) -> str:
    """One line per conversation: its turns and every distinct question text asked of it."""
    lines = []
    for name in sorted({s.name for group in stores.values() for s in group}):
        texts: dict[str, None] = {}
        for benchmark, group in stores.items():
            for store in group:
                if store.name == name:
                    texts.update(dict.fromkeys(q.text for q in scored(store, limit)))
                    conversation = turns[benchmark][name]
        speakers = list(dict.fromkeys(t["speaker"] for t in conversation))
        questions = [{"id": f"q{i:04d}", "text": t} for i, t in enumerate(texts)]
        record = {"store": name, "speakers": speakers, "turns": conversation, "questions": questions}
        lines.append(json.dumps(record, ensure_ascii=False, sort_keys=True))
    return "\n".join(lines) + "\n"


def venv_python(venvs: Path, peer: str) -> Path:
    python = venvs / peer / "bin" / "python"
    if not python.is_file():
        raise SystemExit(f"no {python}: make peers builds it")
    return python


def versions(python: Path) -> dict[str, str]:
    code = (
        "import importlib.metadata as m, json, sys\n"
        "out = {}\n"
        f"for name in {VERSIONS!r}:\n"
        "    try: out[name] = m.version(name)\n"
        "    except m.PackageNotFoundError: pass\n"
        "out['python'] = sys.version.split()[0]\n"
        "print(json.dumps(out, sort_keys=True))"
    )
    return json.loads(subprocess.run([python, "-c", code], check=True, capture_output=True, text=True).stdout)


def run_peer(peer: str, python: Path, text: str, installed: dict[str, str], cache: Path) -> Ranked:
    adapter = ADAPTERS / f"run_{peer}.py"
    key = hashlib.sha256()
    for part in (
        text,
        adapter.read_text(),
        (ADAPTERS / "common.py").read_text(),
        json.dumps(installed),
        str(TOP),
    ):
        key.update(part.encode())
    out = cache / peer / f"{key.hexdigest()}.jsonl"
    if not out.is_file():
        out.parent.mkdir(parents=True, exist_ok=True)
        given = out.with_suffix(".input.jsonl")
        given.write_text(text, encoding="utf-8")
        partial = out.with_suffix(".partial")
        command = [
            str(python),
            str(adapter),
            "--input",
            str(given),
            "--output",
            str(partial),
            "--top",
            str(TOP),
        ]
        print(f"peers: {peer}: {' '.join(command)}", file=sys.stderr, flush=True)
        try:
            subprocess.run(command, check=True, env={**os.environ, **OFFLINE})
        except subprocess.CalledProcessError as failed:
            raise SystemExit(
                f"peers: {peer} failed (exit {failed.returncode}); its input is kept at {given}. "
                "Run the command above to see why (a broken venv: remove "
                f".venv-peers/{peer} and make peers builds it again)."
            ) from None
        partial.replace(out)
        given.unlink()
    return read_ranked(out, text)


def read_ranked(path: Path, text: str) -> Ranked:
    asked = {
        (s["store"], q["id"]): q["text"] for s in map(json.loads, text.splitlines()) for q in s["questions"]
    }
    ranked = Ranked()
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if "memories" in record:
            ranked.memories[record["store"]] = record["memories"]
        else:
            key = (record["store"], asked[(record["store"], record["question"])])
            ranked.ranked[key] = record["ranked"]
            ranked.other[key] = record["other"]
    return ranked


# --- scoring ---------------------------------------------------------------------------------------


def fill(ranked: Sequence[str], cost: dict[str, int], budget: int) -> tuple[list[str], int, bool]:
    """The turns shown within ``budget`` tokens, their tokens, and whether the ranking ran out
    with room left for a turn it did not rank."""
    shown, used = [], 0
    for turn in ranked:
        if used + cost[turn] <= budget:
            shown.append(turn)
            used += cost[turn]
    given = set(ranked)
    unranked = [c for t, c in cost.items() if t not in given]
    return shown, used, bool(unranked) and used + min(unranked) <= budget


def score_store(store: BenchmarkStore, peers: dict[str, Ranked], limit: int | None) -> list[Row]:
    exact = build(store.source, preset=PRESET, models=MODELS, rules=EXACT)
    native = exact.under(NATIVE)
    costs = {}
    for peer, ranked in peers.items():
        memories = ranked.memories[store.name]
        costs[peer] = dict(zip(memories, tokens.count_many(memories.values()), strict=True))
    rows = []
    for question in scored(store, limit):
        ours = native.context(question.text)
        budget = ours.tokens
        wider = max(budget, exact.context(question.text).tokens)
        bm25 = variants.context(native, "bm25", question.text, budget=wider)
        scores = {
            NATIVE_ROW: recall(question, ours.text, ours.record_ids),
            BM25_ROW: recall(question, bm25.text, bm25.record_ids),
        }
        used = {NATIVE_ROW: budget, BM25_ROW: bm25.tokens}
        turns = {NATIVE_ROW: len(ours.record_ids), BM25_ROW: len(bm25.record_ids)}
        exhausted, other = {}, {}
        for peer, ranked in peers.items():
            key = (store.name, question.text)
            ids, used[peer], exhausted[peer] = fill(ranked.ranked[key], costs[peer], budget)
            scores[peer], turns[peer], other[peer] = recall(question, "", ids), len(ids), ranked.other[key]
        rows.append(Row(question, budget, scores, used, turns, exhausted, other))
    return rows


def recall(question: Question, text: str, record_ids: Sequence[str]) -> float:
    return float(question_scores(question, text, record_ids)["evidence_recall"] or 0.0)


# --- tables ----------------------------------------------------------------------------------------


def systems(peers: Sequence[str]) -> list[str]:
    return [NATIVE_ROW, *peers, BM25_ROW]


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def ci(values: Sequence[float]) -> str:
    low, high = bootstrap_ci(values)
    return f"[{low:.3f}, {high:.3f}]"


def overall(rows: list[Row], peers: Sequence[str]) -> list[str]:
    lines = [
        "| system | n | evidence recall | 95% interval | native − system | paired 95% interval "
        "| native better / worse / equal | mean tokens shown | mean turns shown |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for system in systems(peers):
        values = [r.scores[system] for r in rows]
        cells = [system, str(len(values)), f"{mean(values):.4f}", ci(values)]
        if system == NATIVE_ROW:
            cells += ["", "", ""]
        else:
            diffs = [r.scores[NATIVE_ROW] - r.scores[system] for r in rows]
            counts = (sum(d > 0 for d in diffs), sum(d < 0 for d in diffs), sum(d == 0 for d in diffs))
            cells += [f"{mean(diffs):+.4f}", ci(diffs), " / ".join(map(str, counts))]
        cells.append(f"{mean([r.shown_tokens[system] for r in rows]):,.0f}")
        cells.append(f"{mean([r.shown_turns[system] for r in rows]):.1f}")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def by_category(rows: list[Row], peers: Sequence[str]) -> list[dict[str, str]]:
    """Per category (``all`` first), each system's mean and interval and native minus each peer."""
    groups: dict[str, list[Row]] = {"all": rows}
    for category in sorted({r.question.category for r in rows}, key=lambda c: (len(c), c)):
        groups[category] = [r for r in rows if r.question.category == category]
    out = []
    for category, group in groups.items():
        row = {"category": category, "n": str(len(group))}
        for system in systems(peers):
            values = [r.scores[system] for r in group]
            row[system], row[f"{system}_ci"] = f"{mean(values):.4f}", ci(values)
        for peer in peers:
            diffs = [r.scores[NATIVE_ROW] - r.scores[peer] for r in group]
            row[f"native_minus_{peer}"], row[f"native_minus_{peer}_ci"] = f"{mean(diffs):+.4f}", ci(diffs)
        out.append(row)
    return out


def csv_text(table: list[dict[str, str]]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(table[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(table)
    return buffer.getvalue()


def category_lines(table: list[dict[str, str]], peers: Sequence[str]) -> list[str]:
    names = systems(peers)
    header = ["category", "n", *names, *(f"native − {p}" for p in peers)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in table:
        cells = [row["category"], row["n"], *(row[s] for s in names)]
        cells += [f"{row[f'native_minus_{p}']} {row[f'native_minus_{p}_ci']}" for p in peers]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def markdown(
    benchmark: str, rows: list[Row], peers: dict[str, dict[str, str]], installs: dict[str, str]
) -> str:
    names = list(peers)
    budgets = [r.budget for r in rows]
    short = {p: sum(r.exhausted[p] for r in rows) for p in names}
    lines = [
        f"# {benchmark}: MUSTER native against peers at native's token budget",
        "",
        "Evidence recall per question with evidence ids: the share of its evidence turns among the "
        "turns a context shows. Mean over questions, 95% bootstrap interval "
        f"({BOOTSTRAP:,} resamples, seed {SEED}); a paired interval is the interval of the per-question "
        "differences. Generated by `make peers` (`scripts/peers.py`); not part of `make reproduce`.",
        "",
        f"* **MUSTER native**: preset `{PRESET}`, models `{MODELS}` (the packaged all-MiniLM-L6-v2, no "
        "cross-encoder), the library's native rules at the time of the run. Its context's cl100k tokens "
        f"are each question's budget (mean {mean(budgets):,.0f}, min {min(budgets, default=0):,}, "
        f"max {max(budgets, default=0):,}).",
        f"* **Peers** ({', '.join(f'`{p}`' for p in names)}): each in its own venv under `.venv-peers/` "
        "with CPU torch, embedding with the same packaged all-MiniLM-L6-v2 weights (their default "
        "embedders are hub downloads), every hub offline, no LLM anywhere. One memory per turn: the "
        "turn's text verbatim, its image caption as MUSTER shows it, its session date. How each is "
        "configured and what is turned off: below, from each adapter's docstring.",
        "* **Budget fill**: a peer's turns in its own rank order (as many asked for as there are turns), "
        "each counted as the peer shows it (cl100k), the harness's baseline rule: a turn that does not "
        "fit is passed over. Rows a peer returns that are not a stored turn (truememory's summaries, "
        "contradiction and profile rows) are left out and cost nothing (per question: "
        + ", ".join(f"{p} {mean([r.other[p] for r in rows]):.1f}" for p in names)
        + "). Questions whose ranking ran out with room left: "
        + ", ".join(f"{p} {short[p]}" for p in names)
        + ".",
        "* **bm25**: the harness's BM25 baseline on native's indexes, at the larger of the exact and "
        "native contexts' tokens (as in `comparison.md`), for reference.",
        "",
        "## Overall",
        "",
        *overall(rows, names),
        "",
        "## Per category",
        "",
        "The benchmark's own category labels. Each cell a mean; native − peer with its paired 95% interval. "
        "Machine-readable, with every interval: `peers.csv`.",
        "",
        *category_lines(by_category(rows, names), names),
        "",
        "## The peers as run",
        "",
    ]
    for peer, installed in peers.items():
        lines += peer_lines(peer, installed, installs[peer])
    return "\n".join(lines)


def peer_lines(peer: str, installed: dict[str, str], install: str) -> list[str]:
    """The peer's versions, its adapter's account of how it is configured, and its install steps."""
    stack = ", ".join(f"{k} {installed[k]}" for k in VERSIONS if k in installed and k != peer)
    doc = ast.get_docstring(ast.parse((ADAPTERS / f"run_{peer}.py").read_text(encoding="utf-8"))) or ""
    account = "\n".join(line for line in doc.splitlines()[1:] if not line.startswith("Run by "))
    return [
        f"### {peer} {installed.get(peer, '?')}",
        "",
        f"With {stack}, Python {installed.get('python', '?')}. From `scripts/peers/run_{peer}.py`:",
        "",
        *account.strip().splitlines(),
        "",
        "Installed by `make peers`:",
        "",
        "```sh",
        *install.strip().splitlines(),
        "```",
        "",
    ]


# --- main -----------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", default=os.environ.get("MUSTER_DATA", "../shared/data"))
    parser.add_argument("--benchmarks", default=",".join(BENCHMARKS))
    parser.add_argument("--peers", default=" ".join(PEERS), help="names, by spaces or commas")
    parser.add_argument("--venvs", default=str(REPO / ".venv-peers"), help="one venv per peer (make peers)")
    parser.add_argument(
        "--questions-per-store", type=int, default=None, help="a subset: prints, writes only to --out"
    )
    parser.add_argument("--out", default=None, help="the results folder (default: results/, whole runs only)")
    args = parser.parse_args()
    out = Path(args.out) if args.out else (REPO / "results" if args.questions_per_store is None else None)
    data = DataRoot.open(args.data, REPO / "manifests" / "data.json")
    names = args.peers.replace(",", " ").split()
    chosen = [b for b in args.benchmarks.split(",") if b]
    stores = {b: list(benchmarks.load(b).stores(data, BenchmarkConfig(name=b))) for b in chosen}
    turns = {b: conversation_turns(data, BENCHMARKS[b]) for b in chosen}
    for b, group in stores.items():
        for store in group:  # the peers' turns are MUSTER's turns (a turn with a blank line is two records)
            records = list(dict.fromkeys(r.source_id for r in store.source.records))
            if records != [t["id"] for t in turns[b][store.name]]:
                raise SystemExit(f"{b} {store.name}: the raw turns are not the store's records")
    text = peer_input(stores, turns, args.questions_per_store)
    cache = tokens.resource_dir() / "peers"
    peers, installed, installs = {}, {}, {}
    for peer in names:
        started = time.perf_counter()
        python = venv_python(Path(args.venvs), peer)
        installed[peer] = versions(python)
        stamp = Path(args.venvs) / peer / ".installed"
        installs[peer] = stamp.read_text(encoding="utf-8") if stamp.is_file() else "(not recorded)"
        peers[peer] = run_peer(peer, python, text, installed[peer], cache)
        print(f"peers: {peer}: {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    for benchmark in chosen:
        started, rows = time.perf_counter(), []
        for store in stores[benchmark]:
            rows += score_store(store, peers, args.questions_per_store)
            print(
                f"{benchmark} {store.name}: {time.perf_counter() - started:.0f} s",
                file=sys.stderr,
                flush=True,
            )
        report = markdown(benchmark, rows, installed, installs)
        print(report)
        if out is not None:
            (out / benchmark).mkdir(parents=True, exist_ok=True)
            (out / benchmark / "peers.md").write_text(report, encoding="utf-8")
            (out / benchmark / "peers.csv").write_text(csv_text(by_category(rows, names)), encoding="utf-8")


if __name__ == "__main__":
    main()
