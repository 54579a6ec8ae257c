"""Every code block of README.md and docs/*.md runs, so the documents cannot drift from the code.

Blocks are fenced, and the fence names the language:

- ``python``: the blocks of one document run in order in one fresh process (one namespace, as a
  reader types them), in an empty folder, as a new user on a machine with no model hub;
- ``json``: parsed;
- ``sh``: each command is the real thing. ``muster`` commands that read or write a file
  (derive, add, query, forget, info, presets) run in that folder, in order, on small input files
  the test writes; the others (servers, the long verify checks) are parsed by the CLI's own
  parser. ``python -m harness`` overrides are composed by Hydra and checked by
  ``harness.checks.check``; ``make`` targets must exist; ``curl`` lines are the ones
  ``tests/serve/test_http.py`` sends to a real server; ``pip install`` extras must exist;
- ``text``: not code (a layout listing).

The reference site is built with ``mkdocs build --strict`` (docs/api.md is generated from the
docstrings), and a reference to a name the code lacks breaks it.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REPO, no_hub_env, run_muster

pytestmark = pytest.mark.slow

DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
LANGUAGES = {"python", "sh", "json", "text"}
FENCE = re.compile(r"^```(\S*)\s*$")
# The muster commands a document's shell block runs for real; the rest are parsed only.
RUN = {"derive", "add", "query", "forget", "info", "presets", "list", "export", "import", "update"}
# Commands a shell block may show that are about the machine, not this project.
MACHINE = {"export", "cd", "git"}

INPUTS = {
    "notes.txt": "Caroline moved to Lisbon last month.\n\nMelanie asked how she likes the city.\n",
    "chat.jsonl": '{"speaker": "Caroline", "time": "2023-05-08", "text": "I moved to Lisbon."}\n'
    '{"speaker": "Melanie", "time": "2023-05-08", "text": "How do you like the city?"}\n',
    "notes.jsonl": '{"speaker": "Ana", "text": "The demo is on Thursday at ten."}\n'
    '{"speaker": "Bruno", "text": "The slides are in the shared folder."}\n',
}


@dataclass(frozen=True)
class Block:
    document: Path
    line: int
    language: str
    text: str

    def where(self) -> str:
        return f"{self.document.relative_to(REPO)}:{self.line}"


def blocks(document: Path) -> list[Block]:
    found: list[Block] = []
    opened: tuple[int, str] | None = None
    lines: list[str] = []
    for number, line in enumerate(document.read_text(encoding="utf-8").splitlines(), start=1):
        fence = FENCE.match(line)
        if opened is None and fence:
            opened, lines = (number, fence.group(1)), []
        elif opened is not None and line.startswith("```"):
            found.append(Block(document, opened[0], opened[1], "\n".join(lines) + "\n"))
            opened = None
        elif opened is not None:
            lines.append(line)
    assert opened is None, f"{document.relative_to(REPO)}:{opened[0]}: a fence is never closed"
    return found


ALL = [block for document in DOCUMENTS for block in blocks(document)]


def test_every_block_names_its_language() -> None:
    unnamed = [f"{b.where()} ({b.language or 'no language'})" for b in ALL if b.language not in LANGUAGES]
    assert not unnamed, f"fence each code block with one of {sorted(LANGUAGES)}: {unnamed}"
    assert {b.language for b in ALL} >= {"python", "sh", "json"}


# A reader runs the blocks with their venv active: its console scripts (`muster`, which the MCP
# client example starts) first on PATH.
ACTIVE_VENV_PATH = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])


@pytest.mark.parametrize("document", [d for d in DOCUMENTS if any(b.language == "python" for b in blocks(d))])
def test_the_python_blocks_run(document: Path, tmp_path: Path) -> None:
    code = [b for b in blocks(document) if b.language == "python"]
    driver = (
        "import json, sys, traceback\n"
        "namespace = {'__name__': '__main__'}\n"
        "for where, text in json.loads(sys.argv[1]):\n"
        "    try:\n"
        "        exec(compile(text, where, 'exec'), namespace)\n"
        "    except BaseException:\n"
        "        traceback.print_exc()\n"
        "        sys.exit(f'block at {where} failed')\n"
    )
    blocks_json = json.dumps([(b.where(), b.text) for b in code])
    done = subprocess.run(
        [sys.executable, "-c", driver, blocks_json],
        cwd=tmp_path,
        env={**no_hub_env(tmp_path), "PYTHONPATH": str(REPO), "PATH": ACTIVE_VENV_PATH},
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]


def test_the_json_blocks_parse() -> None:
    for block in (b for b in ALL if b.language == "json"):
        json.loads(block.text)


def pipelines(block: Block) -> list[list[list[str]]]:
    """The block's command lines as the shell splits them (comments dropped), each a pipeline:
    ``echo X | muster add ...`` is ``[["echo", "X"], ["muster", "add", ...]]``."""
    out: list[list[list[str]]] = []
    for line in block.text.splitlines():
        words = shlex.split(line, comments=True)
        if words:
            pipeline: list[list[str]] = [[]]
            for word in words:
                pipeline.append([]) if word == "|" else pipeline[-1].append(word)
            out.append(pipeline)
    return out


def make_targets() -> set[str]:
    text = (REPO / "Makefile").read_text(encoding="utf-8")
    return set(re.findall(r"^([a-z][a-z-]*):", text, flags=re.MULTILINE))


def extras() -> set[str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return set(project["optional-dependencies"])


def check_harness(words: list[str]) -> None:
    from hydra import compose, initialize_config_dir

    from harness.checks import check
    from harness.config import register

    overrides = [w for w in words if not w.startswith("-") and not w.startswith("hydra/")]
    for launcher in (w.split("=", 1)[1] for w in words if w.startswith("hydra/launcher=")):
        module = {
            "joblib": "hydra_plugins.hydra_joblib_launcher",
            "submitit_local": "hydra_plugins.hydra_submitit_launcher",
        }
        pytest.importorskip(module[launcher])
    from hydra.core.override_parser.overrides_parser import OverridesParser

    # Hydra's own parser expands a sweep (a=1,2) and leaves a list value (a=[1,2]) whole.
    swept = [
        [f"{o.get_key_element()}={v}" for v in o.sweep_string_iterator()] if o.is_sweep_override() else [raw]
        for raw, o in zip(overrides, OverridesParser.create().parse_overrides(overrides), strict=True)
    ]
    register()
    with initialize_config_dir(version_base="1.3", config_dir=str(REPO / "conf")):
        for combination in itertools.product(*swept):
            check(compose("config", overrides=list(combination)))


def check_muster(
    words: list[str], cwd: Path, env: dict[str, str], stdin: str | None, out: str | None = None
) -> None:
    """Parsed by the CLI's parser; run for real when in ``RUN`` (``out``: where ``> FILE`` puts
    its standard output, for the next command to read)."""
    from muster_exact.cli import build_parser

    try:
        build_parser().parse_args(words)
    except SystemExit as exc:
        raise AssertionError(f"muster {' '.join(words)}: the CLI refuses it (exit {exc.code})") from None
    if words[0] in RUN:
        done = run_muster(*words, env=env, cwd=cwd, stdin=stdin, timeout=600)
        assert done.returncode == 0, f"muster {' '.join(words)}: {done.stderr}"
        if out is not None:
            (cwd / out).write_text(done.stdout, encoding="utf-8")


def test_the_shell_blocks_are_real_commands(tmp_path: Path) -> None:
    from tests.serve.test_http import readme_curl_lines

    for name, text in INPUTS.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    env = {**no_hub_env(tmp_path), "PYTHONPATH": str(REPO)}
    curls = {line.split("#")[0].strip() for line in readme_curl_lines()}
    ran = 0
    for block in (b for b in ALL if b.language == "sh"):
        for pipeline in pipelines(block):
            stdin = None
            if pipeline[0][0] == "echo" and len(pipeline) == 2:  # its text is the command's input
                stdin, pipeline = " ".join(pipeline[0][1:]) + "\n", pipeline[1:]
            assert len(pipeline) == 1, f"{block.where()}: no rule for this pipeline in {__file__}"
            words, out = pipeline[0], None
            if ">" in words:  # `muster export ... > dump.jsonl`: the next command reads the file
                at = words.index(">")
                words, out = words[:at], words[at + 1]
            where = f"{block.where()}: {' '.join(words)}"
            if words[0] == "muster":
                check_muster(words[1:], tmp_path, env, stdin, out)
                ran += words[1] in RUN
            elif words[:3] == ["python", "-m", "harness"]:
                check_harness(words[3:])
            elif words[0] == "make":
                assert set(words[1:]) <= make_targets(), where
            elif words[0] == "curl":
                assert block.document.name == "README.md" and shlex.join(words) in {
                    shlex.join(shlex.split(c)) for c in curls
                }, where
            elif words[:2] == ["pip", "wheel"]:  # the README's wheel, built from the clone
                assert words[-1] == "." and "--no-deps" in words, where
            elif words[:2] == ["pip", "install"]:
                named = {e for w in words[2:] for e in re.findall(r"\[([^\]]*)\]", w) for e in e.split(",")}
                assert named <= extras(), where
            else:
                assert words[0] in MACHINE, f"{where}: no rule for this command in {__file__}"
    assert ran >= 7  # the README's derive and store session ran for real


def test_the_reference_builds_strict_and_a_missing_name_breaks_it(tmp_path: Path) -> None:
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent))
    if mkdocs is None:
        pytest.skip("mkdocs is not installed (pip install 'muster-memory[docs]')")
    built = subprocess.run(
        [mkdocs, "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr
    assert (tmp_path / "site" / "api" / "index.html").read_text(encoding="utf-8").count(
        "build_collection"
    ) > 0
    # The same site with one reference renamed, as a rename in the code would leave it.
    docs = tmp_path / "docs"
    shutil.copytree(REPO / "docs", docs)
    api = docs / "api.md"
    api.write_text(
        api.read_text(encoding="utf-8").replace("memory.build\n", "memory.build_renamed\n"), "utf-8"
    )
    config = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    config = config.replace("docs_dir: docs", f"docs_dir: {docs}").replace("paths: [.]", f"paths: [{REPO}]")
    (tmp_path / "mkdocs.yml").write_text(config, encoding="utf-8")
    broken = subprocess.run(
        [mkdocs, "build", "--strict", "-f", str(tmp_path / "mkdocs.yml"), "--site-dir", str(tmp_path / "b")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert broken.returncode != 0 and "build_renamed" in broken.stderr
