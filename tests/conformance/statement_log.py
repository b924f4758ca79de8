"""The SQL svc runs for the conformance run's GraphQL requests, read from Postgres's own log.

The runner turns on `log_statement = 'all'` for each database it creates (`ALTER DATABASE`,
so only the conformance databases log) and, around each GraphQL request, reads what the
server log gained: the statements Postgres logged while svc answered that request (the
runner sends one request at a time). `tests/conformance/test_generated_sql.py` parses them
with sqlglot. This needs the server log as a readable file in the default format: the
embedded cluster of `tests/conftest.py` writes `<data_directory>/server.log`; anywhere else
`problem` says why nothing was collected.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import asyncpg

# GraphQL endpoints whose statements are collected; explain's `EXPLAIN …` wraps the query's.
GRAPHQL_PATHS = re.compile(r"^/(v1|v1alpha1)/graphql$|^/v1beta1/relay$|^/api/rest/")
# Postgres's default `log_line_prefix` ('%m [%p] ') before a severity starts each line of a
# report (LOG, then DETAIL for parameters, ...); a statement's own lines carry no prefix.
RECORD = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \S+ \[\d+\] (?=[A-Z]+:  )", re.M)
# A logged statement: simple protocol (`statement:`) or a prepared one (`execute <name>:`).
STATEMENT = re.compile(r"LOG:  (?:statement|execute [^:\s]+): (.*)", re.S)
DEFAULT_PREFIX = "%m [%p] "
# svc's catalog set-up scripts (`svc/catalog`): another worker starting while a request
# runs (a restarted server's second worker, on a loaded machine) logs them into the
# request's window; they are fixed DDL, not SQL generated from GraphQL.
CATALOG_SETUP = re.compile(r"\s*CREATE (?:SCHEMA|TABLE) IF NOT EXISTS hdb_catalog\b")
# Transaction control asyncpg sends around a block (`SAVEPOINT __asyncpg_savepoint_…`,
# `RELEASE SAVEPOINT …`, `ROLLBACK TO …`): not generated SQL; a worker loading new
# metadata (its enum tables' rows) logs them into a request's window.
TRANSACTION_CONTROL = re.compile(
    r"\s*(?:SAVEPOINT|RELEASE SAVEPOINT|ROLLBACK TO SAVEPOINT|BEGIN|COMMIT|ROLLBACK)\b", re.I
)


def _settings(admin_url: str) -> tuple[str, str, str | None]:
    async def read() -> tuple[str, str, str | None]:
        conn = await asyncpg.connect(admin_url)
        try:
            row = await conn.fetchrow(
                "SELECT current_setting('data_directory') AS d,"
                " current_setting('log_line_prefix') AS p, pg_current_logfile() AS f"
            )
        finally:
            await conn.close()
        assert row is not None
        return row["d"], row["p"], row["f"]

    return asyncio.run(read())


class StatementLog:
    """Statements logged for the conformance databases, collected per GraphQL request."""

    def __init__(self, admin_url: str) -> None:
        self.admin_url = admin_url
        self.statements: list[str] = []
        self.problem: str | None = None
        """Why no statements are collected (None when collecting)."""
        data_dir, prefix, current = _settings(admin_url)
        self.path = Path(data_dir) / (current or "server.log")
        if prefix != DEFAULT_PREFIX:
            self.problem = f"log_line_prefix is {prefix!r}, the reader knows {DEFAULT_PREFIX!r}"
        elif not self.path.is_file():
            self.problem = f"the Postgres server log {self.path} is not readable here"

    def enable(self, database_url: str) -> None:
        """Log every statement run on the database of `database_url` (new sessions)."""
        if self.problem is not None:
            return
        name = database_url.rpartition("/")[2]

        async def alter() -> None:
            conn = await asyncpg.connect(self.admin_url)
            try:
                await conn.execute(f"ALTER DATABASE \"{name}\" SET log_statement = 'all'")
            finally:
                await conn.close()

        asyncio.run(alter())

    @contextmanager
    def window(self, url: str) -> Iterator[None]:
        """Around one request to `url`: keep the statements logged meanwhile (GraphQL only)."""
        if self.problem is not None or not GRAPHQL_PATHS.match(url):
            yield
            return
        start = self.path.stat().st_size
        try:
            yield
        finally:
            with self.path.open("rb") as fh:
                fh.seek(start)
                text = fh.read().decode(errors="replace")
            found = logged_statements(text)
            self.statements.extend(
                s for s in found if not CATALOG_SETUP.match(s) and not TRANSACTION_CONTROL.match(s)
            )


def logged_statements(text: str) -> Iterator[str]:
    """The statements of the `LOG:  statement:` / `LOG:  execute …:` records in `text` (a
    stretch of server log; a record runs to the next prefixed line)."""
    marks = list(RECORD.finditer(text))
    for n, mark in enumerate(marks):
        end = marks[n + 1].start() if n + 1 < len(marks) else len(text)
        found = STATEMENT.match(text, mark.end(), end)
        if found:
            yield found.group(1).rstrip("\n")
