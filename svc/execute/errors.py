"""Map Postgres errors to svc errors by SQLSTATE class, never by message text.

Reference notes ("Errors"): class 23 (integrity) → `constraint-violation`; class 22 (data)
→ `data-exception`; anything else → 500 `unexpected` "database query error"; the raw error
goes only in `internal`, shown to admins.

Two exceptions to the reference, both so a client can read what happened: a
cancelled statement (57014: its time limit passed, or someone cancelled it) keeps
Postgres's own message ("canceling statement due to statement timeout") under
`postgres-error`, where the reference answers a bare "database query error"
(hasura/graphql-engine#7839); a lost or refused connection is spec section 7's 500
`postgres-error` "connection error".
"""

from __future__ import annotations

from typing import Any

import asyncpg

from svc.errors import ErrorCode, SvcError


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


STATEMENT_TIMEOUT = "canceling statement due to statement timeout"  # Postgres's words


def is_connection_error(exc: BaseException) -> bool:
    """Whether `exc` means the connection is lost or could not be made (not that the
    statement failed): an OSError (refused, reset, connect timeout), asyncpg's interface
    and internal client errors (a closed connection, a protocol error mid-restart; not
    `DataError`, a bad argument), or a Postgres error of class 08 (connection exception)
    or 57P01 to 57P03 (shutdown, crash, cannot connect now)."""
    if isinstance(exc, asyncpg.PostgresError):
        state = exc.sqlstate or ""
        return state.startswith("08") or state in ("57P01", "57P02", "57P03")
    if isinstance(exc, asyncpg.DataError):
        return False
    return isinstance(exc, OSError | asyncpg.InterfaceError | asyncpg.InternalClientError)


def connection_error(exc: BaseException) -> SvcError:
    """500 `postgres-error` "connection error" (spec section 7) for a connection `exc`
    (`is_connection_error`); what asyncpg said goes in `internal` (admins only: it can name
    the database's host)."""
    detail = f"{type(exc).__name__}: {exc}".rstrip(": ")
    return SvcError(
        ErrorCode.POSTGRES_ERROR, "connection error", status=500, internal={"message": detail}
    )


def statement_timeout_error() -> SvcError:
    """400 `postgres-error` "canceling statement due to statement timeout": a statement ran
    past its time limit (Postgres's `statement_timeout`, or svc's own timer, which cancels
    the statement the same way). The reference answers "database query error"."""
    return SvcError(ErrorCode.POSTGRES_ERROR, STATEMENT_TIMEOUT)


def map_query_error(exc: asyncpg.PostgresError) -> SvcError:
    """A Postgres error raised by a GraphQL query or mutation (see the module docstring)."""
    state = exc.sqlstate or ""
    message = getattr(exc, "message", str(exc))
    internal = pg_error_detail(exc)
    if state.startswith("23"):
        if state == "23502":
            column = getattr(exc, "column_name", None)
            if column:
                message = f'null value in column "{column}" violates not-null constraint'
        return SvcError(ErrorCode.CONSTRAINT_VIOLATION, message, internal=internal)
    if state == "22025":  # invalid escape sequence (a LIKE pattern): the reference's code
        return SvcError(ErrorCode.BAD_REQUEST, message, internal=internal)
    if state.startswith("22"):
        return SvcError(ErrorCode.DATA_EXCEPTION, message, internal=internal)
    if state in ("42501",):
        return SvcError(ErrorCode.PERMISSION_ERROR, message, internal=internal)
    if state.startswith("2201") or state.startswith("42"):
        return SvcError(ErrorCode.BAD_REQUEST, message, internal=internal)
    if state == "57014":  # query_canceled: a statement timeout or a cancel request
        return SvcError(ErrorCode.POSTGRES_ERROR, message, internal=internal)
    if is_connection_error(exc):
        return connection_error(exc)
    return SvcError(ErrorCode.UNEXPECTED, "database query error", status=500, internal=internal)


def map_run_sql_error(exc: asyncpg.PostgresError, sql: str) -> SvcError:
    """A `run_sql` failure: 400 `postgres-error` "query execution failed" (spec 7)."""
    return SvcError(
        ErrorCode.POSTGRES_ERROR,
        "query execution failed",
        path="$.args",
        internal=pg_error_detail(exc, sql),
    )
