"""Prompt templates for readers and judges: the benchmarks' own (pinned) or this repo's.

Two sets, chosen per endpoint with ``prompts=``:

* ``official``: each benchmark's own answer and judge prompts, read at run
  time from the third-party files pinned in ``manifests/scorers.json``
  (see :mod:`harness.prompts.official`); never copied into this repository.
* ``muster``: ``muster.yaml`` beside this file, written for this repository.

A template is a system and a user text with ``{name}`` placeholders filled
by name; any other brace is literal (judge prompts show JSON). Each template
carries the SHA-256 of its text and where it came from, for the run record.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import yaml

from muster_exact.core.errors import MusterError

MUSTER_FILE = Path(__file__).with_name("muster.yaml")
SETS = ("official", "muster")
_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")


class PromptError(MusterError):
    """A prompt set or template is unknown, or a template cannot be filled."""


@dataclass(frozen=True)
class Template:
    name: str
    user: str
    system: str | None = None
    json_reply: bool = False
    source: str = "muster"  # or "<pinned file name>:<symbol>"

    @property
    def sha256(self) -> str:
        text = (self.system or "") + "\0" + self.user
        return hashlib.sha256(text.encode()).hexdigest()

    @property
    def placeholders(self) -> tuple[str, ...]:
        found = _PLACEHOLDER.findall((self.system or "") + self.user)
        return tuple(dict.fromkeys(found))

    def messages(self, **values: Any) -> list[dict[str, str]]:
        messages = []
        if self.system:
            messages.append({"role": "system", "content": fill(self.system, values, self.name)})
        messages.append({"role": "user", "content": fill(self.user, values, self.name)})
        return messages

    def describe(self) -> dict[str, Any]:
        return {"source": self.source, "sha256": self.sha256, "json": self.json_reply}


def fill(text: str, values: dict[str, Any], name: str) -> str:
    """Replace each ``{field}`` by its value; a field the template needs but was not given is an error."""

    def one(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in values:
            return match.group(0)  # a literal brace pair, e.g. in a JSON example
        return str(values[key])

    missing = [key for key in _PLACEHOLDER.findall(text) if key in _REQUIRED and key not in values]
    if missing:
        raise PromptError(f"template {name} needs {', '.join(missing)}")
    return _PLACEHOLDER.sub(one, text)


# Names that are always placeholders, never literal text: leaving one unfilled is a bug.
_REQUIRED = {"context", "question", "answer", "gold", "rubric_item", "option_a", "option_b"}


class PromptSet:
    """Templates by name (``answer``, ``answer_temporal``, ``judge``...) for one benchmark."""

    def __init__(
        self, name: str, templates: dict[str, Template], datasets: dict[tuple[str, ...], str] | None = None
    ) -> None:
        self.name = name
        self.templates = templates
        # MemoryAgentBench's official set: source-name substrings -> the dataset whose template applies.
        self.datasets = datasets or {}
        self.used: dict[str, dict[str, Any]] = {}

    def describe(self) -> dict[str, Any]:
        """The run record's entry: the set and every template used, with its source and SHA-256."""
        return {"set": self.name, "templates": dict(sorted(self.used.items()))}

    def dataset(self, source: str) -> str | None:
        """The dataset a source belongs to (every substring of a pattern occurs in its name)."""
        for patterns, dataset in self.datasets.items():
            if all(pattern in source for pattern in patterns):
                return dataset
        return None

    def get(self, name: str) -> Template:
        if name not in self.templates:
            raise PromptError(
                f"prompt set {self.name!r} has no template {name!r}; "
                f"it has {', '.join(sorted(self.templates))}"
            )
        template = self.templates[name]
        self.used[name] = template.describe()
        return template


def muster_set() -> PromptSet:
    raw = yaml.safe_load(MUSTER_FILE.read_text(encoding="utf-8"))
    templates = {
        name: Template(
            name=name,
            user=entry["user"],
            system=entry.get("system"),
            json_reply=bool(entry.get("json", False)),
            source=f"muster.yaml:{name}",
        )
        for name, entry in raw.items()
    }
    return PromptSet("muster", templates)


class OfficialPrompts(Protocol):
    """A benchmark, as the prompt sets see it: it says where its official prompts are."""

    def official_prompts(self, pinned: Any) -> PromptSet: ...


def load(name: str, benchmark: OfficialPrompts, pinned: Any = None) -> PromptSet:
    """The prompt set ``name`` for ``benchmark`` (the benchmark object the stage holds);
    ``official`` reads pinned files through ``pinned``."""
    if name == "muster":
        return muster_set()
    if name == "official":
        if pinned is None:
            raise PromptError("the official prompts need the pinned scorer files (paths.manifests)")
        return benchmark.official_prompts(pinned)
    raise PromptError(f"unknown prompt set {name!r}; choose one of {', '.join(SETS)}")
