"""The scheduled-trigger scenario files of the corpus (`scheduled_triggers/scenarios/*.yaml`,
FIXTURES.md §5) against a live `svc serve` (default worker count) started with the corpus
environment, with the `scheduled` webhook recorder on 127.0.0.1:5594
(`tests/fixture_servers/scheduled.py`). Driver: `tests/scheduled_scenarios.py`.

Each scenario test is one pytest test `<file>::<test>`; the files run in name order, each
once, its tests in order (the cron file's tests share state).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conformance.runner import CORPUS, SERVER_ARGS, SKIP_REASON, load_yaml
from tests.fixture_servers import CORPUS_ENV
from tests.fixture_servers import scheduled as fixture
from tests.scheduled_scenarios import run_scenario
from tests.support import ServerProcess, create_database
from tests.webhook_recorder import WebhookRecorder

SCENARIO_DIR = CORPUS / "scheduled_triggers" / "scenarios"
# Known failures, with why. The last step's SQL sits unquoted in a YAML flow mapping,
# `{sql: select status,tries from …}`, so the comma ends the string and the request is
# `run_sql` "select status" (a 42703 in any engine); the statuses it means to check
# (`[error, 2], [delivered, 1], [dead, 0]`) are asserted by
# tests/test_scheduled.py::test_dead_retries_error_logs_and_listing.
KNOWN = {
    "scheduled_triggers/scenarios/scheduled_events.yaml::scheduled_events": (
        "corpus: the final run_sql is cut at a comma by YAML flow syntax (sends 'select status')"
    ),
}


def scenario_ids() -> list[tuple[str, str, str]]:
    """(id, file name, test name) of every scheduled-trigger scenario test."""
    if not SCENARIO_DIR.is_dir():
        return []
    out = []
    for path in sorted(SCENARIO_DIR.glob("*.yaml")):
        rel = path.relative_to(CORPUS).as_posix()
        out.extend((f"{rel}::{t['name']}", path.name, t["name"]) for t in load_yaml(path)["tests"])
    return out


IDS = scenario_ids()
pytestmark = pytest.mark.skipif(not SCENARIO_DIR.is_dir(), reason=SKIP_REASON)


@pytest.fixture(scope="module")
def hook() -> Iterator[WebhookRecorder]:
    with fixture.serve() as running:
        yield running


@pytest.fixture(scope="module")
def server(pg_url: str, hook: WebhookRecorder) -> Iterator[ServerProcess]:
    s = ServerProcess(create_database(pg_url, prefix="sched"), *SERVER_ARGS, env=CORPUS_ENV)
    try:
        r = s.query(load_yaml(CORPUS / "clear_db.yaml"))
        assert r.status_code == 200, r.text
        yield s
    finally:
        s.stop()


@pytest.fixture(scope="module")
def results(server: ServerProcess, hook: WebhookRecorder) -> Iterator[dict[str, dict[str, str]]]:
    """file name → {test: result}, each file run once, on first use."""

    class Lazy(dict[str, dict[str, str]]):
        def __missing__(self, name: str) -> dict[str, str]:
            self[name] = run_scenario(server.url, SCENARIO_DIR / name, hook)
            return self[name]

    yield Lazy()


def _params() -> list[object]:
    out: list[object] = []
    for case_id, name, test in IDS:
        known = KNOWN.get(case_id)
        marks = [pytest.mark.xfail(strict=True, reason=known)] if known else []
        out.append(pytest.param(name, test, id=case_id, marks=marks))
    return out


@pytest.mark.parametrize(("name", "test"), _params())
def test_scenario(results: dict[str, dict[str, str]], name: str, test: str) -> None:
    """The scenario test passes (its first failing step is the message)."""
    assert results[name][test] == "pass"
