"""Which models a store's reads use: the namespace records its embedder, and reads keep to it.

A namespace is embedded by one model. Its cached vectors are keyed by model, so two embedders
never mix in one score, but a read with another embedder than the one before would quietly
answer differently (``auto`` picks the paper's models once the hub answers, cpu-small before).
So the first read records the embedder in ``meta`` (``embedder:<namespace>``), and then:

* no profile named (``auto``, by default, or a preset's own): the recorded embedder's profile, said
  as the reason;
* a profile whose embedder is the recorded one: that profile;
* any other: :class:`EmbedderMismatch`, naming both and how to re-embed
  (``Store.open(..., reembed=True)``, ``muster query --store F --models M --reembed``), which
  records the new embedder and embeds every unit anew on the next read.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from pathlib import Path

from muster_exact.core.errors import EmbedderMismatch
from muster_exact.memory import models_for, named_models
from muster_exact.models import PROFILES, Models, from_directory


def key(namespace: str) -> str:
    return f"embedder:{namespace}"


def recorded(db: sqlite3.Connection, namespace: str) -> str | None:
    row = db.execute("SELECT value FROM meta WHERE key = ?", (key(namespace),)).fetchone()
    return None if row is None else str(row[0])


def record(db: sqlite3.Connection, namespace: str, embedder: str) -> None:
    db.execute(
        "INSERT INTO meta VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (key(namespace), embedder),
    )


def chosen(
    preset: str | None,
    models: str | Models | None,
    embedder: str | None,
    namespace: str,
    reembed: bool = False,
) -> Models:
    """The models a read of ``namespace`` uses, given the embedder it recorded (None: none yet).
    A preset's models are not named ones: like ``auto``, they give way to the recorded embedder."""
    if named_models(models) is None and embedder is not None and not reembed:
        return _recorded_profile(embedder, namespace)
    picked = models_for(preset, models)
    if embedder is not None and picked.embedder.key != embedder and not reembed:
        built_with = _profile_of(embedder) or embedder
        raise EmbedderMismatch(
            f"namespace {namespace!r} of the store was embedded with {embedder}; these reads would "
            f"use {picked.embedder.key} (models {picked.name}), and vectors of two embedders do not "
            f"compare. Read it with the models it was built with (--models {built_with}), or "
            f"re-embed it with {picked.name}: muster query --store F --models {picked.name} --reembed "
            "(Store.open(..., reembed=True)), which embeds every unit anew on the next read"
        )
    return picked


def _recorded_profile(embedder: str, namespace: str) -> Models:
    why = f"namespace {namespace!r} was embedded with it"
    name = _profile_of(embedder)
    if name is not None:
        return dataclasses.replace(PROFILES.get(name), chosen_by=why)
    directory = Path(embedder)
    if directory.name == "bge-m3":  # the paper's pair read from a folder (models.from_directory)
        directory = directory.parent
    return dataclasses.replace(from_directory(directory), chosen_by=why)


def _profile_of(embedder: str) -> str | None:
    """The registered profile whose embedder is ``embedder``, if any."""
    return next((n for n in PROFILES.names() if PROFILES.get(n).embedder.key == embedder), None)
