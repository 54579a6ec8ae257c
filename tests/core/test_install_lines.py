"""Every surface without its extra answers one line naming the install that works here (the clone
or wheel this MUSTER came from: muster-memory is not on PyPI), never a traceback: the servers, the
harness, the integrations, and the paper's models offline without torch. Real processes, each
with the one module it needs blocked."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from muster_exact.core.optional import INSTALL_MODELS, Extra
from tests.conftest import REPO

# Block the modules, then run the module as `python -m` would, with these arguments.
RUN = """
import runpy, sys
for name in {blocked!r}:
    sys.modules[name] = None
sys.argv = {argv!r}
runpy.run_module({module!r}, run_name="__main__", alter_sys=True)
"""
# Block the modules, then run the code.
CALL = """
import sys
for name in {blocked!r}:
    sys.modules[name] = None
from muster_exact.core.errors import MusterError
try:
    {code}
except MusterError as exc:
    sys.exit(f"{{type(exc).__name__}}: {{exc}}")
"""


def _refusal(script: str, tmp_path: Path) -> str:
    env = {**os.environ, "PYTHONHASHSEED": "0", "HF_HUB_OFFLINE": "1", "MUSTER_STORE": ""}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=REPO, timeout=300
    )
    assert done.returncode != 0, done.stdout
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr
    return done.stderr.strip()


@pytest.mark.parametrize(
    ("blocked", "module", "args", "extra"),
    [
        (("fastapi",), "muster_exact", ["http", "--store", "s.muster"], "http"),
        (("mcp",), "muster_exact", ["mcp", "--store", "s.muster"], "mcp"),
        (("hydra",), "harness", ["benchmark=locomo"], "harness"),
    ],
)
def test_a_command_without_its_extra_is_one_line_naming_it(
    blocked: tuple[str, ...], module: str, args: list[str], extra: str, tmp_path: Path
) -> None:
    said = _refusal(RUN.format(blocked=blocked, argv=[module, *args], module=module), tmp_path)
    assert str(Extra(extra)) in said and blocked[0] in said, said
    assert not (REPO / "s.muster").exists()


@pytest.mark.parametrize(
    ("blocked", "code", "extra"),
    [
        (("langchain_core",), "from muster_exact.integrations import MusterRetriever", "langchain"),
        (("langgraph",), "from muster_exact.integrations import MusterBaseStore", "langgraph"),
        (
            ("agents",),
            "from muster_exact.integrations.openai_tools import memory_tools; memory_tools(None)",
            "openai-agents",
        ),
    ],
)
def test_an_integration_without_its_framework_is_one_line_naming_the_extra(
    blocked: tuple[str, ...], code: str, extra: str, tmp_path: Path
) -> None:
    said = _refusal(CALL.format(blocked=blocked, code=code), tmp_path)
    assert said.startswith("MissingExtra: ") and str(Extra(extra)) in said, said


def test_the_papers_models_offline_without_torch_say_both_in_one_line(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("The red mug is on the table.\n")
    argv = ["muster", "query", str(notes), "Where is the mug?", "--models", "paper"]
    said = _refusal(
        RUN.format(blocked=("torch", "sentence_transformers"), argv=argv, module="muster_exact"), tmp_path
    )
    assert "cannot fetch model 'BAAI/bge-m3'" in said and "torch and sentence_transformers" in said, said
    assert str(INSTALL_MODELS) in said and "download.pytorch.org/whl/cpu" in said
