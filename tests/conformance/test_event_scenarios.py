"""The event-trigger scenario files of the corpus (`event_triggers/scenarios/*.yaml`,
FIXTURES.md §4) against a live `svc serve` (default worker count) started with the corpus
environment, with the `events` webhook recorder on 127.0.0.1:5592
(`tests/fixture_servers/events.py`). Driver: `tests/event_scenarios.py`.

Each scenario test is one pytest test `<file>::<test>`; the files run in name order, each
once, its tests in order.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conformance.runner import CORPUS, SERVER_ARGS, SKIP_REASON, load_yaml
from tests.event_scenarios import run_scenario
from tests.fixture_servers import CORPUS_ENV
from tests.fixture_servers import events as fixture
from tests.support import ServerProcess, create_database
from tests.webhook_recorder import WebhookRecorder

SCENARIO_DIR = CORPUS / "event_triggers" / "scenarios"
# Known failures, with why.
KNOWN: dict[str, str] = {}


def scenario_ids() -> list[tuple[str, str, str]]:
    """(id, file name, test name) of every event-trigger scenario test."""
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
    s = ServerProcess(create_database(pg_url, prefix="events"), *SERVER_ARGS, env=CORPUS_ENV)
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
