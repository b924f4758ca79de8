"""Error codes are an enum (issue 12): every code svc can answer is an `ErrorCode`.

`SvcError` turns a code's text into its member and raises ValueError for any other text,
so a code missing from the enum would surface as a 500 at the worst moment; this test
finds them statically instead: every string literal given as the code of an error
(`SvcError("…")`, other `…Error("…")` constructors, `code="…"` defaults) is a member.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from svc.errors import ErrorCode, SvcError

SVC = Path(__file__).resolve().parent.parent / "svc"
CODE_TEXT = re.compile(r"[a-z]+(-[a-z]+)*")
# Not error codes: `type` fields of log lines (`svc.execute.listener`).
LOG_TYPES = {"connect-failed", "listen-lost", "listen-restored", "reload-failed"}


def literal_codes(tree: ast.AST) -> list[tuple[str, int]]:
    """(code text, line) of each error constructor's literal first argument and of each
    `code: str = "…"` / `code="…"` default in a module."""
    found: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args:
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            first = node.args[0]
            if name.endswith("Error") and isinstance(first, ast.Constant):
                found.append((str(first.value), node.lineno))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            if node.target.id == "code" and isinstance(node.value, ast.Constant):
                found.append((str(node.value.value), node.lineno))
        elif isinstance(node, ast.arguments):
            names = [a.arg for a in node.args[len(node.args) - len(node.defaults) :]]
            for arg, default in zip(names, node.defaults, strict=True):
                if arg == "code" and isinstance(default, ast.Constant):
                    found.append((str(default.value), default.lineno))
    return found


def test_every_literal_code_is_a_member() -> None:
    members = {c.value for c in ErrorCode}
    unknown = []
    for path in sorted(SVC.rglob("*.py")):
        for text, line in literal_codes(ast.parse(path.read_text())):
            if CODE_TEXT.fullmatch(text) and text not in members and text not in LOG_TYPES:
                unknown.append(f"{path.relative_to(SVC.parent)}:{line}: {text}")
    assert unknown == []


def test_codes_and_answers_are_the_texts() -> None:
    exc = SvcError("not-exists", "no such table", path="$.name")
    assert exc.code is ErrorCode.NOT_EXISTS
    assert exc.to_query_body() == {"path": "$.name", "error": "no such table", "code": "not-exists"}
    with pytest.raises(ValueError):
        SvcError("no-such-code", "x")


def test_at_returns_a_copy() -> None:
    exc = SvcError(ErrorCode.PARSE_FAILED, "bad", path="$.name", internal={"a": 1})
    moved = exc.at("$.args")
    assert (moved.path, exc.path) == ("$.args.name", "$.name")
    assert (moved.code, moved.message, moved.status, moved.internal) == (
        exc.code,
        exc.message,
        exc.status,
        exc.internal,
    )
    assert str(moved) == "bad"
