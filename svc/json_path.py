"""Parse a JSON path into its keys: `$.a.b[0]` → `("a", "b", "0")`.

Layer 0, because two layers read JSON paths: the planner (the `path` argument of
json/jsonb columns, the key list of Postgres `#>`) and JWT authentication
(`claims_namespace_path`, `claims_map`). The grammar is `grammar/json_path.lark`, read through
`svc.grammars.load` (package data in a wheel).
"""

from __future__ import annotations

import ast
from functools import lru_cache

from lark import Lark, LarkError, Token, Tree

from svc.errors import ErrorCode, SvcError
from svc.grammars import load


@lru_cache(maxsize=1)
def _parser() -> Lark:
    return Lark(load("json_path.lark"), parser="lalr")


@lru_cache(maxsize=1024)
def parse_json_path(text: str) -> tuple[str, ...]:
    """Keys of a JSON path; raises `validation-failed` for a malformed path."""
    try:
        tree = _parser().parse(text)
    except LarkError as exc:
        raise SvcError(
            ErrorCode.VALIDATION_FAILED, f"parse json path error: {exc}".splitlines()[0], path="$"
        ) from None
    keys: list[str] = []
    for node in tree.children:
        assert isinstance(node, Tree)
        token = node.children[0]
        assert isinstance(token, Token)
        keys.append(ast.literal_eval(token) if node.data == "quoted" else str(token))
    return tuple(keys)
