"""Fixtures of the conformance run: one run per session, shown in the terminal summary."""

from __future__ import annotations

import pytest

from tests.conformance.runner import (
    CORPUS,
    SKIP_REASON,
    RunResult,
    format_summary,
    run_corpus,
    write_last_run,
)

RUN_KEY = pytest.StashKey[RunResult]()
ORACLE_KEY = pytest.StashKey[str]()
"""The sqlglot oracle's line over the run's statements (test_generated_sql.py)."""


@pytest.fixture(scope="session")
def conformance_run(request: pytest.FixtureRequest, pg_url: str) -> RunResult:
    """The whole corpus run once on a real server; also writes `last_run.json`.

    Other tests may assert thresholds on `conformance_run.rates()` ({dir: (passed, total)}).
    """
    if not CORPUS.is_dir():
        pytest.skip(SKIP_REASON)
    run = run_corpus(pg_url)
    request.config.stash[RUN_KEY] = run
    write_last_run(run)
    return run


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print the per-directory pass table at the end of every run that ran the corpus."""
    run = terminalreporter.config.stash.get(RUN_KEY, None)
    if run is None:
        return
    terminalreporter.section("conformance")
    for line in format_summary(run).splitlines():
        terminalreporter.write_line(line)
    oracle = terminalreporter.config.stash.get(ORACLE_KEY, None)
    if oracle is not None:
        terminalreporter.write_line(f"sql oracle: {oracle}")
