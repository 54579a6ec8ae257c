"""Every name README.md and the guides in docs/ use exists, so the front door and the manual
cannot point at what the code no longer has.

What is checked, wherever the documents name it (code spans, fenced blocks, links, tables):

- a repository path (``muster_exact/...``, ``tests/...``, ``Makefile``, a relative link between
  documents, a ``#anchor``): it exists, or it is output a command writes and git ignores
  (``results/runs/...``); ``<name>`` in a path stands for any one name;
- the folders a layout listing names (a ``text`` block whose lines start with a top folder);
- a ``make`` target: the Makefile has it;
- a ``muster`` command: the CLI's parser (``muster_exact/cli/parser.py``) has the subcommand and
  every ``--option`` written after it; an option written alone is one some subcommand has;
- an HTTP route (``POST /v1/add``, ``/v1/info``, a ``curl`` URL): the FastAPI app of
  ``muster_exact/serve/http.py`` has it, with that method;
- an MCP tool (in a table column headed MCP or tool, or a name shaped like one: ``recall``,
  ``forget_all``, ``search_memory``, ``memory_info``): the server of ``muster_exact/serve/mcp.py``
  has it, and every tool it has is named somewhere;
- an environment variable ``MUSTER_...``: the library, the harness, the scripts or the Makefile
  read it; an error or warning class (``StoreFull``, ``muster.ModelFallbackWarning``): the
  library or the harness defines it;
- a wheel's file name: the version is ``pyproject.toml``'s.

The code blocks themselves are run by ``tests/package/test_docs.py``; the design records in
``docs/decisions/`` are history and are not checked here. ``test_each_check_catches_a_wrong_name``
feeds every check a wrong name, so that each is known to be able to fail.
"""

from __future__ import annotations

import asyncio
import builtins
import re
import subprocess
import tomllib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.fast

DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
# A path is checked when it starts at one of these (anything else is a user's file: notes.jsonl).
TOP = (
    ".ci",
    "conf",
    "docs",
    "examples",
    "harness",
    "manifests",
    "muster",
    "muster_exact",
    "results",
    "scripts",
    "tests",
)
TOP_FILES = ("Makefile", "pyproject.toml", "constraints.txt", "mkdocs.yml", "LICENSE", "NOTICE")
PATH = re.compile(
    r"(?<![\w./$~-])((?:" + "|".join(re.escape(t) for t in TOP) + r")/[\w./<>*-]*"
    r"|(?:" + "|".join(re.escape(f) for f in TOP_FILES) + r")(?![\w.]))"
)
LINK = re.compile(r"\]\(([^)\s]+)\)")
MAKE = re.compile(r"(?<![\w-])make ([a-z][a-z0-9-]*)")
MUSTER = re.compile(r"(?<![\w./-])muster(?=\s+\S)")
METHOD_ROUTE = re.compile(r"\b(GET|POST|PUT|PATCH|DELETE) (/[\w/{}.:-]*)")
BARE_ROUTE = re.compile(r"^(/v1/[\w/{}.-]*|/healthz|/readyz|/openapi\.json|/docs)$")
URL_ROUTE = re.compile(r"(?:localhost|127\.0\.0\.1):\d+(/[\w/{}.-]*)")
FLAG = re.compile(r"^--[a-z][a-z-]*")
IDENTIFIER = re.compile(r"^[a-z][a-z0-9_]*$")
TOOL_SHAPED = re.compile(r"^(remember|recall|forget)\w*$|^\w*_memor(y|ies)$|^memory_\w+$")
# Python names of the integrations that look like tool names; they are checked by running the
# documents' code (tests/package/test_docs.py).
NOT_TOOLS = {"memory_tools", "memory_node", "memory_key", "remember_node", "remember_question"}
# Options of other programs that a document shows alone (pip, pytest, mkdocs, the study script).
OTHER_FLAGS = {"--no-deps", "--find-links", "--index-url", "--strict", "--jobs", "--limit"}
WHEEL = re.compile(r"muster_memory-([^-\s]+)-py3-none-any\.whl")
VARIABLE = re.compile(r"(?<![\w])(MUSTER_[A-Z0-9_]*[A-Z0-9])")
CLASS = re.compile(
    r"(?:^|\.)([A-Z][A-Za-z]+(?:Error|Warning|Pending|Conflict|Mismatch|Full|Corrupt|ReadOnly|Unavailable))$"
)


@dataclass
class Names:
    """What one document names, each with where: ``(document:line, name)``."""

    paths: list[tuple[str, str]] = field(default_factory=list)
    links: list[tuple[str, str]] = field(default_factory=list)
    layout: list[tuple[str, str, str]] = field(default_factory=list)  # (where, top folder, name)
    make: list[tuple[str, str]] = field(default_factory=list)
    muster: list[tuple[str, list[str]]] = field(default_factory=list)
    flags: list[tuple[str, str]] = field(default_factory=list)
    routes: list[tuple[str, str | None, str]] = field(default_factory=list)  # (where, method, path)
    tools: list[tuple[str, str]] = field(default_factory=list)
    wheels: list[tuple[str, str]] = field(default_factory=list)
    variables: list[tuple[str, str]] = field(default_factory=list)
    classes: list[tuple[str, str]] = field(default_factory=list)


def spans(line: str) -> list[str]:
    """The code spans of a Markdown line (a table's ``\\|`` is a ``|``)."""
    return [s.replace("\\|", "|") for s in re.findall(r"`([^`]+)`", line)]


def cells(line: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]


def read(text: str, name: str) -> Names:
    """Every name of the kinds above in one document's text. Prose is read a paragraph at a time
    (a code span may run over a line break), and named by the paragraph's first line."""
    found = Names()
    fence: str | None = None
    layout_top: str | None = None
    tool_columns: set[int] = set()
    paragraph: list[str] = []
    start = ""

    def flush() -> None:
        if paragraph:
            read_prose(found, start, " ".join(paragraph))
            paragraph.clear()

    for number, line in enumerate(text.splitlines(), start=1):
        where = f"{name}:{number}"
        found.wheels += [(where, version) for version in WHEEL.findall(line)]
        found.variables += [(where, variable) for variable in VARIABLE.findall(line)]
        opened = re.match(r"^```(\S*)\s*$", line)
        if fence is None and opened:
            flush()
            fence, layout_top = opened.group(1), None
        elif fence is not None and line.startswith("```"):
            fence = None
        elif fence is not None:
            if fence == "text":
                layout_top = read_layout_line(found, where, line, layout_top)
            if layout_top is None:  # a layout's lines name folders under their top folder
                read_block_line(found, where, fence, line)
        elif line.lstrip().startswith("|"):
            flush()
            read_prose(found, where, line)
            tool_columns = read_row(found, where, line, tool_columns)
        elif not line.strip() or line.startswith("#"):
            flush()
            read_prose(found, where, line)
        else:
            if not paragraph:
                start = where
            paragraph.append(line.strip())
            tool_columns = set()
    flush()
    return found


def read_row(found: Names, where: str, line: str, tool_columns: set[int]) -> set[int]:
    """A table row; a header row says which columns hold MCP tool names (headed MCP or tool)."""
    row = cells(line)
    if re.match(r"^[-: |]+$", line.strip()):
        return tool_columns
    if not any("`" in c for c in row):
        return {i for i, c in enumerate(row) if c.lower() in ("mcp", "tool")}
    for i in tool_columns & set(range(len(row))):
        found.tools += [(where, span) for span in spans(row[i]) if IDENTIFIER.match(span)]
    return tool_columns


def read_prose(found: Names, where: str, text: str) -> None:
    for target in LINK.findall(text):
        if not re.match(r"^[a-z]+:", target):  # not http:, mailto:
            found.links.append((where, target))
    for method, route in METHOD_ROUTE.findall(text):
        found.routes.append((where, method, route))
    for span in spans(text):
        read_span(found, where, span)
        if BARE_ROUTE.match(span):
            found.routes.append((where, None, span))
        if FLAG.match(span) and " " not in span.split("=")[0]:
            found.flags.append((where, span.split("=")[0].split()[0]))
        if IDENTIFIER.match(span) and TOOL_SHAPED.match(span) and span not in NOT_TOOLS:
            found.tools.append((where, span))
        found.classes += [(where, name) for name in CLASS.findall(span)]


def read_span(found: Names, where: str, span: str) -> None:
    found.paths += [(where, p) for p in PATH.findall(span)]
    found.make += [(where, t) for t in MAKE.findall(span)]
    for match in MUSTER.finditer(span):
        found.muster.append((where, span[match.end() :].split()))


def read_block_line(found: Names, where: str, fence: str, line: str) -> None:
    if fence == "python":
        return  # run by tests/package/test_docs.py
    if fence in ("sh", ""):
        code = line.split(" #")[0] if not line.lstrip().startswith("#") else ""
        read_span(found, where, code)
        for route in URL_ROUTE.findall(code):
            found.routes.append((where, "POST" if " -d " in code else "GET", route))
    elif fence == "text":
        found.paths += [(where, p) for p in PATH.findall(line) if not p.endswith("/") or "/" in p[:-1]]


def read_layout_line(found: Names, where: str, line: str, top: str | None) -> str | None:
    """A layout listing: ``folder/   what it holds: sub/ (...), other/``; each ``sub/`` is a folder
    somewhere under ``folder``."""
    head = re.match(r"^([\w.-]+)/\s", line)
    if head and head.group(1) in TOP:
        top = head.group(1)
        line = line[head.end() :]
    if top is not None:
        for name in re.findall(r"(?<![\w/.])([\w-]+)/(?![\w])", line):
            found.layout.append((where, top, name))
    return top


def every(names: Iterable[Names], kind: str) -> list[Any]:
    return [item for n in names for item in getattr(n, kind)]


@pytest.fixture(scope="module")
def documents() -> dict[str, Names]:
    return {
        str(d.relative_to(REPO)): read(d.read_text(encoding="utf-8"), str(d.relative_to(REPO)))
        for d in DOCUMENTS
    }


# --- paths -----------------------------------------------------------------------------------


def expanded(path: str) -> str:
    return re.sub(r"<[^>]*>", "*", path.rstrip("/."))


def ignored(path: str) -> bool:
    """Whether git ignores ``path`` (written by a command, never committed: results/runs/...)."""
    done = subprocess.run(
        ["git", "check-ignore", "-q", "--no-index", path],
        cwd=REPO,
        capture_output=True,
    )
    return done.returncode == 0


def path_exists(path: str) -> bool:
    pattern = expanded(path)
    if not pattern:
        return True
    found = any(REPO.glob(pattern)) if "*" in pattern else (REPO / pattern).exists()
    return found or ignored(re.sub(r"<[^>]*>", "x", path))


def headings(document: Path) -> set[str]:
    """The anchors of a document's headings, as GitHub and mkdocs' toc make them."""
    slugs = set()
    for line in document.read_text(encoding="utf-8").splitlines():
        heading = re.match(r"^#+\s+(.*)$", line)
        if heading:
            text = re.sub(r"[`*]", "", heading.group(1)).strip().lower()
            slugs.add(re.sub(r"\s+", "-", re.sub(r"[^\w\s-]", "", text)))
    return slugs


def missing_paths(names: dict[str, Names]) -> list[str]:
    missing = [f"{w}: {p}" for n in names.values() for w, p in n.paths if not path_exists(p)]
    for document, n in names.items():
        here = (REPO / document).parent
        for where, target in n.links:
            file, _, anchor = target.partition("#")
            linked = (here / file) if file else REPO / document
            if not linked.exists():
                missing.append(f"{where}: link {target}")
            elif anchor and linked.suffix == ".md" and anchor not in headings(linked):
                missing.append(f"{where}: link {target} (no such heading)")
    for where, top, name in every(names.values(), "layout"):
        folders = [p for p in (REPO / top).rglob(name) if p.is_dir() and "__pycache__" not in p.parts]
        if not folders and not ignored(f"{top}/{name}/"):
            missing.append(f"{where}: {top}/.../{name}/")
    return missing


def test_every_path_and_link_exists(documents: dict[str, Names]) -> None:
    assert sum(len(n.paths) for n in documents.values()) > 50
    missing = missing_paths(documents)
    assert not missing, "named in the documents, not in the repository:\n" + "\n".join(missing)


def test_a_wheel_is_named_with_the_projects_version(documents: dict[str, Names]) -> None:
    version = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    wheels = every(documents.values(), "wheels")
    assert wheels, "README.md names the wheel `pip wheel` writes"
    wrong = [f"{w}: {v}" for w, v in wheels if v != version]
    assert not wrong, f"pyproject.toml's version is {version}: {wrong}"


# --- environment variables and error classes --------------------------------------------------


def sources() -> str:
    files = [p for top in ("muster_exact", "harness", "scripts") for p in (REPO / top).rglob("*.py")]
    return "\n".join(p.read_text(encoding="utf-8") for p in [*files, REPO / "Makefile"])


def missing_variables(names: Iterable[Names], code: str) -> list[str]:
    return [f"{w}: {v}" for w, v in every(names, "variables") if not re.search(rf"\b{v}\b", code)]


def missing_classes(names: Iterable[Names], code: str) -> list[str]:
    return [
        f"{w}: {c}"
        for w, c in every(names, "classes")
        if not hasattr(builtins, c) and not re.search(rf"^class {c}\b", code, re.M)
    ]


def test_every_environment_variable_is_read(documents: dict[str, Names]) -> None:
    assert len(every(documents.values(), "variables")) > 10
    missing = missing_variables(documents.values(), sources())
    assert not missing, "no code reads:\n" + "\n".join(missing)


def test_every_error_and_warning_class_exists(documents: dict[str, Names]) -> None:
    assert len(every(documents.values(), "classes")) > 10
    missing = missing_classes(documents.values(), sources())
    assert not missing, "no such class in the library or the harness:\n" + "\n".join(missing)


# --- make and muster -------------------------------------------------------------------------


def make_targets() -> set[str]:
    text = (REPO / "Makefile").read_text(encoding="utf-8")
    return set(re.findall(r"^([a-z][a-z0-9-]*):", text, flags=re.MULTILINE))


def missing_targets(names: Iterable[Names]) -> list[str]:
    targets = make_targets()
    return [f"{w}: make {t}" for w, t in every(names, "make") if t not in targets]


def test_every_make_target_exists(documents: dict[str, Names]) -> None:
    assert {t for _, t in every(documents.values(), "make")} >= {"reproduce", "test"}
    missing = missing_targets(documents.values())
    assert not missing, "no such target in the Makefile:\n" + "\n".join(missing)


def cli() -> tuple[dict[str, set[str]], set[str]]:
    """``{"query": {"--store", ...}, "verify cuts": {...}}`` and the options before a command."""
    import argparse

    from muster_exact.cli import build_parser

    def options(parser: argparse.ArgumentParser) -> set[str]:
        return {s for action in parser._actions for s in action.option_strings}

    def commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                return dict(action.choices)
        return {}

    parser = build_parser()
    found: dict[str, set[str]] = {}
    for name, sub in commands(parser).items():
        found[name] = options(sub)
        for check, nested in commands(sub).items():
            found[f"{name} {check}"] = options(nested)
    return found, options(parser)


def missing_commands(names: Iterable[Names]) -> list[str]:
    commands, leading = cli()
    missing = []
    for where, words in every(names, "muster"):
        words = [w.strip("[]()\"'.,;") for w in words]
        while words and words[0] in leading:
            words = words[1:]
        if not words or not re.match(r"^[a-z][a-z-]*$", words[0]):
            continue  # `muster -q ...`: no command named
        command = words[0]
        if command not in commands:
            missing.append(f"{where}: muster {command}")
            continue
        checks = {c.split()[1] for c in commands if c.startswith(f"{command} ")}
        if checks and len(words) > 1 and re.match(r"^[a-z]+$", words[1]):  # `muster verify cuts`
            if words[1] not in checks:
                missing.append(f"{where}: muster {command} {words[1]}")
                continue
            command = f"{command} {words[1]}"
        for word in words[1:]:
            flag = FLAG.match(word)
            if flag and flag.group(0) not in commands[command] | leading:
                missing.append(f"{where}: muster {command} {flag.group(0)}")
    return missing


def missing_flags(names: Iterable[Names]) -> list[str]:
    commands, leading = cli()
    known = set().union(*commands.values(), leading, OTHER_FLAGS)
    return [f"{w}: {f}" for w, f in every(names, "flags") if f not in known]


def test_every_muster_command_and_option_exists(documents: dict[str, Names]) -> None:
    named = {words[0] for _, words in every(documents.values(), "muster") if words}
    assert named >= {"derive", "query", "add", "forget", "update", "http", "mcp"}
    missing = missing_commands(documents.values()) + missing_flags(documents.values())
    assert not missing, "the CLI (muster_exact/cli/parser.py) has no:\n" + "\n".join(missing)


# --- HTTP routes and MCP tools ----------------------------------------------------------------


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> tuple[set[tuple[str, str]], set[str]]:
    """The HTTP app's ``(method, path)`` routes (``{...}`` for a parameter) and the MCP tools'
    names, from the real servers over an empty store."""
    pytest.importorskip("fastapi")
    pytest.importorskip("mcp")
    from muster_exact.serve.backend import Backend
    from muster_exact.serve.http import create_app
    from muster_exact.serve.mcp import create_server

    backend = Backend(tmp_path_factory.mktemp("served") / "docs.muster", models="cpu-small")
    routes = {
        (method, re.sub(r"\{[^}]*\}", "{}", route.path))
        for route in create_app(backend, declared_records=True).app.routes
        for method in (getattr(route, "methods", None) or {"GET"})
    }
    tools = {tool.name for tool in asyncio.run(create_server(backend).list_tools())}
    return routes, tools


def missing_routes(names: Iterable[Names], routes: set[tuple[str, str]]) -> list[str]:
    missing = []
    for where, method, path in every(names, "routes"):
        path = re.sub(r"\{[^}]*\}", "{}", path)
        if method is None and not any(p == path for _, p in routes):
            missing.append(f"{where}: {path}")
        elif method is not None and (method, path) not in routes:
            missing.append(f"{where}: {method} {path}")
    return missing


def missing_tools(names: Iterable[Names], tools: set[str]) -> list[str]:
    return [f"{where}: {name}" for where, name in every(names, "tools") if name not in tools]


def test_every_http_route_exists(
    documents: dict[str, Names], served: tuple[set[tuple[str, str]], set[str]]
) -> None:
    assert len(every(documents.values(), "routes")) > 20
    missing = missing_routes(documents.values(), served[0])
    assert not missing, "the HTTP app (muster_exact/serve/http.py) has no:\n" + "\n".join(missing)


def test_every_mcp_tool_exists(
    documents: dict[str, Names], served: tuple[set[tuple[str, str]], set[str]]
) -> None:
    assert {name for _, name in every(documents.values(), "tools")} >= served[1]
    missing = missing_tools(documents.values(), served[1])
    assert not missing, "the MCP server (muster_exact/serve/mcp.py) has no tool:\n" + "\n".join(missing)


# --- each check can fail ----------------------------------------------------------------------

WRONG = """\
See `harness/scorers/locomo.py` and [the guide](no-such-guide.md), then `make reproduse`.

```text
harness/        the harness: stages/, scorers/
```

```sh
muster qurey notes.txt "Q"
muster query --store F --wher '{}'
curl -s localhost:8765/v1/ad -d '{}'
```

Run `muster verify hashes`, set `--max-opened-namespaces`, send `DELETE /v1/records/{id}`, read
`/v1/infos`, and call the MCP `delete_memory` tool (not the MCP `forget` tool).
Built as `muster_memory-9.9.9-py3-none-any.whl`; set `MUSTER_STOR`; catch `StoreIsFull`.

| call | MCP |
|---|---|
| forget | `erase_memory` |
"""


def wrong_names() -> Iterator[tuple[str, list[str]]]:
    names = read(WRONG, "wrong.md")
    yield "paths", missing_paths({"README.md": names})
    yield "make", missing_targets([names])
    yield "muster", missing_commands([names]) + missing_flags([names])
    yield "wheel", [v for _, v in names.wheels if v == "9.9.9"]
    yield "variables", missing_variables([names], sources())
    yield "classes", missing_classes([names], sources())


def test_each_check_catches_a_wrong_name(
    served: tuple[set[tuple[str, str]], set[str]],
) -> None:
    found = dict(wrong_names())
    names = read(WRONG, "wrong.md")
    found["routes"] = missing_routes([names], served[0])
    found["tools"] = missing_tools([names], served[1])
    expected = {
        "paths": ["harness/scorers/locomo.py", "link no-such-guide.md", "harness/.../scorers/"],
        "make": ["make reproduse"],
        "muster": ["muster qurey", "muster query --wher", "muster verify hashes", "--max-opened-namespaces"],
        "wheel": ["9.9.9"],
        "variables": ["MUSTER_STOR"],
        "classes": ["StoreIsFull"],
        "routes": ["POST /v1/ad", "DELETE /v1/records/{}", "/v1/infos"],
        "tools": ["delete_memory", "erase_memory"],
    }
    for kind, wrong in expected.items():
        caught = "\n".join(found[kind])
        assert all(name in caught for name in wrong), f"{kind}: {wrong} not all caught in\n{caught}"
    # and nothing right is taken for wrong
    assert not any("stages" in line for line in found["paths"]), found["paths"]
    assert not any("forget" in line for line in found["tools"]), found["tools"]


def test_the_readme_keeps_the_two_set_up_commands() -> None:
    """``.ci/run`` runs the README's test command; the README shows exactly the two."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    lines = [line.split("#")[0].strip() for line in readme.splitlines()]
    assert "make reproduce" in lines and "make test" in lines
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert "make test" in [line.strip() for line in ci]
    assert len(readme.splitlines()) <= 210, "the README is a front door; the manual lives in docs/"


def test_every_guide_is_in_the_site_nav() -> None:
    nav = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    pages = {p.name for p in (REPO / "docs").glob("*.md")}
    absent = sorted(p for p in pages if f": {p}" not in nav)
    assert not absent, f"add to mkdocs.yml's nav: {absent}"
