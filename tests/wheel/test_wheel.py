"""The wheel works on its own: built from the working tree, installed outside the clone, run there.

The tree git sees (tracked and new, not ignored) is copied to a temporary folder and the wheel is
built there (``pip wheel --no-build-isolation``: the installed setuptools, no network), so the
build writes nothing into the clone. It is installed by pip into a fresh virtual environment
outside the clone (console script included), whose one ``.pth`` file lends it this
interpreter's site-packages for the dependencies (installing torch and the rest again would
take minutes and a registry), and run from a working directory outside the clone. A ``.pth``
line adds a folder without running the ``.pth`` files in it, so an editable install of a clone
there stays inactive; every test still holds each loaded ``muster``/``muster_exact`` module to
the fresh environment.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from muster_exact.memory import presets
from tests.conftest import REPO, no_hub_env

RECORDS = [
    {"speaker": "Caroline", "time": "2023-05-08", "text": "I moved to Lisbon last month for the new job."},
    {"speaker": "Melanie", "time": "2023-05-08", "text": "How do you like the city so far?"},
    {"speaker": "Caroline", "time": "2023-05-09", "text": "The light is lovely and the trams are slow."},
]
QUESTION = "Where does Caroline live now?"

# Run by the installed wheel's Python: the seed README's quick start, a preset, the same
# integration modules under both names, and nothing imported from the clone.
QUICK_START = """
import json, os, sys
import muster, muster_exact

records = json.loads(sys.argv[1])
mem = muster.build(records)  # the seed quick start: no models named
text = mem.context(sys.argv[2]).text
explained = muster.explain(mem.plan)
frozen = muster.build("\\n\\n".join(r["text"] for r in records), "beam.u20", models="cpu-small")

import muster.integrations.openai_tools, muster_exact.integrations.openai_tools
same = muster.integrations is muster_exact.integrations and (
    muster.integrations.openai_tools is muster_exact.integrations.openai_tools
)
ours = {name: getattr(m, "__file__", None) for name, m in sys.modules.items()
        if name.split(".")[0] in ("muster", "muster_exact", "harness")}
print(json.dumps({"text": text, "explained": explained, "preset_units": frozen.plan.units_read,
                  "same_integrations": same, "modules": ours,
                  "path": [os.path.realpath(entry) for entry in sys.path]}))
"""


@dataclass(frozen=True)
class Installed:
    wheel: Path
    venv: Path  # the fresh environment the wheel is installed in
    site: Path  # its site-packages
    cwd: Path  # outside the clone

    @property
    def python(self) -> str:
        return str(self.venv / "bin" / "python")

    def env(self) -> dict[str, str]:
        """A new user's shell: no model hub, no $MUSTER_MODELS, nothing of the clone's on the path."""
        shell = no_hub_env(self.cwd).items()
        env = {k: v for k, v in shell if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
        return {**env, "PYTHONHASHSEED": "0"}

    def run(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            args, capture_output=True, text=True, cwd=self.cwd, env=self.env(), timeout=timeout
        )

    def muster(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.run(self.python, "-m", "muster", *args)


def tree_as_git_sees_it(into: Path) -> None:
    listed = (
        subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=REPO,
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .split("\0")
    )
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file():  # a tracked file deleted in the working tree is not built
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, into / name)


PIP = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("the wheel is built from a git checkout")
    root = tmp_path_factory.mktemp("wheel")
    source, dist = root / "src", root / "dist"
    tree_as_git_sees_it(source)
    build = [*PIP, "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", str(dist), str(source)]
    built = subprocess.run(build, cwd=root, capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stdout + built.stderr
    (found,) = dist.glob("muster_memory-*.whl")
    return found


def fresh_venv(root: Path) -> tuple[Path, Path, str]:
    """A new virtual environment under ``root`` (no pip of its own: this interpreter's pip installs
    into it), its site-packages, and its Python."""
    venv = root / "venv"
    made = subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)], capture_output=True, text=True
    )
    assert made.returncode == 0, made.stderr
    site = venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    return venv, site, str(venv / "bin" / "python")


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    root = tmp_path_factory.mktemp("installed")
    cwd = root / "run"
    cwd.mkdir()
    venv, site, python = fresh_venv(root)
    lent = {sysconfig.get_paths()[key] for key in ("purelib", "platlib")}  # the dependencies
    (site / "dependencies.pth").write_text("".join(f"{path}\n" for path in sorted(lent)), encoding="utf-8")
    install = [*PIP, "--python", python, "install", "--no-deps", "--no-index", str(wheel)]
    done = subprocess.run(install, cwd=root, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    yield Installed(wheel, venv, site, cwd)


def assert_from_the_wheel(installed: Installed, modules: dict[str, str | None]) -> None:
    assert "muster" in modules and "muster_exact" in modules
    for name, file in modules.items():
        assert file is not None and Path(file).is_relative_to(installed.site), (name, file)


def test_the_wheel_carries_the_library_and_the_files_it_reads_and_not_the_harness(
    installed: Installed,
) -> None:
    names = set(zipfile.ZipFile(installed.wheel).namelist())
    tops = {name.split("/")[0] for name in names}
    assert tops == {"muster", "muster_exact", installed.wheel.name.split("-py")[0] + ".dist-info"}
    assert {"muster/py.typed", "muster_exact/py.typed", "muster_exact/manifests/cuts.json"} <= names
    licences = {name.rsplit("/", 1)[-1] for name in names if ".dist-info/" in name}
    assert {"LICENSE", "NOTICE"} <= licences  # Apache-2.0 asks for both to travel with the code
    assert {f"muster_exact/conf/preset/{name}.yaml" for name in presets.names()} <= names
    shipped = REPO / "muster_exact" / "manifests"
    contexts = {path.relative_to(REPO).as_posix() for path in shipped.glob("contexts/*/*/*.json")}
    assert contexts and contexts <= names
    # The pages muster http serves (the inspector, the API reference): every file of the folder.
    pages = REPO / "muster_exact" / "serve" / "inspector"
    assert {path.relative_to(REPO).as_posix() for path in pages.iterdir()} <= names


def test_the_quick_start_runs_from_the_installed_wheel(installed: Installed) -> None:
    result = installed.run(installed.python, "-c", QUICK_START, json.dumps(RECORDS), QUESTION)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert "I moved to Lisbon last month" in out["text"]
    assert out["explained"].strip() and out["preset_units"] == 20  # beam.u20 read from the wheel
    assert out["same_integrations"] is True
    assert_from_the_wheel(installed, out["modules"])
    # Nothing of the clone is on the path but the dependencies' folders the .pth lends (make puts
    # .venv inside the clone; assert_from_the_wheel has shown no module of ours came from there).
    lent = {Path(sysconfig.get_paths()[key]).resolve() for key in ("purelib", "platlib")}
    inside = [p for p in map(Path, out["path"]) if p.is_relative_to(REPO.resolve()) and p not in lent]
    assert not inside, out["path"]


def test_the_cli_runs_from_the_installed_wheel(installed: Installed) -> None:
    listed = installed.run(str(installed.venv / "bin" / "muster"), "presets")  # the console script
    assert listed.returncode == 0, listed.stderr
    assert all(name in listed.stdout for name in presets.names())
    chat = installed.cwd / "chat.jsonl"
    chat.write_text("".join(json.dumps(record) + "\n" for record in RECORDS), encoding="utf-8")
    derived = installed.muster("derive", str(chat))
    assert derived.returncode == 0, derived.stderr
    assert "record" in derived.stdout
    answered = installed.muster("query", str(chat), QUESTION, "--models", "cpu-small")
    assert answered.returncode == 0, answered.stderr
    assert "I moved to Lisbon last month" in answered.stdout


def test_verify_reads_the_manifests_shipped_in_the_wheel(installed: Installed, data: Path) -> None:
    locomo = installed.cwd / "data" / "locomo"
    locomo.mkdir(parents=True)
    (locomo / "locomo10.json").symlink_to(data / "locomo" / "locomo10.json")
    cuts = installed.muster("verify", "cuts", "--data", str(locomo.parent))
    manifest = installed.site / "muster_exact" / "manifests" / "cuts.json"
    assert f"against {manifest}" in cuts.stdout, cuts.stdout + cuts.stderr
    pinned = len(json.loads(manifest.read_text())["stores"])
    assert f"\n10 of {pinned} stores OK, {pinned - 10} FAIL" in cuts.stdout  # LoCoMo's 10, the rest absent
    # The context manifests are read before the data root is checked ("no context manifests under"
    # if they were not found): an error about the data says they were.
    empty = installed.cwd / "no-data"
    empty.mkdir()
    contexts = installed.muster("verify", "contexts", "--data", str(empty))
    assert contexts.returncode == 2 and "no benchmark stores under" in contexts.stderr, contexts.stderr
