"""The results page (harness/report/page.py) on small synthetic inputs, without a browser: a missing
input is a note in its section, the verdicts get their colour classes, the plots one series per
system, the reproduction record its hashes and the CPU replay callout, and the same inputs give
the same bytes. tests/harness/test_report_page.py opens the real page in chromium."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.report import expected, figures, reproduction
from harness.report import page as report
from tests.conftest import REPO

BENCHES = [("toy", "locomo"), ("toymab", "mab")]
HEADER = "system,n,tokens_mean,evidence_recall,evidence_recall_ci,build_s\n"

# Shaped like results/bench/query.md and scale.md (a store the parser cannot read, a level not measured).
# What scripts/bench_query.py and bench_scale.py write beside their Markdown (figures.write_bench).
QUERY_POINTS = figures.StoreSizes(
    {"with embedding (query.md)": [(1000.0, 2.5)], "without embedder (query.md)": [(1000.0, 0.1)]},
    {"query p50 (query.md)": [(1000.0, 3.5)], "query p95 (query.md)": [(1000.0, 7.0)]},
    ["query.md, Store B: no token count"],
)
SCALE_POINTS = figures.StoreSizes(
    {"without embedding (scale.md)": [(1e6, 8.0), (1e7, 80.0)]},
    {"query p50 (scale.md)": [(1e6, 50.5)], "query p95 (scale.md)": [(1e6, 70.0)]},
    ["scale.md, 10M: no query total (random vectors not measured)"],
)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def comparison(tables: Path, benchmark: str, preset: str, rows: list[str], header: str = HEADER) -> Path:
    return write(tables / report.comparison_path(benchmark, preset), header + "\n".join(rows) + "\n")


def row(system: str, value: float, low: float, high: float) -> str:
    return f'{system},10,99.0,{value},"[{low:.4f}, {high:.4f}]",1.5'


@pytest.fixture()
def sources(tmp_path: Path) -> report.Sources:
    """Tables of two toy benchmarks (one with evidence recall, one with answer_in_context only),
    pinned, then moved: one figure within tolerance, one beyond it, one row the pin lacks."""
    tables = tmp_path / "tables"
    mab_header = "system,n,tokens_mean,answer_in_context,answer_in_context_ci\n"
    written = [
        comparison(tables, "toy", "locomo.u10", [row("muster", 0.5, 0.4, 0.6), row("bm25", 0.4, 0.3, 0.5)]),
        comparison(tables, "toy", "locomo.u20", [row("muster", 0.7, 0.6, 0.8), row("bm25", 0.6, 0.5, 0.7)]),
        comparison(tables, "toymab", "mab.u10", ['muster,8,50.0,0.25,"[0.1000, 0.4000]"'], header=mab_header),
    ]
    pin = tmp_path / "expected.yaml"
    expected.dump(pin, tables, written, expected.DEFAULT_TOLERANCE)
    moved = [row("muster", 0.502, 0.4, 0.6), row("bm25", 0.4, 0.3, 0.5)]
    comparison(tables, "toy", "locomo.u10", moved)
    grown = [row("muster", 0.7, 0.6, 0.8), row("bm25", 0.9, 0.5, 0.7), row("dense", 0.6, 0.5, 0.7)]
    comparison(tables, "toy", "locomo.u20", grown)
    return report.Sources(tables, tmp_path / "runs", pin)


def matrix_cell(html: str, benchmark: str, system: str, column: int) -> str:
    grid = re.search(rf'<table class="matrix" data-benchmark="{benchmark}">.*?</table>', html)
    assert grid, benchmark
    row = re.search(rf'<tr data-system="{system}"><th>{system}</th>(.*?)</tr>', grid.group(0))
    assert row, system
    return str(re.findall(r'<td class="status status-(\w+)"', row.group(1))[column])


def plot_of(html: str, name: str) -> str:
    found = re.search(rf'<svg class="plot" data-plot="{name}".*?</svg>', html)
    assert found, name
    return str(found.group(0))


def test_with_no_inputs_every_section_says_what_to_run(tmp_path: Path) -> None:
    sources = report.Sources(tmp_path / "none", tmp_path / "none" / "runs", tmp_path / "none.yaml")
    html = report.page(sources, BENCHES)
    assert "no reproduction record here" in html and "run make reproduce" in html
    assert "no expected-score file; pin one with scripts/pin_expected.py" in html
    assert "no comparison tables for toy" in html and "no comparison tables for toymab" in html
    assert "no timings.csv beside the runs" in html
    assert "run make bench and make bench-scale" in html
    assert "not available: audit/published.csv" in html
    assert "not available: make peers writes &lt;benchmark&gt;/peers.csv" in html
    assert "no minus_best column in the comparison tables" in html
    assert "<svg" not in html and "<script" not in html


def test_verdicts_get_their_colour_classes(sources: report.Sources) -> None:
    html = report.page(sources, BENCHES)
    assert matrix_cell(html, "toy", "muster", 0) == "okish"  # 0.502 against 0.5
    assert matrix_cell(html, "toy", "bm25", 1) == "fail"  # 0.9 against 0.6
    assert matrix_cell(html, "toy", "muster", 1) == "ok"
    assert matrix_cell(html, "toy", "dense", 1) == "new"  # a row the pin lacks
    assert matrix_cell(html, "toy", "dense", 0) == "none"  # no figure: not pinned
    assert matrix_cell(html, "toymab", "muster", 0) == "ok"
    css = re.search(r"<style>(.*?)</style>", html, flags=re.S)
    assert css
    for status in ("ok", "okish", "fail", "new"):
        assert f".status-{status} {{ background:" in css.group(1)
    # Every figure that is not OK is listed with what was pinned and what the table holds.
    listed = re.search(r"Every figure that is not OK \((\d+)\)", html)
    assert listed
    cells = expected.check(expected.load(sources.expected), sources.tables)
    assert int(listed.group(1)) == sum(c.status != expected.OK for c in cells)
    assert "<td>0.9</td>" in html and "<td>0.6</td>" in html


def test_a_plot_per_benchmark_holds_a_series_per_system_with_its_intervals(sources: report.Sources) -> None:
    html = report.page(sources, BENCHES)
    toy = plot_of(html, "recall-toy")
    assert re.findall(r'<path class="series" data-series="(\w+)"', toy) == ["muster", "bm25", "dense"]
    assert toy.count('<line class="errbar"') == 5  # muster and bm25 at U 10 and 20, dense at 20
    assert "evidence_recall" in toy
    mab = plot_of(html, "recall-toymab")  # no evidence recall there: the answer in the context
    assert "answer_in_context" in mab and mab.count('class="series"') == 1
    assert "no toymab/mab.u20/cpu-small/comparison.csv, toymab/mab.u40/cpu-small/comparison.csv" in html
    comparison(sources.tables, "toy", "locomo.u10", ["muster,10,99.0"], header="system,n,tokens_mean\n")
    comparison(sources.tables, "toy", "locomo.u20", ["muster,10,99.0"], header="system,n,tokens_mean\n")
    html = report.page(sources, BENCHES)
    assert "no evidence_recall or answer_in_context figure in toy&#x27;s tables" in html
    assert 'data-plot="recall-toy"' not in html


def test_the_record_gives_the_hashes_and_calls_out_the_cpu_replay(sources: report.Sources) -> None:
    record = {
        "started_utc": "2026-01-01T00:00:00Z",
        "total_s": 12.5,
        "host": {"platform": "Linux", "cpus": 2, "python": "3.11.7"},
        "steps": [{"step": "toy: contexts", "seconds": 3.0, "kind": "embedding: toy"}],
        "breakdown": {"embedding: toy": 3.0, "tables": 1.0},
        "hashes": [
            {"benchmark": "toy", "preset": "locomo.u20", "rules": "exact", "identical": 3, "total": 3},
            {
                "benchmark": "toy",
                "preset": "locomo.u20",
                "rules": "native",
                "identical": 2,
                "total": 3,
                "differs": ["q2"],
            },
            {  # one of 200 differing: OKish on the page as in the console (harness.report.expected)
                "benchmark": "toy",
                "preset": "locomo.u40",
                "rules": "exact",
                "identical": 199,
                "total": 200,
                "differs": ["q7"],
            },
            {
                "benchmark": "toymab",
                "preset": "mab.u10",
                "rules": "exact",
                "identical": 0,
                "total": 0,
                "problem": "no pinned hashes at x.json",
            },
        ],
        "cpu_replay": ["toy", "locomo.u20"],
        "passed": False,
    }
    write(sources.results / reproduction.RECORD, json.dumps(record))
    html = report.page(sources, BENCHES)
    assert "no reproduction record here" not in html
    hashes = re.search(r'<table class="hashes">.*?</table>', html)
    assert hashes
    assert hashes.group(0).count('<tr class="replay">') == 2
    assert hashes.group(0).count("the paper's CPU replay setting") == 2
    assert "exact: 3 of 3 identical, native: 2 of 3 identical" in html
    assert "differs: q2" in html and "no pinned hashes at x.json" in html
    verdicts = re.findall(r'status-(\w+)">(\w+)</span>', hashes.group(0))
    assert verdicts == [("ok", "OK"), ("fail", "FAIL"), ("okish", "OKish"), ("fail", "FAIL")]
    assert "Where the reproduction&#x27;s time went" in html or "Where the reproduction's time went" in html
    assert "<td>embedding: toy</td><td>3</td><td>75%</td>" in html
    assert "FAILED" in html and "2026-01-01T00:00:00Z" in html
    write(sources.results / reproduction.RECORD, "{not json")
    assert "reproduce.json is not JSON" in report.page(sources, BENCHES)
    write(sources.results / reproduction.RECORD, json.dumps({"hashes": "x", "steps": [1], "host": 3}))
    assert "the record holds no context hashes" in report.page(sources, BENCHES)


def test_timings_bench_and_audit_are_read_when_present(sources: report.Sources) -> None:
    write(
        sources.results / "toy" / "locomo.u10" / reproduction.MODELS / "timings.csv",
        "system,build_s,query_ms_p50,run\nmuster,1.5,20.25,runs/x\n",
    )
    bench = sources.tables / "bench"
    figures.write_bench(bench / "query.md", "# bench\n\nMeasured today by `x`.\n", None, QUERY_POINTS)
    figures.write_bench(bench / "scale.md", "# scale\n\nMeasured before\n", {"levels": []}, SCALE_POINTS)
    write(sources.tables / "audit" / "published.csv", "file,how,all\nfc-x,majority,0.75\n")
    write(
        sources.tables / "audit" / "published.md",
        "# Published\n\nAccuracy by majority of the runs.\n\n| file |\n",
    )
    html = report.page(sources, BENCHES)
    assert "Measured on this machine" in html and "<td>20.25</td>" in html
    build, query = plot_of(html, "bench-build"), plot_of(html, "bench-query")
    assert build.count('class="series"') == 3 and query.count('class="series"') == 4
    assert "query.md, Store B: no token count" in html
    assert "scale.md, 10M: no query total (random vectors not measured)" in html
    assert "Measured today by `x`." in html
    assert "<td>fc-x</td><td>majority</td><td>0.75</td>" in html
    assert "Accuracy by majority of the runs." in html
    assert "not available: audit/published_mab.csv" in html


def test_a_peers_table_shows_up_under_its_caption(sources: report.Sources) -> None:
    """make peers writes <benchmark>/peers.csv and peers.md: the page shows the CSV per
    benchmark that has one, under the Markdown's first paragraph, and no note then."""
    write(
        sources.tables / "toy" / "peers.csv",
        "category,n,muster_native,muster_native_ci,mempalace,mempalace_ci,native_minus_mempalace,"
        "native_minus_mempalace_ci,native_better_worse_equal_mempalace\n"
        'all,3,0.9000,"[0.8, 1.0]",0.8000,"[0.7, 0.9]",+0.1000,"[0.0, 0.2]",1 / 0 / 2\n'
        '1,2,0.8500,"[0.8, 0.9]",0.7000,"[0.6, 0.8]",+0.1500,"[0.1, 0.2]",1 / 0 / 1\n',
    )
    caption = "# toy: peers\n\nEvidence recall at native's budget.\n\n| a |\n"
    write(sources.tables / "toy" / "peers.md", caption)
    html = report.page(sources, BENCHES)
    peers = re.search(r'<section id="peers">.*?</section>', html)
    assert peers
    assert "<h3>toy</h3><p>Evidence recall at native&#x27;s budget.</p>" in peers.group(0)
    # As peers.md reads: each value beside its interval, no better / worse / equal counts.
    assert "<th>muster_native</th><th>mempalace</th><th>native − mempalace</th></tr>" in peers.group(0)
    cells = "<td>all</td><td>3</td><td>0.9000 [0.8, 1.0]</td><td>0.8000 [0.7, 0.9]</td>"
    cells += "<td>+0.1000 [0.0, 0.2]</td>"
    assert cells + "</tr>" in peers.group(0)
    assert "toymab" not in peers.group(0) and "make peers writes" not in peers.group(0)


def test_the_lead_over_the_best_baseline_is_a_table_per_benchmark(sources: report.Sources) -> None:
    """The comparison tables' paired-lead columns (harness.tables.paired_lead) on the page: a row
    per MUSTER system and U that has one, none for baselines; no column anywhere: a note."""
    html = report.page(sources, BENCHES)
    assert "no minus_best column in the comparison tables" in html
    lead_header = HEADER.strip() + ",best_baseline,minus_best,minus_best_ci\n"
    rows = [
        row("muster", 0.5, 0.4, 0.6) + ',bm25,0.1,"[0.0500, 0.1500]"',
        row("muster_native", 0.45, 0.35, 0.55) + ',bm25,0.05,"[-0.0100, 0.1100]"',
        row("bm25", 0.4, 0.3, 0.5) + ",,,",
    ]
    comparison(sources.tables, "toy", "locomo.u10", rows, header=lead_header)
    html = report.page(sources, BENCHES)
    lead = re.search(r'<section id="lead">.*?</section>', html)
    assert lead
    body = lead.group(0)
    assert "<h3>toy</h3>" in body and "toymab" not in body
    assert "<td>locomo.u10</td><td>muster</td><td>evidence_recall</td><td>0.5</td><td>bm25</td>" in body
    assert "<td>muster_native</td><td>evidence_recall</td><td>0.45</td><td>bm25</td><td>0.05</td>" in body
    assert "<td>[-0.0100, 0.1100]</td>" in body
    assert "<td>bm25</td><td>evidence_recall</td>" not in body  # a baseline has no lead
    assert "locomo.u20" not in body  # that table has no lead columns


def test_the_same_inputs_give_the_same_bytes(tmp_path: Path) -> None:
    """scripts/report.py over the committed tables, twice, under other hash seeds (set and dict
    orders): the same bytes."""
    pages = []
    for seed in ("1", "2"):
        out = tmp_path / f"page-{seed}.html"
        command = [sys.executable, str(REPO / "scripts" / "report.py"), "--tables", str(REPO / "results")]
        command += ["--results", str(tmp_path / "runs"), "--expected", str(tmp_path / "none.yaml")]
        env = {**os.environ, "PYTHONHASHSEED": seed}
        subprocess.run([*command, "--out", str(out)], cwd=REPO, env=env, check=True, capture_output=True)
        pages.append(out.read_bytes())
    assert pages[0] == pages[1]
    assert b'class="plot"' in pages[0]


def test_the_page_reads_the_committed_bench_json_and_its_points_match_the_markdown() -> None:
    """Each store of query.md and each level of scale.md is a point of the JSON beside it (the
    page reads the JSON; the counts here are read from the Markdown)."""
    bench = REPO / "results" / "bench"
    sizes = figures.StoreSizes({}, {}, [])
    assert figures.read_bench(bench / "query.json", sizes).startswith("Measured")
    stores = len(re.findall(r"^### ", (bench / "query.md").read_text(encoding="utf-8"), flags=re.M))
    assert len(sizes.build["with embedding (query.md)"]) == stores
    assert len(sizes.query["query p50 (query.md)"]) == stores
    figures.read_bench(bench / "scale.json", sizes)
    builds = len(
        re.findall(r"^\| \S+ build\(\) \|", (bench / "scale.md").read_text(encoding="utf-8"), flags=re.M)
    )
    assert len(sizes.build["without embedding (scale.md)"]) == builds


def test_a_bench_file_is_written_and_read_back(tmp_path) -> None:
    points = figures.StoreSizes({"build (x.md)": [(1000.0, 2.5)]}, {"query p50 (x.md)": [(1000.0, 9.0)]}, [])
    figures.write_bench(tmp_path / "x.md", "# x\n\nMeasured now\n", {"raw": [1, 2]}, points)
    read = figures.StoreSizes({}, {}, [])
    assert figures.read_bench(tmp_path / "x.json", read) == "Measured now"
    assert read == points and (tmp_path / "x.md").read_text() == "# x\n\nMeasured now\n"
    assert json.loads((tmp_path / "x.json").read_text())["data"] == {"raw": [1, 2]}
    (tmp_path / "x.json").write_text('{"schema": 0}')
    with pytest.raises(ValueError, match="not a bench file of schema 1"):
        figures.read_bench(tmp_path / "x.json", read)


def test_the_bench_scripts_points_are_the_series_the_page_plots(tmp_path) -> None:
    """bench_query.py and bench_scale.py turn their measurements into the page's points: a store's
    or a level's tokens against its build and query figures, a level with no query total skipped."""
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        import bench_query
        import bench_scale
    finally:
        sys.path.remove(str(REPO / "scripts"))
    total = {"total": {"p50": 3.5, "p95": 7.0}}
    store = {"tokens": 1000, "build_s": 2.5, "build_without_embedder_s": 0.1, "query_ms": total}
    query = bench_query.points([store])
    assert query.build == QUERY_POINTS.build and query.query == QUERY_POINTS.query
    levels = [
        {
            "level": "1M",
            "tokens": 1e6,
            "build_timings": {"detect": 5.0, "bm25": 3.0, "embed": 99.0},
            "queries": {"total": {"p50": 50.5, "p95": 70.0}},
        },
        {"level": "10M", "tokens": 1e7, "build_timings": {"detect": 80.0}, "queries": {"dense": {}}},
    ]
    scale = bench_scale.points(levels)
    assert scale.build == SCALE_POINTS.build and scale.query == SCALE_POINTS.query
    assert scale.skipped == ["scale.md, 10M: no query total (no vectors: no assembly)"]
