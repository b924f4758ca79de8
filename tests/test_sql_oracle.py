"""sqlglot as a syntax oracle for the SQL svc generates (issue 12), without a database.

Statements come from two places: the golden cases (`golden/*.sql`; tests/test_golden.py
checks each file is sqlglot's faithful rendering of the text svc rendered) and the conformance
run (the statements Postgres logged while svc answered its GraphQL requests, checked by
`tests/conformance/test_generated_sql.py` with the table below). A statement sqlglot cannot
parse must match a construct of `KNOWN_GAPS`, with its reason; anything else fails.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlglot
from sqlglot import exp

from tests.conformance.statement_log import logged_statements
from tests.sql_oracle import Gap, Unparsed, check, parse, pretty

GOLDEN = Path(__file__).resolve().parent.parent / "golden"

KNOWN_GAPS: dict[str, Gap] = {
    "object identifier arrays": Gap(
        r"::(?:oid|regclass)\[\]",
        "sqlglot 30 reads `oid[]` / `regclass[]` after `::` as a subscript of a type it knows "
        "by name, not as an array type (the catalog introspection query casts "
        "`p.proargtypes::oid[]`; it runs in a GraphQL request when a metadata reload does)",
        "SELECT a FROM unnest(p.proargtypes::oid[]) AS u(a)",
    ),
    "bit varying arrays": Gap(
        r"::bit varying\[\]",
        "sqlglot 30 does not parse an array of the two-word type `bit varying` "
        "(svc casts a list operand of a varbit column to `bit varying[]`)",
        "SELECT $1::text[]::bit varying[]",
    ),
    "asyncpg reset script": Gap(
        r"UNLISTEN \*",
        "asyncpg's reset query (`SELECT pg_advisory_unlock_all(); CLOSE ALL; UNLISTEN *; "
        "RESET ALL;`), which `Database.transaction` sends after each use: several statements "
        "in one simple-protocol string, and sqlglot's Postgres dialect reads `UNLISTEN *` as "
        "an incomplete multiplication; not SQL svc composes",
        "UNLISTEN *",
    ),
}


@pytest.mark.parametrize("name", sorted(KNOWN_GAPS))
def test_known_gaps_are_still_gaps(name: str) -> None:
    """A gap sqlglot learns to parse fails here, so the table cannot go stale."""
    gap = KNOWN_GAPS[name]
    assert gap.matches(gap.example)
    with pytest.raises(Unparsed):
        parse(gap.example)


def golden_statements(paths: list[Path] | None = None) -> list[str]:
    """Every statement of the golden files (or of `paths`; comments dropped,
    `;`-terminated)."""
    out: list[str] = []
    for path in sorted(GOLDEN.glob("*.sql")) if paths is None else paths:
        text = "\n".join(ln for ln in path.read_text().splitlines() if not ln.startswith("-- "))
        out.extend(part.strip() for part in text.split(";\n") if part.strip())
    return out


def test_every_golden_statement_parses() -> None:
    statements = golden_statements()
    # A steps snapshot may hold no SQL (an action answered from its call alone).
    files = sum(bool(golden_statements([path])) for path in GOLDEN.glob("*.sql"))
    assert len(statements) >= files > 40
    report = check(statements, KNOWN_GAPS)
    print(f"golden: {report.summary()}")
    assert not report.failures, report.failures
    assert not report.gaps  # svc's composed SQL has no known gap today
    assert report.parsed == len(set(statements))


def test_the_oracle_refuses_what_sqlglot_only_keeps_as_text() -> None:
    """sqlglot keeps text it does not understand as an opaque `Command` (with a warning):
    the oracle counts that as a failure, as it does several statements or a parse error."""
    assert isinstance(sqlglot.parse_one("EXPLAIN SELECT 1", read="postgres"), exp.Command)
    for sql in ("EXPLAIN SELECT 1", "SELECT 1; SELECT 2", "SELECT (1"):
        with pytest.raises(Unparsed):
            parse(sql)
    report = check(["SELECT 1", "SELECT 1", "SELECT (1", "UNLISTEN *"], KNOWN_GAPS)
    assert (report.parsed, len(report.failures)) == (1, 1)
    assert list(report.gaps) == ["asyncpg reset script"]


def test_pretty_is_the_same_tree() -> None:
    sql = 'SELECT coalesce(json_agg(x."a" ORDER BY x."b" DESC), \'[]\') FROM "s"."t" AS x'
    text = pretty(sql)
    assert "\n" in text
    assert parse(text) == parse(sql)
    assert parse(text) != parse(sql.replace('"b"', '"c"'))


LOG = """\
2026-11-25 06:14:01.123 UTC [4242] LOG:  statement: BEGIN;
2026-11-25 06:14:01.124 UTC [4242] LOG:  execute __asyncpg_stmt_1__: SELECT $1::text::integer
2026-11-25 06:14:01.124 UTC [4242] DETAIL:  parameters: $1 = '2026-11-25 06:14:01 UTC [1] x'
2026-11-25 06:14:01.125 UTC [4243] LOG:  execute <unnamed>: SELECT a,
\t  b FROM t
2026-11-25 06:14:01.126 UTC [4243] ERROR:  relation "t" does not exist
2026-11-25 06:14:01.126 UTC [4243] STATEMENT:  SELECT a, b FROM t
2026-11-25 06:14:01.127 UTC [4242] LOG:  checkpoint starting: time
"""


def test_statements_are_read_from_the_server_log() -> None:
    """The conformance collector's reader: statements of LOG records only, multi-line ones
    whole, parameters (even one that looks like a log prefix) and errors left out."""
    assert list(logged_statements(LOG)) == [
        "BEGIN;",
        "SELECT $1::text::integer",
        "SELECT a,\n\t  b FROM t",
    ]
