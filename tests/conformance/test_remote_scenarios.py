"""The remote-schema scenario files of the corpus (`remote_schemas/scenarios/*.yaml`,
FIXTURES.md §2, §7) against a live `svc serve` with the remote fixture servers running.

Adds the HTTP steps (`http` with `expect`/`save`/`retry`, `introspection_matches_remote`,
`server: {stop|start}`) to the websocket scenario runner (`tests/ws_scenarios.py`). A
server is started per environment a file asks for (`env`, over FIXTURES.md §1's). Each
scenario test is one pytest test `<file>::<test>`; known gaps are strict xfails.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conformance.runner import (
    CORPUS,
    SERVER_ARGS,
    SKIP_REASON,
    compare_body,
    decode,
    load_yaml,
)
from tests.fixture_servers import CORPUS_ENV, remote_graphql, remote_node
from tests.support import ServerProcess, create_database
from tests.ws_scenarios import PASS, Scenario, StepFailed, _run_steps, at_path

SCENARIO_DIR = CORPUS / "remote_schemas" / "scenarios"
KNOWN: dict[str, str] = {
    "remote_schemas/scenarios/tbls.yaml::add_conflicting_table": (
        "the refused bulk (run_sql + track_table) is rolled back whole, so the table its "
        "next step drops does not exist; the reference kept the run_sql's table"
    ),
}


def scenario_ids() -> list[tuple[str, str, str]]:
    """(id, file name, test name) of every remote-schema scenario test."""
    if not SCENARIO_DIR.is_dir():
        return []
    out = []
    for path in sorted(SCENARIO_DIR.glob("*.yaml")):
        for test in load_yaml(path)["tests"]:
            rel = path.relative_to(CORPUS).as_posix()
            out.append((f"{rel}::{test['name']}", path.name, test["name"]))
    return out


class RemoteScenario(Scenario):
    """`Scenario` with the HTTP steps of FIXTURES.md §2."""

    def __init__(self, base_url: str, http: httpx.Client) -> None:
        super().__init__(base_url, http)
        self.vars: dict[str, Any] = {}

    async def step(self, step: dict[str, Any]) -> None:
        """Run one step; an `http` step's siblings (`expect`, `save`, `retry`) join it."""
        if "http" in step:
            await self._http({**step["http"], **{k: v for k, v in step.items() if k != "http"}})
        else:
            await super().step(step)

    def _request(self, arg: dict[str, Any]) -> httpx.Response:
        if "from_case" in arg:
            ref = arg["from_case"]
            doc = load_yaml(CORPUS / (ref if isinstance(ref, str) else ref["file"]))
            step = doc[ref.get("step", 0)] if isinstance(doc, list) else doc
            arg = {**step, **{k: v for k, v in arg.items() if k != "from_case"}}
        body = load_yaml(CORPUS / arg["query_file"]) if "query_file" in arg else arg.get("query")
        headers = {str(k): str(v) for k, v in (arg.get("headers") or {}).items()}
        if arg.get("method") == "GET":
            return self.http.get(arg["url"], headers=headers, timeout=30)
        return self.http.post(arg["url"], json=body, headers=headers, timeout=30)

    async def _http(self, arg: dict[str, Any]) -> None:
        expect = arg.get("expect") or {}
        retry = arg.get("retry")
        deadline = time.monotonic() + (retry or {}).get("for_s", 0)
        while True:
            r = self._request(arg)
            problem = self._check(r, expect)
            if problem is None or retry is None or time.monotonic() > deadline:
                break
            await asyncio.sleep(retry.get("every_s", 0.5))
        if problem:
            raise StepFailed(problem)
        for name, path in (arg.get("save") or {}).items():
            self.vars[name] = at_path(r.json(), path)

    @staticmethod
    def _check(r: httpx.Response, expect: dict[str, Any]) -> str | None:
        if r.status_code != expect.get("status", 200):
            return f"status {r.status_code}: {r.text[:300]}"
        body = decode(r)
        if "response" in expect:
            problem = compare_body(str(r.url.path), expect["response"], body)
            if problem:
                return problem
        for path, value in (expect.get("equal") or {}).items():
            try:
                got = at_path(body, path)
            except (KeyError, IndexError, TypeError):
                return f"{path}: missing in {json.dumps(body)[:300]}"
            if got != value:
                return f"{path}: expected {value!r}, got {got!r}"
        for name, value in (expect.get("headers") or {}).items():
            if r.headers.get(name) != str(value):
                return f"header {name}: expected {value!r}, got {r.headers.get(name)!r}"
        spec = expect.get("introspection")
        if spec:
            schema = body["data"]["__schema"]
            types = {t["name"]: t for t in schema["types"]}
            missing = [t for t in spec.get("types", ()) if t not in types]
            roots = {f["name"] for f in (types.get("query_root") or {}).get("fields") or ()}
            missing += [f for f in spec.get("query_root_fields", ()) if f not in roots]
            if missing:
                return f"introspection lacks {missing}"
        return None

    async def _introspection_matches_remote(self, arg: dict[str, Any]) -> None:
        query = load_yaml(CORPUS / arg["case_file"])["query"]
        ours = self.http.post("/v1/graphql", json=query, timeout=30).json()["data"]["__schema"]
        theirs = httpx.post(arg["remote_url"], json=query, timeout=30).json()["data"]["__schema"]
        mine = {
            f["name"]: f for t in ours["types"] if t["name"] == "query_root" for f in t["fields"]
        }
        root = theirs["queryType"]["name"]
        for t in theirs["types"]:
            if t["name"] != root:
                continue
            for f in t["fields"]:
                have = mine.get(f["name"])
                if have is None or have["type"] != f["type"]:
                    raise StepFailed(f"field {f['name']}: {have and have['type']} != {f['type']}")
                args = {a["name"]: a for a in have["args"]}
                for a in f["args"]:
                    got = args.get(a["name"])
                    if got is None or got["type"] != a["type"]:
                        raise StepFailed(f"argument {f['name']}.{a['name']} differs")
                    if _value(got["defaultValue"]) != _value(a["defaultValue"]):
                        raise StepFailed(
                            f"default of {a['name']}: {got['defaultValue']} != {a['defaultValue']}"
                        )

    async def _server(self, arg: dict[str, Any]) -> None:
        name = arg.get("stop") or arg.get("start")
        servers = {**remote_graphql.SERVERS, **remote_node.SERVERS}
        if "stop" in arg:
            servers[name].stop()
        else:
            servers[name].start()


def _value(text: str | None) -> Any:
    """A GraphQL default value's text as a comparable value (object fields in any order)."""
    if text is None:
        return None
    from graphql import parse_value, value_from_ast_untyped

    return value_from_ast_untyped(parse_value(text))


async def _run(base_url: str, doc: dict[str, Any]) -> dict[str, str]:
    results: dict[str, str] = {}
    per_test = doc.get("fixture_scope") == "test"
    with httpx.Client(base_url=base_url) as http:
        sc = RemoteScenario(base_url, http)
        try:
            if not per_test:
                sc.post_setup(doc.get("setup") or [])
            before = await _run_steps(sc, doc.get("before_tests") or [])
            for test in doc["tests"]:
                if before != PASS:
                    results[test["name"]] = f"before_tests failed: {before}"
                    continue
                try:
                    if per_test:
                        sc.post_setup(doc.get("setup") or [])
                    results[test["name"]] = await _run_steps(sc, test["steps"])
                    sc.post_setup(doc.get("test_teardown") or [])
                    if per_test:
                        sc.post_setup(doc.get("teardown") or [])
                except StepFailed as exc:
                    results.setdefault(test["name"], f"fixture: {exc}")
        finally:
            await sc.close_all()
            if not per_test:
                with contextlib.suppress(StepFailed):
                    sc.post_setup(doc.get("teardown") or [])
    return results


IDS = scenario_ids()
pytestmark = pytest.mark.skipif(not SCENARIO_DIR.is_dir(), reason=SKIP_REASON)


@pytest.fixture(scope="module")
def remotes() -> Iterator[None]:
    """The remote fixture servers (FIXTURES.md §7, §8)."""
    with remote_graphql.serve(), remote_node.serve():
        yield


@pytest.fixture(scope="module")
def results(pg_url: str, remotes: None) -> Iterator[dict[str, dict[str, str]]]:
    """File name → {test: result}; each file run once, on a server with its `env`."""
    servers: dict[str, ServerProcess] = {}

    class Lazy(dict[str, dict[str, str]]):
        def __missing__(self, name: str) -> dict[str, str]:
            doc = load_yaml(SCENARIO_DIR / name)
            env = {**CORPUS_ENV, **(doc.get("env") or {})}
            key = json.dumps(env, sort_keys=True)
            if key not in servers:
                server = ServerProcess(create_database(pg_url, prefix="rs"), *SERVER_ARGS, env=env)
                server.query(load_yaml(CORPUS / "clear_db.yaml"))
                servers[key] = server
            self[name] = asyncio.run(_run(servers[key].url, doc))
            return self[name]

    try:
        yield Lazy()
    finally:
        for server in servers.values():
            server.stop()


def _params() -> list[object]:
    out: list[object] = []
    for case_id, name, test in IDS:
        marks = []
        if case_id in KNOWN:
            marks.append(pytest.mark.xfail(strict=True, reason=KNOWN[case_id]))
        out.append(pytest.param(name, test, id=case_id, marks=marks))
    return out


@pytest.mark.parametrize(("name", "test"), _params())
def test_scenario(results: dict[str, dict[str, str]], name: str, test: str) -> None:
    """The scenario test passes (its first failing step is the message)."""
    assert results[name][test] == PASS


def test_every_scenario_file_loads() -> None:
    """The driver knows every step kind the remote-schema scenario files use."""
    kinds = {
        next(iter(step))
        for path in SCENARIO_DIR.glob("*.yaml")
        for test in load_yaml(path)["tests"]
        for step in test["steps"]
    }
    assert all(hasattr(RemoteScenario, f"_{k}") for k in kinds), kinds
    assert Path(__file__).name == "test_remote_scenarios.py"
