"""A subset of Kriti, the JSON templating language of Hasura's request and response
transforms (`template_engine: Kriti`), enough for body templates:

- JSON values (objects, arrays, strings, numbers, `true`, `false`, `null`);
- `{{ path }}` as a value: `$body.a.b[0].c`, `$session_variables['x-svc-role']`, a loop
  variable (`x.city`, `i`), or a literal (`?.` reads as `.`); inside a string,
  `"…{{ path }}…"` interpolates the value's text;
- `{{ range i, x := path }} value {{ end }}`: an array of `value` per element (`i` its
  index, `x` the element; `_` for an unused name);
- `{{ if cond }} value {{ else }} value {{ end }}` (the `else` branch optional: null),
  `cond` a value or `a <op> b` with `==`, `!=`, `>`, `>=`, `<`, `<=`, joined by `&&`/`||`.

`render(template, variables)` parses and evaluates (`variables`: `{"$body": …,
"$session_variables": …}`); a template outside the subset raises `KritiError`. A path
through a missing key or index is null. Written here because no Python library reads
Kriti; the subset is what the reference's action and event tests use.
"""

from __future__ import annotations

import json
import operator
import re
from dataclasses import dataclass
from typing import Any


class KritiError(Exception):
    """A template svc cannot read or evaluate."""


_TOKEN = re.compile(
    r"""\s*(?:
      (?P<block>\{\{.*?\}\})
    | (?P<string>"(?:[^"\\]|\\.)*")
    | (?P<punct>[{}\[\]:,])
    | (?P<literal>-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null)
    )""",
    re.VERBOSE | re.DOTALL,
)
_INTERPOLATION = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)
_PATH_PART = re.compile(
    r"\s*(?:\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\[\"([^\"]*)\"\]|\['([^']*)'\])"
)
_COMPARE = re.compile(r"(==|!=|>=|<=|>|<)")
_OPS = {
    "==": operator.eq,
    "!=": operator.ne,
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
}


@dataclass(frozen=True, slots=True)
class _Tok:
    kind: str
    text: str


def _tokens(text: str) -> list[_Tok]:
    out: list[_Tok] = []
    pos, end = 0, len(text.rstrip())
    while pos < end:
        m = _TOKEN.match(text, pos)
        if m is None:
            raise KritiError(f"unexpected text at {pos}: {text[pos : pos + 20]!r}")
        kind = m.lastgroup or ""
        value = m.group(kind)
        out.append(_Tok(kind, value[2:-2].strip() if kind == "block" else value))
        pos = m.end()
    return out


class _Parser:
    def __init__(self, tokens: list[_Tok]) -> None:
        self.tokens, self.i = tokens, 0

    def peek(self) -> _Tok | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self) -> _Tok:
        tok = self.peek()
        if tok is None:
            raise KritiError("unexpected end of template")
        self.i += 1
        return tok

    def expect(self, kind: str, text: str) -> None:
        tok = self.take()
        if tok.kind != kind or tok.text != text:
            raise KritiError(f"expected {text!r}, got {tok.text!r}")

    def value(self) -> Any:
        tok = self.take()
        if tok.kind == "literal":
            return ("const", json.loads(tok.text))
        if tok.kind == "string":
            return ("string", json.loads(tok.text))
        if tok.kind == "punct" and tok.text == "{":
            return self._object()
        if tok.kind == "punct" and tok.text == "[":
            return self._array()
        if tok.kind == "block":
            return self._block(tok.text)
        raise KritiError(f"unexpected {tok.text!r}")

    def _object(self) -> Any:
        items: list[tuple[Any, Any]] = []
        while not self._punct("}"):
            if items:
                self.expect("punct", ",")
            key = self.take()
            if key.kind != "string":
                raise KritiError(f"expected a key, got {key.text!r}")
            self.expect("punct", ":")
            items.append((("string", json.loads(key.text)), self.value()))
        self.take()
        return ("object", tuple(items))

    def _array(self) -> Any:
        items: list[Any] = []
        while not self._punct("]"):
            if items:
                self.expect("punct", ",")
            items.append(self.value())
        self.take()
        return ("array", tuple(items))

    def _punct(self, text: str) -> bool:
        tok = self.peek()
        return tok is not None and tok.kind == "punct" and tok.text == text

    def _block(self, text: str) -> Any:
        if text.startswith("range "):
            m = re.fullmatch(r"range\s+(\w+)\s*,\s*(\w+)\s*:=\s*(.+)", text, re.DOTALL)
            if m is None:
                raise KritiError(f"bad range: {text!r}")
            body = self.value()
            self.expect("block", "end")
            return ("range", m.group(1), m.group(2), m.group(3).strip(), body)
        if text.startswith("if "):
            then = self.value()
            other: Any = ("const", None)
            if self._block_is("else"):
                self.take()
                other = self.value()
            self.expect("block", "end")
            return ("if", text[3:].strip(), then, other)
        return ("expr", text)

    def _block_is(self, text: str) -> bool:
        tok = self.peek()
        return tok is not None and tok.kind == "block" and tok.text == text


def _path(text: str, scope: dict[str, Any]) -> Any:
    text = text.strip()
    if text.startswith('"') or re.fullmatch(r"-?\d+(\.\d+)?|true|false|null", text):
        return json.loads(text)
    m = re.match(r"\$?[A-Za-z_][A-Za-z0-9_]*", text)
    if m is None:
        raise KritiError(f"bad expression: {text!r}")
    value = scope.get(m.group(0))
    rest, pos = text[m.end() :].replace("?.", ".").replace("?[", "["), 0
    while pos < len(rest):
        part = _PATH_PART.match(rest, pos)
        if part is None:
            raise KritiError(f"bad path: {text!r}")
        pos = part.end()
        key = next(
            (g for g in (part.group(1), part.group(3), part.group(4)) if g is not None), None
        )
        if key is not None:
            value = value.get(key) if isinstance(value, dict) else None
        else:
            index = int(part.group(2))
            value = value[index] if isinstance(value, list) and index < len(value) else None
    return value


def _condition(text: str, scope: dict[str, Any]) -> bool:
    for joiner, test in (("||", any), ("&&", all)):
        if joiner in text:
            return test(_condition(p, scope) for p in text.split(joiner))
    parts = _COMPARE.split(text, maxsplit=1)
    if len(parts) == 1:
        return bool(_path(text, scope))
    left, op, right = _path(parts[0], scope), parts[1], _path(parts[2], scope)
    try:
        return bool(_OPS[op](left, right))
    except TypeError:
        raise KritiError(f"cannot compare {left!r} {op} {right!r}") from None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _eval(node: Any, scope: dict[str, Any]) -> Any:
    kind = node[0]
    if kind == "const":
        return node[1]
    if kind == "string":
        return _INTERPOLATION.sub(lambda m: _text(_path(m.group(1), scope)), node[1])
    if kind == "object":
        return {_eval(k, scope): _eval(v, scope) for k, v in node[1]}
    if kind == "array":
        return [_eval(v, scope) for v in node[1]]
    if kind == "expr":
        return _path(node[1], scope)
    if kind == "if":
        return _eval(node[2] if _condition(node[1], scope) else node[3], scope)
    _, index_name, item_name, source, body = node
    items = _path(source, scope)
    if items is None:
        return []
    if not isinstance(items, list):
        raise KritiError(f"range over a non-array: {source}")
    return [_eval(body, {**scope, index_name: i, item_name: x}) for i, x in enumerate(items)]


def render(template: str, variables: dict[str, Any]) -> Any:
    """The JSON value `template` gives with `variables` (`$body`, …); raises
    `KritiError`."""
    parser = _Parser(_tokens(template))
    node = parser.value()
    if parser.peek() is not None:
        raise KritiError(f"unexpected {parser.peek()!r} after the template's value")
    return _eval(node, variables)
