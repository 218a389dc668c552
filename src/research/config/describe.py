"""What a declaration says about each of its fields, for `--help <node>` and the docs: name, type,
default, range or choices, and the one-line docstring written under the field."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import typing
from dataclasses import dataclass
from functools import cache
from typing import Any

from research.config.schema import Schema, listed_choices, type_name

_RULES = (("gt", ">"), ("ge", ">="), ("lt", "<"), ("le", "<="))


@dataclass(frozen=True)
class FieldInfo:
    name: str
    type: str
    default: Any
    rules: str
    doc: str


@cache
def _class_node(cls: type) -> ast.ClassDef | None:
    try:
        tree = ast.parse(inspect.getsource(cls))
    except (OSError, TypeError):
        return None
    return tree.body[0] if tree.body and isinstance(tree.body[0], ast.ClassDef) else None


def class_doc(schema: type[Schema]) -> str:
    """The first line of the docstring written in the declaration's class body ('' without one;
    a dataclass otherwise reports its signature as its __doc__)."""
    node = _class_node(schema)
    doc = ast.get_docstring(node) if node is not None else None
    return doc.strip().splitlines()[0] if doc else ""


@cache
def _class_docs(cls: type) -> dict[str, str]:
    """Field name -> the string literal right under its annotated assignment, in `cls`'s own
    source (dataclass fields have no __doc__; tools such as griffe read the same)."""
    node = _class_node(cls)
    body = node.body if node is not None else []
    docs = {}
    for field, after in zip(body, [*body[1:], None], strict=True):
        is_doc = isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
        if isinstance(field, ast.AnnAssign) and isinstance(field.target, ast.Name) and is_doc:
            docs[field.target.id] = " ".join(str(after.value.value).split())
    return docs


def field_docs(schema: type[Schema]) -> dict[str, str]:
    """Each field's docstring, a subclass's own taking precedence over its bases'."""
    docs: dict[str, str] = {}
    for cls in reversed(schema.__mro__):
        if dataclasses.is_dataclass(cls):
            docs.update(_class_docs(cls))
    return docs


def _rules(metadata: Any) -> str:
    parts = [f"{sign} {metadata[key]}" for key, sign in _RULES if key in metadata]
    if "choices" in metadata:
        parts.append("one of " + listed_choices(metadata["choices"]))
    return ", ".join(parts)


def describe(schema: type[Schema]) -> list[FieldInfo]:
    """One FieldInfo per declared field, in declaration order."""
    hints = typing.get_type_hints(schema)
    docs, defaults = field_docs(schema), schema.defaults()
    return [
        FieldInfo(
            name=f.name,
            type=type_name(hints[f.name]),
            default=defaults.get(f.name, "(required)"),
            rules=_rules(f.metadata),
            doc=docs.get(f.name, ""),
        )
        for f in dataclasses.fields(schema)  # type: ignore[arg-type]
    ]
