"""How often the embedder reads each word (issue 53, "words embedded once"): per benchmark, the
word pieces the cpu-small embedder reads to build every store at every preset under the exact
and the native rules, against the word pieces of the stores' text read once.

A piece is what one forward pass reads (a unit, a record, or a window of a long one,
``muster_exact.derive.pieces``), truncated at the model's window; a text embedded once is cached
by its SHA-256 and never read again, so the count is over distinct piece texts. A message read
alone and again inside a larger piece that holds it counts twice; so does a word in two
overlapping windows. No model runs: the counts come from the cut and the embedder's tokenizer.

    python scripts/bench_pieces.py --data ../shared/data --out results/bench/pieces.md
"""

from __future__ import annotations

import platform
import sys
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench_common import parser as bench_parser  # noqa: E402
from bench_common import write_report  # noqa: E402

from harness.report.reproduction import MODELS, presets_of, reproduced  # noqa: E402
from muster_exact import __version__  # noqa: E402
from muster_exact.memory import embedding_pieces, planned  # noqa: E402
from muster_exact.models import load_window, profile  # noqa: E402
from muster_exact.rules import EXACT, NATIVE  # noqa: E402
from muster_exact.text.tokens import count  # noqa: E402
from muster_exact.verify.corpora import benchmark_stores  # noqa: E402

# The BEAM chats make reproduce builds (the harness's default scale).
REPRODUCED_BEAM = "beam-100K-"


def read_counts(benchmark: str, data: Path) -> dict[str, float]:
    """Tokens stored, word pieces of the text read once, and word pieces read per rule set."""
    window = load_window(profile(MODELS).embedder)
    once = tokens = 0
    texts: dict[str, set[str]] = {"exact": set(), "native": set()}
    for store in benchmark_stores(benchmark, data):
        if benchmark == "beam" and not store.name.startswith(REPRODUCED_BEAM):
            continue  # the development and held-out chats are the study's, not make reproduce's
        text = store.source.text
        tokens += count(text)
        once += sum(window.pieces([line for line in text.splitlines() if line.strip()]))
        for preset in presets_of(benchmark):
            for name, rules in (("exact", EXACT), ("native", NATIVE)):
                _, cut, models, _ = planned(store.source, preset, MODELS, rules=rules)
                texts[name].update(embedding_pieces(cut, models, rules.pieces).texts)
    found: dict[str, float] = {"tokens": tokens, "once": once}
    for name, chosen in (*texts.items(), ("both", texts["exact"] | texts["native"])):
        ordered = sorted(chosen)
        found[f"{name}_pieces"] = len(ordered)
        found[name] = sum(min(n, window.size) for n in window.pieces(ordered))
    return found


def main() -> None:
    parser = bench_parser(__doc__, "results/bench/pieces.md")
    args = parser.parse_args()
    lines = [
        "# word pieces read per word stored (issue 53)",
        "",
        f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by `scripts/bench_pieces.py`; "
        f"muster {__version__}, "
        f"Python {platform.python_version()}, {MODELS}, every store of each benchmark `make reproduce` "
        "builds, at its three presets (U = 10, 20, 40). Counts, not times: no model runs.",
        "",
        "| benchmark | tokens stored | word pieces, text read once | exact: pieces | exact: word pieces "
        "read | native: pieces | native: word pieces read | both: word pieces read | both / once |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for benchmark in reproduced():
        c = read_counts(benchmark, args.data)
        print(benchmark, c, file=sys.stderr)
        lines.append(
            f"| {benchmark} | {c['tokens']:,.0f} | {c['once']:,.0f} | {c['exact_pieces']:,.0f} | "
            f"{c['exact']:,.0f} | {c['native_pieces']:,.0f} | {c['native']:,.0f} | {c['both']:,.0f} | "
            f"{c['both'] / c['once']:.2f} |"
        )
    lines += [
        "",
        "Tokens stored: cl100k tokens of the stores' text. Word pieces, text read once: the "
        "embedder's word pieces of each non-blank line of that text. Word pieces read: over the "
        "distinct piece texts the builds embed (a text embedded once is cached), each truncated at "
        "the window. Special tokens are counted in neither. both / once above 1 is what reading a "
        "word more than once costs (the words past a window that are never read lower it).",
        "",
    ]
    write_report(args.out, lines)


if __name__ == "__main__":
    main()
