"""The subscription scenario files of the corpus (`subscriptions/scenarios/*.yaml`, both
protocols) against a live `svc serve` under its default server interface (ASGI) and
default worker count.

Each scenario test is one pytest test `<file>::<test>`; passing ones are listed in
`baseline.json` (which only grows). Ids recorded there while this file ran once per
interface carry an `[asgi]` or `[rsgi]` suffix; they name the same scenario test.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from tests.conformance.runner import CORPUS, SERVER_ARGS, SKIP_REASON, load_yaml, read_baseline
from tests.support import ServerProcess, create_database
from tests.ws_scenarios import run_scenario

SCENARIO_DIR = CORPUS / "subscriptions" / "scenarios"
ENV = {"SVC_GRAPHQL_EXPERIMENTAL_FEATURES": "streaming_subscriptions"}
# The suffix of baseline ids from when each scenario ran once per server interface.
_INTERFACE_SUFFIX = re.compile(r"\[(asgi|rsgi)\]$")


def scenario_ids() -> list[tuple[str, str, str]]:
    """(id, file name, test name) of every scenario test of the corpus."""
    if not SCENARIO_DIR.is_dir():
        return []
    out = []
    for path in sorted(SCENARIO_DIR.glob("*.yaml")):
        for test in load_yaml(path)["tests"]:
            rel = path.relative_to(CORPUS).as_posix()
            out.append((f"{rel}::{test['name']}", path.name, test["name"]))
    return out


IDS = scenario_ids()


@pytest.fixture(scope="module")
def server(pg_url: str) -> Iterator[ServerProcess]:
    """One server (no `--server-interface`: the default) with `clear_db.yaml` applied."""
    started = ServerProcess(create_database(pg_url, prefix="ws"), *SERVER_ARGS, env=ENV)
    try:
        r = started.query(load_yaml(CORPUS / "clear_db.yaml"))
        assert r.status_code == 200, r.text
        yield started
    finally:
        started.stop()


@pytest.fixture(scope="module")
def results(server: ServerProcess) -> Iterator[dict[str, dict[str, str]]]:
    """file name → {test: result}, each scenario file run once."""

    class Lazy(dict[str, dict[str, str]]):
        def __missing__(self, name: str) -> dict[str, str]:
            self[name] = run_scenario(server.url, SCENARIO_DIR / name)
            return self[name]

    yield Lazy()


pytestmark = pytest.mark.skipif(not SCENARIO_DIR.is_dir(), reason=SKIP_REASON)


@pytest.mark.parametrize(
    ("name", "test"), [pytest.param(name, test, id=case_id) for case_id, name, test in IDS]
)
def test_scenario(results: dict[str, dict[str, str]], name: str, test: str) -> None:
    """The scenario test passes (its first failing step is the message)."""
    assert results[name][test] == "pass"


def test_baseline_scenarios_exist() -> None:
    """Every scenario id in the baseline (an interface suffix removed) is still a test of
    the corpus (none vanish)."""
    known = {case_id for case_id, *_ in IDS}
    listed = [i for i in read_baseline() if "::" in i and i.startswith("subscriptions/")]
    assert listed, "no subscription scenario in baseline.json"
    assert not [i for i in listed if _INTERFACE_SUFFIX.sub("", i) not in known]
