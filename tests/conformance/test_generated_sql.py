"""Every statement svc ran for the conformance run's GraphQL requests parses with sqlglot
(the syntax oracle of tests/test_sql_oracle.py, whose `KNOWN_GAPS` lists the constructs sqlglot
cannot parse). The statements are those Postgres logged while svc answered each request
(`tests/conformance/statement_log.py`); the count parsed is printed in the conformance section
of the terminal summary."""

from __future__ import annotations

import pytest

from tests.conformance.conftest import ORACLE_KEY
from tests.conformance.runner import CORPUS, SKIP_REASON, RunResult
from tests.sql_oracle import check
from tests.test_sql_oracle import KNOWN_GAPS

pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason=SKIP_REASON)


def test_generated_statements_parse(
    conformance_run: RunResult, request: pytest.FixtureRequest
) -> None:
    if conformance_run.statements_problem is not None:
        pytest.skip(f"no statements collected: {conformance_run.statements_problem}")
    report = check(conformance_run.statements, KNOWN_GAPS)
    line = f"{len(conformance_run.statements)} statements logged; {report.summary()}"
    request.config.stash[ORACLE_KEY] = line
    print(line)
    assert report.parsed > 0, "the run logged no GraphQL statement that sqlglot parsed"
    assert not report.failures, "sqlglot cannot parse (add a KNOWN_GAPS entry if it is one):\n" + (
        "\n".join(f"  {why}: {sql[:500]}" for sql, why in report.failures)
    )
