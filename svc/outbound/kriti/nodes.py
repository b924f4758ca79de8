"""Kriti's syntax tree: kriti-lang's `ValueExt` (`src/Kriti/Parser/Token.hs`) as frozen
dataclasses, each with the `span` kriti-lang gives it (errors report these spans)."""

from __future__ import annotations

from dataclasses import dataclass

from svc.outbound.kriti.errors import Span


@dataclass(frozen=True, slots=True)
class Node:
    """Any template node."""

    span: Span


@dataclass(frozen=True, slots=True)
class Literal(Node):
    """A JSON scalar: number, boolean, null, or a plain string fragment."""

    value: str | int | float | bool | None


@dataclass(frozen=True, slots=True)
class StringTemplate(Node):
    """`"text {{ expr }} text"`: the parts' values joined (non-strings JSON-encoded)."""

    parts: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Array(Node):
    items: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Object(Node):
    """`{"key": expr, …}`; a repeated key keeps its first value (kriti-lang builds the
    map from the fields in reverse)."""

    fields: tuple[tuple[str, Node], ...]


@dataclass(frozen=True, slots=True)
class Var(Node):
    name: str


@dataclass(frozen=True, slots=True)
class Field(Node):
    """`target.name` (`key` a str) or `target[expr]` (`key` a node): kriti-lang's
    `RequiredFieldAccess`."""

    target: Node
    key: str | Node


@dataclass(frozen=True, slots=True)
class OptionalFields(Node):
    """`target?.a[0]…`: kriti-lang's `OptionalFieldAccess`, null when any step fails
    (its span is the target's); `target?` (no keys) is the target or null when it fails."""

    target: Node
    keys: tuple[str | Node, ...]


@dataclass(frozen=True, slots=True)
class Binary(Node):
    """`left op right`, `op` one of `== != > < >= <= && || in ??`."""

    op: str
    left: Node
    right: Node


@dataclass(frozen=True, slots=True)
class Branch:
    """One `{{ elif cond }} body` (kriti-lang's `Elif`)."""

    span: Span
    cond: Node
    body: Node


@dataclass(frozen=True, slots=True)
class If(Node):
    """`{{ if c }} a {{ elif c2 }} b … {{ else }} z {{ end }}` (kriti-lang's `Iff`)."""

    cond: Node
    then: Node
    elifs: tuple[Branch, ...]
    other: Node


@dataclass(frozen=True, slots=True)
class Ternary(Node):
    """`cond ? a : b`."""

    cond: Node
    then: Node
    other: Node


@dataclass(frozen=True, slots=True)
class Range(Node):
    """`{{ range i, x := expr }} body {{ end }}` (`index` None for `_`)."""

    index: str | None
    binder: str
    source: Node
    body: Node


@dataclass(frozen=True, slots=True)
class Call(Node):
    """`name(arg)` (kriti-lang's `Function`)."""

    name: str
    arg: Node
