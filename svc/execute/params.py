"""Turn plan parameters into the text values sent to Postgres.

Every parameter is sent as `text` (or `text[]`) and cast in SQL to the column's type, so
Postgres does all value parsing: one code path for every type, and no Python-side codecs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from svc.errors import ErrorCode, SvcError, pattern_too_long
from svc.plan.nodes import Const, Param, SessionJson, SessionRef, VarRef
from svc.plan.values import OneItemList

JSON_TYPES = frozenset({"json", "jsonb"})
_encode = msgspec.json.encode


def to_text(value: Any, pg_type: str) -> str | None:
    """The Postgres text input for `value` of `pg_type` (`None` is SQL NULL).

    json/jsonb values are JSON text; lists for array types are array literals; booleans
    are `true`/`false`; numbers use Python's shortest round-trip form.
    """
    if value is None:
        return None
    if pg_type in JSON_TYPES:
        return _encode(value).decode()
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        if isinstance(value, OneItemList) and isinstance(value[0], str) and "[" in pg_type:
            return value[0]  # a string given for an array: Postgres' literal (the reference's)
        return array_literal(value)
    return _encode(value).decode()


def array_literal(values: list[Any]) -> str:
    """A Postgres array literal: `{"a","b\\"c",NULL}` (nested lists nest)."""
    parts: list[str] = []
    for v in values:
        if v is None:
            parts.append("NULL")
        elif isinstance(v, list):
            parts.append(array_literal(v))
        else:
            text = to_text(v, "") or ""
            parts.append('"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"')
    return "{" + ",".join(parts) + "}"


def resolve(
    params: tuple[Param, ...], variables: Mapping[str, Any], session: Mapping[str, str]
) -> list[Any]:
    """The positional argument list for a statement's parameters."""
    out: list[Any] = []
    for p in params:
        src = p.source
        if isinstance(src, Const):
            value = src.value
        elif isinstance(src, VarRef):
            value = variables.get(src.name)
        elif isinstance(src, SessionRef):
            if src.name not in session and not src.optional:
                raise SvcError(ErrorCode.NOT_FOUND, f'missing session variable: "{src.name}"')
            value = session.get(src.name)
        elif isinstance(src, SessionJson):
            value = dict(session)
        else:
            raise TypeError(src)
        if p.max_chars and isinstance(value, str) and len(value) > p.max_chars:
            raise pattern_too_long(len(value), p.max_chars)
        if p.is_list:
            elem_type = p.pg_type
            out.append(None if value is None else [to_text(v, elem_type) for v in value])
        else:
            out.append(to_text(value, p.pg_type))
    return out
