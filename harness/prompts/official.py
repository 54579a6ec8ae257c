"""How a benchmark's own prompts are read from their pinned files at run time (never copied here).

Each benchmark's reader lives in its folder (``harness/benchmarks/<name>/prompts.py``); the
tools here take a template out of its file by structure, not by quoting it:
Python files are parsed with :mod:`ast` (a module-level string constant by
name, a dict of them, or the string a function appends to the question),
YAML files by key path. Placeholders are then renamed to this harness's
``{name}`` fields: ``.format`` slots (``{}``, ``{golden_answer}``...) and
``<tag>`` slots (BEAM) alike.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from harness.prompts import PromptError

# .format slots and <tag> slots of the official files -> this harness's field names.
RENAMES = {
    "{golden_answer}": "{gold}",
    "{gold_answer}": "{gold}",
    "{generated_answer}": "{answer}",
    "<context>": "{context}",
    "<question>": "{question}",
    "<rubric_item>": "{rubric_item}",
    "<llm_response>": "{answer}",
}


# --- extraction ---------------------------------------------------------------


def module_constants(source: str, name: str) -> dict[str, Any]:
    """Module-level assignments evaluable as literals (names of other literals resolved)."""
    tree = ast.parse(source)
    found: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                found[node.targets[0].id] = _literal(node.value, found)
            except ValueError:
                continue
    if name not in found:
        raise PromptError(f"the pinned file has no literal {name}")
    return found


def _literal(node: ast.AST, known: dict[str, Any]) -> Any:
    """``ast.literal_eval`` that also resolves a bare name to an earlier literal of the module."""

    class Resolve(ast.NodeTransformer):
        def visit_Name(self, name: ast.Name) -> ast.AST:
            if name.id in known and isinstance(known[name.id], str):
                return ast.copy_location(ast.Constant(known[name.id]), name)
            return name

    return ast.literal_eval(Resolve().visit(ast.fix_missing_locations(node)))


def appended_strings(source: str, function: str) -> list[str]:
    """String constants a function adds to ``qa['question']`` (``qa['question'] + '...'``), in order."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == function:
            found = []
            for inner in ast.walk(node):
                if (
                    isinstance(inner, ast.BinOp)
                    and isinstance(inner.op, ast.Add)
                    and isinstance(inner.left, ast.Subscript)
                    and isinstance(inner.left.slice, ast.Constant)
                    and inner.left.slice.value == "question"
                    and isinstance(inner.right, ast.Constant)
                    and isinstance(inner.right.value, str)
                ):
                    found.append(inner.right.value)
            return found
    raise PromptError(f"the pinned file has no function {function}")


def format_style(text: str, positional: tuple[str, ...] = ()) -> str:
    """A ``.format`` template in this harness's form: ``{}`` slots named in order, ``{{ }}`` literal."""
    names = iter(positional)

    def slot(match: re.Match[str]) -> str:
        token = match.group(0)
        if token in ("{{", "}}"):
            return token[0]
        if token == "{}":
            try:
                return "{" + next(names) + "}"
            except StopIteration:
                raise PromptError("a template has more {} slots than names for them") from None
        return RENAMES.get(token, token)

    return re.sub(r"\{\{|\}\}|\{[a-z_]*\}", slot, text)


def tag_style(text: str, keep: tuple[str, ...] = ()) -> str:
    """A ``.replace('<tag>', ...)`` template in this harness's form; tags in ``keep`` stay as they are."""
    for tag, field in RENAMES.items():
        if tag.startswith("<") and tag not in keep:
            text = text.replace(tag, field)
    return text


# --- per benchmark --------------------------------------------------------------
