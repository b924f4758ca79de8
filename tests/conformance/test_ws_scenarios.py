"""The subscription scenario files of the corpus (`subscriptions/scenarios/*.yaml`, both
protocols) against a live `svc serve` (default worker count), once per server interface.

Each scenario test is one pytest test `<file>::<test>[<interface>]`; passing ones are listed in
`baseline.json` (which only grows). Under RSGI, Granian 2.8.7 sends no close codes
(`svc/server/ws_rsgi.py`), so the tests that expect code 4400 are strict xfails there.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conformance.runner import CORPUS, SERVER_ARGS, SKIP_REASON, load_yaml, read_baseline
from tests.support import ServerProcess, create_database
from tests.ws_scenarios import run_scenario

SCENARIO_DIR = CORPUS / "subscriptions" / "scenarios"
INTERFACES = ("asgi", "rsgi")
ENV = {"SVC_GRAPHQL_EXPERIMENTAL_FEATURES": "streaming_subscriptions"}
RSGI_NO_CLOSE_CODE = (
    "Granian 2.8.7's RSGI websocket close() sends no status code (the client sees 1005, "
    "not 4400); --server-interface asgi sends it"
)
KNOWN: dict[str, str] = {
    "subscriptions/scenarios/basic_graphql_ws.yaml::connection_error[rsgi]": RSGI_NO_CLOSE_CODE,
    "subscriptions/scenarios/basic_graphql_ws.yaml::stop_without_id[rsgi]": RSGI_NO_CLOSE_CODE,
}


def scenario_ids() -> list[tuple[str, str, str, str]]:
    """(id, interface, file name, test name) of every scenario test of the corpus."""
    if not SCENARIO_DIR.is_dir():
        return []
    out = []
    for interface in INTERFACES:
        for path in sorted(SCENARIO_DIR.glob("*.yaml")):
            for test in load_yaml(path)["tests"]:
                rel = path.relative_to(CORPUS).as_posix()
                out.append(
                    (f"{rel}::{test['name']}[{interface}]", interface, path.name, test["name"])
                )
    return out


IDS = scenario_ids()


@pytest.fixture(scope="module")
def servers(pg_url: str) -> Iterator[dict[str, ServerProcess]]:
    """One server per interface, started on first use, with `clear_db.yaml` applied."""
    started: dict[str, ServerProcess] = {}

    class Lazy(dict[str, ServerProcess]):
        def __missing__(self, interface: str) -> ServerProcess:
            url = create_database(pg_url, prefix="ws")
            args = (*SERVER_ARGS, "--server-interface", interface)
            server = ServerProcess(url, *args, env=ENV)
            r = server.query(load_yaml(CORPUS / "clear_db.yaml"))
            assert r.status_code == 200, r.text
            started[interface] = self[interface] = server
            return server

    try:
        yield Lazy()
    finally:
        for server in started.values():
            server.stop()


@pytest.fixture(scope="module")
def results(servers: dict[str, ServerProcess]) -> Iterator[dict[tuple[str, str], dict[str, str]]]:
    """(interface, file name) → {test: result}, each scenario file run once."""

    class Lazy(dict[tuple[str, str], dict[str, str]]):
        def __missing__(self, key: tuple[str, str]) -> dict[str, str]:
            interface, name = key
            self[key] = run_scenario(servers[interface].url, SCENARIO_DIR / name)
            return self[key]

    yield Lazy()


def _params() -> list[object]:
    params: list[object] = []
    for case_id, interface, name, test in IDS:
        marks = []
        if case_id in KNOWN:
            marks.append(pytest.mark.xfail(strict=True, reason=KNOWN[case_id]))
        params.append(pytest.param(interface, name, test, id=case_id, marks=marks))
    return params


pytestmark = pytest.mark.skipif(not SCENARIO_DIR.is_dir(), reason=SKIP_REASON)


@pytest.mark.parametrize(("interface", "name", "test"), _params())
def test_scenario(
    results: dict[tuple[str, str], dict[str, str]], interface: str, name: str, test: str
) -> None:
    """The scenario test passes (its first failing step is the message)."""
    assert results[(interface, name)][test] == "pass"


def test_baseline_scenarios_exist() -> None:
    """Every scenario id in the baseline is still a test of the corpus (none vanish)."""
    known = {case_id for case_id, *_ in IDS}
    listed = [i for i in read_baseline() if "::" in i and i.startswith("subscriptions/")]
    assert listed, "no subscription scenario in baseline.json"
    assert not [i for i in listed if i not in known]
    assert not [i for i in listed if i in KNOWN], "a known failure is in the baseline"
