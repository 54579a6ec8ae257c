"""Imports only point down: the library's stages form layers in the order data flows, and no
module imports from a layer above its own; neither the library nor the harness has an import
circle, deferred imports counted. The layer order is written here once
(``docs/architecture.md`` points to it)."""

from __future__ import annotations

import pytest

from tests.import_graph import circles, graph

pytestmark = pytest.mark.fast  # no model, no harness run: `make test-fast`

# Bottom to top. A module's layer is its longest prefix here. ``muster_exact.channels`` (the
# package's ``__init__``: channel names, Proposals, the floors' arithmetic) is the one contract
# module the stages below the channels may read; the channel implementations sit above derive.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("muster_exact.core",),
    ("muster_exact.channels",),
    ("muster_exact.text",),
    ("muster_exact.cache",),
    ("muster_exact.models",),
    ("muster_exact.derive",),
    (
        "muster_exact.channels.given",  # what a channel is built from
        "muster_exact.channels.embedding",
        "muster_exact.channels.bm25",
        "muster_exact.channels.dense",
        "muster_exact.channels.graph",
    ),
    ("muster_exact.retrieve",),
    ("muster_exact.rules",),
    ("muster_exact.memory",),
    ("muster_exact.store",),
    ("muster_exact.verify",),
    ("muster_exact.serve",),
    ("muster_exact.integrations",),
    ("muster_exact.cli",),
    ("muster_exact", "muster_exact.__main__"),  # the front door
)


def layer(module: str) -> int:
    best, depth = -1, -1
    for number, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and prefix.count(".") > depth:
                best, depth = number, prefix.count(".")
    assert best >= 0, f"{module} is in no layer: add its package to LAYERS in {__file__}"
    return best


def test_every_library_module_imports_only_from_its_own_layer_or_below() -> None:
    upward = [
        f"{source} (layer {layer(source)}) imports {target} (layer {layer(target)})"
        for source, targets in sorted(graph("muster_exact").items())
        for target in sorted(targets)
        if layer(target) > layer(source)
    ]
    assert not upward, "imports that point up:\n" + "\n".join(upward)


def test_the_layer_rule_sees_an_upward_import() -> None:
    """The check itself: a store module importing the CLI would be refused."""
    assert layer("muster_exact.cli.parser") > layer("muster_exact.store.store")
    contract, channel = "muster_exact.channels", "muster_exact.channels.bm25"
    assert layer(contract) < layer("muster_exact.derive.plan") < layer(channel)


@pytest.mark.parametrize("packages", [("muster_exact", "muster"), ("harness",)])
def test_no_import_circle(packages: tuple[str, ...]) -> None:
    found = circles(graph(*packages))
    assert not found, f"import circles (deferred imports counted): {found}"


def test_a_circle_is_seen() -> None:
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []
