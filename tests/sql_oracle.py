"""sqlglot as a syntax oracle and pretty-printer for the SQL svc generates (issue 12).

`parse(sql)` is sqlglot's Postgres-dialect tree of one statement, or `Unparsed` when sqlglot
rejects it (a parse error, several statements, or its fallback of keeping text it does not
understand as an opaque `Command`, which would otherwise pass silently). `pretty(sql)` is the
reviewed form of golden SQL, checked to be the same tree as the text svc rendered.
`check(statements)` sorts statements into parsed, known gaps (`KNOWN_GAPS` in
tests/test_sql_oracle.py decides which) and unexplained failures. No database is involved.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

DIALECT = "postgres"


class Unparsed(Exception):
    """sqlglot did not parse a statement: `reason` says how (its error's first line)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def parse(sql: str) -> exp.Expression:
    """sqlglot's tree of the one Postgres statement `sql`; raises `Unparsed`."""
    # sqlglot logs a warning when it falls back to `Command`; the oracle reports that itself.
    logger = logging.getLogger("sqlglot")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        trees = sqlglot.parse(sql, read=DIALECT)
    except SqlglotError as exc:
        raise Unparsed(f"{type(exc).__name__}: {str(exc).splitlines()[0]}") from None
    finally:
        logger.setLevel(level)
    trees = [t for t in trees if t is not None]
    if len(trees) != 1:
        raise Unparsed(f"{len(trees)} statements, expected 1")
    (tree,) = trees
    if isinstance(tree, exp.Command):
        raise Unparsed(f"kept as an opaque Command from {tree.name!r}")
    return tree


def pretty(sql: str) -> str:
    """sqlglot's pretty Postgres rendering of `sql`; AssertionError unless it parses back to
    the same tree as `sql` (so the golden file is a faithful picture of what svc runs)."""
    tree = parse(sql)
    text = tree.sql(dialect=DIALECT, pretty=True)
    assert parse(text) == tree, f"sqlglot's pretty form differs from:\n{sql}"
    return text


@dataclass(frozen=True)
class Gap:
    """A construct sqlglot cannot parse: `pattern` (a regex searched in the statement),
    `reason`, and `example`, a statement of it that tests check sqlglot still rejects."""

    pattern: str
    reason: str
    example: str

    def matches(self, sql: str) -> bool:
        """Whether `sql` has this construct."""
        return re.search(self.pattern, sql) is not None


@dataclass
class Report:
    """The statements of one check: parsed, by known gap, and unexplained failures."""

    parsed: int = 0
    gaps: dict[str, list[str]] = field(default_factory=dict)
    failures: list[tuple[str, str]] = field(default_factory=list)
    """(statement, why sqlglot rejected it) for statements no gap explains."""

    def summary(self) -> str:
        """One line: counts parsed, per gap, and unexplained."""
        gaps = ", ".join(f"{name} {len(sqls)}" for name, sqls in sorted(self.gaps.items()))
        return (
            f"sqlglot parsed {self.parsed} distinct statements; known gaps: {gaps or 'none'}; "
            f"unexplained: {len(self.failures)}"
        )


def check(statements: Iterable[str], gaps: dict[str, Gap]) -> Report:
    """Parse each distinct statement; a failure is filed under the first gap that matches."""
    report = Report()
    for sql in dict.fromkeys(statements):
        try:
            parse(sql)
        except Unparsed as exc:
            name = next((n for n, gap in gaps.items() if gap.matches(sql)), None)
            if name is None:
                report.failures.append((sql, exc.reason))
            else:
                report.gaps.setdefault(name, []).append(sql)
        else:
            report.parsed += 1
    return report
