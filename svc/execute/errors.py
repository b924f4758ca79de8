"""Map Postgres errors to svc errors by SQLSTATE class, never by message text.

Reference notes ("Errors"): class 23 (integrity) → `constraint-violation`; class 22 (data)
→ `data-exception`; anything else → 500 `unexpected` "database query error"; the raw error
goes only in `internal`, shown to admins.
"""

from __future__ import annotations

from typing import Any

import asyncpg

from svc.errors import SvcError


def pg_error_detail(exc: asyncpg.PostgresError, statement: str | None = None) -> dict[str, Any]:
    """The `internal` object of a Postgres error (Hasura's shape)."""
    error = {
        "exec_status": "FatalError",
        "hint": getattr(exc, "hint", None),
        "message": getattr(exc, "message", str(exc)),
        "status_code": exc.sqlstate,
        "description": getattr(exc, "detail", None),
    }
    out: dict[str, Any] = {"error": error, "prepared": statement is None, "arguments": []}
    if statement is not None:
        out["statement"] = statement
    return out


def map_query_error(exc: asyncpg.PostgresError) -> SvcError:
    """A Postgres error raised by a GraphQL query or mutation."""
    state = exc.sqlstate or ""
    message = getattr(exc, "message", str(exc))
    internal = pg_error_detail(exc)
    if state.startswith("23"):
        if state == "23502":
            column = getattr(exc, "column_name", None)
            if column:
                message = f'null value in column "{column}" violates not-null constraint'
        return SvcError("constraint-violation", message, internal=internal)
    if state == "22025":  # invalid escape sequence (a LIKE pattern): the reference's code
        return SvcError("bad-request", message, internal=internal)
    if state.startswith("22"):
        return SvcError("data-exception", message, internal=internal)
    if state in ("42501",):
        return SvcError("permission-error", message, internal=internal)
    if state.startswith("2201") or state.startswith("42"):
        return SvcError("bad-request", message, internal=internal)
    return SvcError("unexpected", "database query error", status=500, internal=internal)


def map_run_sql_error(exc: asyncpg.PostgresError, sql: str) -> SvcError:
    """A `run_sql` failure: 400 `postgres-error` "query execution failed" (spec 7)."""
    return SvcError(
        "postgres-error",
        "query execution failed",
        path="$.args",
        internal=pg_error_detail(exc, sql),
    )
