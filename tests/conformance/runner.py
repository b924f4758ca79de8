"""Conformance runner: replays the upstream-style YAML corpus against a real `svc serve`.

The corpus (`../shared/conformance`, see `CORPUS`) holds one directory per upstream test class.
Each directory has setup/teardown request bodies and case files; a case file is one step (a
mapping) or a stateful script (a list of steps) with `url`, `status`, optional `headers`,
`method`, `body`, `query` (the request body), `response` and `resp_headers`.

Setup granularity follows upstream's pytest fixtures:

* `setup.yaml`/`teardown.yaml` run once per directory (`per_class_tests_db_state`), except
  under `v1/`, where they run around every case file (`per_method_tests_db_state`).
* `schema_setup.yaml`/`schema_teardown.yaml` run once per directory and
  `values_setup.yaml`/`values_teardown.yaml` around every case file (the mutation fixtures
  `per_class_db_schema_for_mutation_tests` + `per_method_db_data_for_mutation_tests`).

Every setup/teardown body is POSTed to `/v1/query` (an `API_V2` directory's as WAVE3.md
section 0 says) and must answer 200. The root `clear_db.yaml`
runs once on every database the runner uses. When a setup or teardown fails, or the server
dies, the runner moves to a fresh database and a fresh server so later directories start clean.

Comparison rules (`compare_step`): the status must match exactly; an expected error body
(GraphQL `{errors: [...]}` or `/v1/query` `{code, error}`) is compared by error code only;
`/v1/graphql/explain` bodies by shape; anything else by JSON equality (numbers by value, key
order ignored; booleans are not numbers).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import asyncpg
import httpx
import yaml

from tests import fixture_servers
from tests.conformance.statement_log import StatementLog
from tests.fixture_servers import CORPUS_ENV
from tests.support import SHARED, ServerProcess, create_database

CORPUS = SHARED / "conformance"
"""The shared corpus: `../shared/conformance` relative to the project."""

SKIP_REASON = "../shared/conformance not found (a user's clone has no shared corpus)"

HERE = Path(__file__).resolve().parent
BASELINE_PATH = HERE / "baseline.json"
LAST_RUN_PATH = HERE / "last_run.json"
UPDATE_BASELINE_ENV = "SVC_CONFORMANCE_UPDATE_BASELINE"
ONLY_ENV = "SVC_CONFORMANCE_ONLY"
"""Comma-separated directory prefixes (`graphql_query/enums,v1`): a developer's run of part
of the corpus; only those directories' baseline cases are checked. Unset in CI."""

SERVER_ARGS: tuple[str, ...] = ("--stringify-numeric-types",)
"""Upstream runs the whole suite with `serve --stringify-numeric-types`."""

REQUEST_TIMEOUT = 30.0
"""Seconds allowed for one request; a hung engine must not stall the whole run."""

PASS = "pass"
SCENARIOS = "scenarios"
"""Directories of scenario files (`<area>/scenarios/*.yaml`), skipped by the case runner."""
SCENARIO_ID = "::"

# Baseline cases the reference itself has since changed: svc follows the newer behaviour,
# and each must fail exactly as the newer reference answers (the expected failure text),
# as a strict xfail would (`test_conformance.test_superseded_cases_fail_as_the_newer_reference`).
SUPERSEDED: dict[str, tuple[str, str]] = {
    "graphql_query/permissions/inherited_roles/basic_inherited_roles.yaml#3": (
        "expected 25430, got 10000",
        "the corpus (reference commit 4c0d9e4) sums a salary the inherited role sees as null "
        "in employee 4's row; the reference now redacts aggregation inputs "
        "(server/lib/api-tests/src/Test/Auth/Authorization/InheritedRoles/"
        "ColumnRedactionSpec.hs, 'Check redaction of column input values to aggregation "
        "functions'), so the sum is only the visible 10000",
    ),
}
"""Baseline ids of scenario tests are `<file>::<test>`."""

SETUP_NAMES = frozenset(
    {
        "setup.yaml",
        "teardown.yaml",
        "schema_setup.yaml",
        "schema_teardown.yaml",
        "values_setup.yaml",
        "values_teardown.yaml",
    }
)

API_V2 = frozenset({"graphql_query/permissions/inherited_roles"})
"""Directories of the *class, metadata API v2* fixture (WAVE3.md section 0):
`schema_setup.yaml` → `/v2/query`, then `setup.yaml` → `/v1/metadata`; after the last case
`teardown.yaml` → `/v1/metadata`, then `schema_teardown.yaml` → `/v2/query`."""


def fixture_url(path: Path) -> str:
    """Where a fixture body is posted: `/v1/query`, or for an `API_V2` directory
    `/v2/query` (schema files) and `/v1/metadata` (the others)."""
    try:
        rel = path.parent.relative_to(CORPUS).as_posix()
    except ValueError:
        return "/v1/query"
    if rel not in API_V2:
        return "/v1/query"
    return "/v2/query" if path.name.startswith("schema_") else "/v1/metadata"


_NAMING = {"SVC_GRAPHQL_EXPERIMENTAL_FEATURES": "naming_convention"}
FILE_ENV: dict[str, dict[str, str]] = {
    **{
        f"naming_conventions/{name}.yaml": _NAMING
        for name in (
            "type_and_field_names",
            "field_name_precedence",
            "enum_value_convention",
            "type_and_field_names_with_prefix_and_suffix",
        )
    },
    "naming_conventions/default_global_naming_convention.yaml": {
        **_NAMING,
        "SVC_GRAPHQL_DEFAULT_NAMING_CONVENTION": "graphql-default",
    },
}
"""Case files the reference runs on a server started with other configuration (WAVE3.md
section 5: its three naming convention classes): the variables over `CORPUS_ENV`. The
runner restarts the server (on a fresh database) when a file needs another configuration
than the current one; every other file runs with `CORPUS_ENV` alone."""


EXTRA_CASES: dict[str, int] = {
    # upstream: test_select_query_invalid_fkey_relationship posts this bare /v1/query body and
    # expects 400 ("Expecting object { table, columns }.", message not checked here).
    "graphql_query/basic/setup_invalid_fkey_relationship.yaml": 400,
}
"""Bare `/v1/query` bodies (not case files) that upstream posts expecting this status."""


CYCLE = ["circular_role", "intermediate_circular_role_2", "intermediate_circular_role_1"]


def _cyclic_roles_fail(engine: Any) -> str | None:
    """The reference's `test_inherited_role_cycle` (WAVE3.md section 1; its case file is
    empty): three roles closing a cycle appended to the exported `inherited_roles`,
    `replace_metadata` answers 400 with the exact error, and the metadata is unchanged."""
    before = engine.request({"url": "/v1/query", "query": {"type": "export_metadata", "args": {}}})
    if before.status_code != 200:
        return f"export_metadata: status {before.status_code}"
    md = before.json()
    md["inherited_roles"] = [
        *md.get("inherited_roles", []),
        {"role_name": CYCLE[2], "role_set": ["manager_employee", CYCLE[0]]},
        {"role_name": CYCLE[1], "role_set": [CYCLE[2], "employee"]},
        {"role_name": CYCLE[0], "role_set": [CYCLE[1], "author"]},
    ]
    body = {"type": "replace_metadata", "args": {"metadata": md}}
    resp = engine.request({"url": "/v1/query", "query": body})
    expected = "found cycle(s) in roles: " + json.dumps([*CYCLE, CYCLE[0]], separators=(",", ":"))
    if resp.status_code != 400:
        return f"status: expected 400, got {resp.status_code}: {_error_text(decode(resp))}"
    error = decode(resp).get("error") if isinstance(decode(resp), dict) else None
    if error != expected:
        return f"error: expected {expected!r}, got {error!r}"
    after = engine.request({"url": "/v1/query", "query": {"type": "export_metadata", "args": {}}})
    return None if after.json() == before.json() else "the metadata changed"


PYTHON_CASES: dict[str, Callable[[Any], str | None]] = {
    "graphql_query/permissions/inherited_roles/cyclic_roles_fail.yaml": _cyclic_roles_fail,
}
"""Case files the reference does not read: the check is built in Python (WAVE3.md)."""


# --------------------------------------------------------------------------------------------
# Loading


class _CorpusLoader(yaml.SafeLoader):
    """SafeLoader without the timestamp resolver: dates stay the strings JSON would carry."""


_CorpusLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def load_yaml(path: Path) -> Any:
    """The document in `path`, normalised to what JSON can carry (e.g. int keys → strings)."""
    data = yaml.load(path.read_text(), Loader=_CorpusLoader)
    return json.loads(json.dumps(data, default=str))


@dataclass(frozen=True)
class Case:
    """One request/response step; `id` is `<dir>/<file>` or `<dir>/<file>#<index>`."""

    id: str
    step: dict[str, Any]


@dataclass
class CaseFile:
    """A case file: its steps run in order (a list file is a stateful script)."""

    name: str
    ids: list[str]
    cases: list[Case]
    error: str | None = None
    """Set when the file cannot be read as cases; every id then fails with it."""
    check: Callable[[Any], str | None] | None = None
    """A check the reference builds in Python (`PYTHON_CASES`): called with the runner's
    engine, it returns why it failed or None."""


@dataclass
class Suite:
    """One corpus directory and how upstream sets it up."""

    rel: str
    path: Path
    files: list[CaseFile]
    dir_setup: list[Path] = field(default_factory=list)
    dir_teardown: list[Path] = field(default_factory=list)
    file_setup: list[Path] = field(default_factory=list)
    file_teardown: list[Path] = field(default_factory=list)

    @property
    def ids(self) -> list[str]:
        """All case ids of the directory, in run order."""
        return [i for f in self.files for i in f.ids]


def _existing(directory: Path, *names: str) -> list[Path]:
    return [directory / n for n in names if (directory / n).is_file()]


def _load_case_file(rel_dir: str, path: Path) -> CaseFile:
    prefix = f"{rel_dir}/{path.name}" if rel_dir != "." else path.name
    if prefix in PYTHON_CASES:
        return CaseFile(path.name, [prefix], [], check=PYTHON_CASES[prefix])
    if prefix in EXTRA_CASES:
        step = {"url": "/v1/query", "status": EXTRA_CASES[prefix], "query": load_yaml(path)}
        return CaseFile(path.name, [prefix], [Case(prefix, step)])
    try:
        doc = load_yaml(path)
    except (yaml.YAMLError, OSError) as exc:
        return CaseFile(path.name, [prefix], [], error=f"unreadable case file: {_one_line(exc)}")
    if isinstance(doc, list):
        ids = [f"{prefix}#{i}" for i in range(len(doc))]
        steps: list[Any] = doc
    else:
        ids, steps = [prefix], [doc]
    cases: list[Case] = []
    for case_id, step in zip(ids, steps, strict=True):
        if not isinstance(step, dict) or "url" not in step or "status" not in step:
            return CaseFile(path.name, ids, [], error=f"not a case (no url/status): {case_id}")
        cases.append(Case(case_id, step))
    return CaseFile(path.name, ids, cases)


def _selected(rel: str) -> bool:
    """Whether directory `rel` is part of this run (`ONLY_ENV`; everything when unset)."""
    only = [p.strip().rstrip("/") for p in os.environ.get(ONLY_ENV, "").split(",") if p.strip()]
    return not only or any(rel == p or rel.startswith(p + "/") for p in only)


# Reference classes whose case files include subdirectories without a fixture of their
# own (WAVE3.md section 4: the pagination pages and the error cases of
# `TestRelayQueriesBasic`): such a subdirectory runs inside the class's fixture.
FIXTURE_FROM_PARENT = ("graphql_query/relay/basic",)


def discover(corpus: Path = CORPUS) -> list[Suite]:
    """Every directory under `corpus` that holds case files, sorted by relative path.
    `scenarios/` directories hold scenario files, not cases (FIXTURES.md section 0; the
    websocket ones run in `test_ws_scenarios.py`)."""
    suites: list[Suite] = []
    for directory in sorted([corpus, *(p for p in corpus.rglob("*") if p.is_dir())]):
        rel = directory.relative_to(corpus).as_posix()
        if SCENARIOS in directory.relative_to(corpus).parts:
            continue
        case_paths = sorted(
            p
            for p in directory.glob("*.yaml")
            if p.is_file()
            and p.name not in SETUP_NAMES
            and not (rel == "." and p.name == "clear_db.yaml")
        )
        if not case_paths or not _selected(rel):
            continue
        suite = Suite(rel, directory, [_load_case_file(rel, p) for p in case_paths])
        per_file = rel == "v1" or rel.startswith("v1/")
        if per_file:
            suite.file_setup = _existing(directory, "setup.yaml")
            suite.file_teardown = _existing(directory, "teardown.yaml")
        else:
            suite.dir_setup = _existing(directory, "setup.yaml")
            suite.dir_teardown = _existing(directory, "teardown.yaml")
        if rel in API_V2:  # schema first, tracking after; untracking first
            suite.dir_setup = _existing(directory, "schema_setup.yaml") + suite.dir_setup
            suite.dir_teardown += _existing(directory, "schema_teardown.yaml")
        else:
            suite.dir_setup += _existing(directory, "schema_setup.yaml")
            suite.dir_teardown = _existing(directory, "schema_teardown.yaml") + suite.dir_teardown
        parent = next((p for p in FIXTURE_FROM_PARENT if rel.startswith(p + "/")), None)
        if parent is not None and not suite.dir_setup:
            suite.dir_setup = _existing(corpus / parent, "setup.yaml")
            suite.dir_teardown = _existing(corpus / parent, "teardown.yaml")
        suite.file_setup += _existing(directory, "values_setup.yaml")
        suite.file_teardown = _existing(directory, "values_teardown.yaml") + suite.file_teardown
        suites.append(suite)
    return suites


# --------------------------------------------------------------------------------------------
# Comparison


def _one_line(value: Any, limit: int = 160) -> str:
    text = value if isinstance(value, str) else str(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def compact(value: Any, limit: int = 120) -> str:
    """`value` as one-line JSON, truncated to `limit` characters."""
    try:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=False)
    except (TypeError, ValueError):
        text = repr(value)
    return _one_line(text, limit)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def json_diff(expected: Any, actual: Any, path: str = "$") -> str | None:
    """The first difference between two JSON values as `<path>: …`, or None when equal.

    Numbers compare by value (2 == 2.0), booleans are not numbers, key order is ignored.
    """
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key, exp in expected.items():
            if key not in actual:
                return f"{path}.{key}: missing (expected {compact(exp)})"
            diff = json_diff(exp, actual[key], f"{path}.{key}")
            if diff:
                return diff
        for key in actual:
            if key not in expected:
                return f"{path}.{key}: unexpected key (got {compact(actual[key])})"
        return None
    if isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            return (
                f"{path}: expected {len(expected)} items, got {len(actual)}: "
                f"expected {compact(expected)}, got {compact(actual)}"
            )
        for i, (exp, act) in enumerate(zip(expected, actual, strict=True)):
            diff = json_diff(exp, act, f"{path}[{i}]")
            if diff:
                return diff
        return None
    if _is_number(expected) and _is_number(actual):
        equal = expected == actual
    else:
        equal = type(expected) is type(actual) and expected == actual
    return None if equal else f"{path}: expected {compact(expected)}, got {compact(actual)}"


def _graphql_error_code(body: Any) -> tuple[bool, Any]:
    """(is a GraphQL error body, first `extensions.code`)."""
    if isinstance(body, dict) and isinstance(body.get("errors"), list) and body["errors"]:
        first = body["errors"][0]
        ext = first.get("extensions") if isinstance(first, dict) else None
        return True, ext.get("code") if isinstance(ext, dict) else None
    return False, None


def _is_query_error(body: Any) -> bool:
    return isinstance(body, dict) and ("code" in body or "error" in body)


def _error_text(body: Any) -> str:
    """The message of an error body, for failure reasons."""
    if isinstance(body, _NotJson):
        return f"non-JSON body: {_one_line(body.text, 140)}"
    if isinstance(body, dict):
        errors = body.get("errors")
        if isinstance(errors, list) and errors and isinstance(errors[0], dict):
            return _one_line(errors[0].get("message", ""), 140)
        if "error" in body:
            internal = body.get("internal")
            pg_error = internal.get("error") if isinstance(internal, dict) else None
            detail = pg_error.get("message") if isinstance(pg_error, dict) else None
            text = f"{body['error']} ({detail})" if detail else str(body["error"])
            return _one_line(text, 180)
    return compact(body, 140)


def compare_body(url: str, expected: Any, actual: Any, path: str = "$") -> str | None:
    """Why `actual` does not satisfy `expected` for a request to `url`, or None."""
    route = urlsplit(url).path
    exp_gql_err, exp_code = _graphql_error_code(expected)
    if exp_gql_err:
        act_gql_err, act_code = _graphql_error_code(actual)
        if not act_gql_err:
            return f"{path}: expected GraphQL error {exp_code}, got {compact(actual)}"
        if exp_code is not None and exp_code != act_code:
            return f"{path}: code: expected {exp_code}, got {act_code} ({_error_text(actual)})"
        return None
    if _is_query_error(expected):
        if not _is_query_error(actual):
            return f"{path}: expected error {expected.get('code')}, got {compact(actual)}"
        if "code" in expected and expected["code"] != actual.get("code"):
            return (
                f"{path}: code: expected {expected['code']}, got {actual.get('code')} "
                f"({_error_text(actual)})"
            )
        return None
    act_gql_err, act_code = _graphql_error_code(actual)
    if act_gql_err or (_is_query_error(actual) and not isinstance(expected, list)):
        return (
            f"{path}: expected data, got error {act_code or actual.get('code')}: "
            f"{_error_text(actual)}"
        )
    if route == "/v1/graphql/explain":
        return _explain_diff(expected, actual, path)
    if isinstance(expected, list) and route.endswith("/graphql"):
        if not isinstance(actual, list):
            return f"{path}: expected a batched (list) response, got {compact(actual)}"
        if len(expected) != len(actual):
            return f"{path}: expected {len(expected)} batch results, got {len(actual)}"
        for i, (exp, act) in enumerate(zip(expected, actual, strict=True)):
            diff = compare_body(url, exp, act, f"{path}[{i}]")
            if diff:
                return diff
        return None
    return json_diff(expected, actual, path)


def _explain_item_diff(actual: Any, path: str) -> str | None:
    if not isinstance(actual, dict):
        return f"{path}: expected an object, got {compact(actual)}"
    sql, plan = actual.get("sql"), actual.get("plan")
    if not isinstance(sql, str) or not sql.strip():
        return f"{path}.sql: expected a non-empty string, got {compact(sql)}"
    if not isinstance(plan, list) or not all(isinstance(line, str) for line in plan):
        return f"{path}.plan: expected a list of strings, got {compact(plan)}"
    return None


def _explain_diff(expected: Any, actual: Any, path: str) -> str | None:
    """Explain output is compared by shape: fields in order, SQL text, plan lines."""
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return f"{path}: expected a list of {{field, sql, plan}}, got {compact(actual)}"
        exp_fields = [e.get("field") if isinstance(e, dict) else None for e in expected]
        act_fields = [a.get("field") if isinstance(a, dict) else None for a in actual]
        if exp_fields != act_fields:
            return f"{path}: fields: expected {compact(exp_fields)}, got {compact(act_fields)}"
        for i, act in enumerate(actual):
            diff = _explain_item_diff(act, f"{path}[{i}]")
            if diff:
                return diff
        return None
    return _explain_item_diff(actual, path)


def compare_step(
    step: dict[str, Any], status: int, body: Any, headers: httpx.Headers
) -> str | None:
    """Why a response does not satisfy the case `step`, or None when it passes."""
    expected_status = step["status"]
    if status != expected_status:
        return f"status: expected {expected_status}, got {status}: {_error_text(body)}"
    for name, value in (step.get("resp_headers") or {}).items():
        if headers.get(name) != str(value):
            return f"header {name}: expected {value!r}, got {headers.get(name)!r}"
    if step.get("response") is None:
        return None
    if isinstance(body, _NotJson):
        return f"non-JSON body: {_one_line(body.text, 120)}"
    return compare_body(str(step["url"]), step["response"], body)


# --------------------------------------------------------------------------------------------
# Running


@dataclass(frozen=True)
class _NotJson:
    """A response body that is not JSON."""

    text: str


def send(client: httpx.Client, step: dict[str, Any]) -> httpx.Response:
    """Issue the request of `step` the way upstream's `hge_ctx.anyq` does."""
    url = str(step["url"])
    headers = {str(k): str(v) for k, v in (step.get("headers") or {}).items()}
    method, body = step.get("method"), step.get("body")
    timeout = REQUEST_TIMEOUT
    if method == "GET":
        return client.get(url, headers=headers, timeout=timeout)
    if method == "POSTJSON" and body:
        return client.post(url, json=body, headers=headers, timeout=timeout)
    if method in ("POST", "PATCH", "PUT") and body:
        # upstream passes the mapping as `data=`: a form-encoded body
        return client.request(method, url, data=body, headers=headers, timeout=timeout)
    if method == "DELETE":
        return client.delete(url, headers=headers, timeout=timeout)
    return client.post(url, json=step.get("query"), headers=headers, timeout=timeout)


def decode(response: httpx.Response) -> Any:
    """The JSON body of `response`, or `_NotJson` with its text."""
    try:
        return response.json()
    except ValueError:
        return _NotJson(response.text)


@dataclass
class RunResult:
    """The outcome of one conformance run."""

    results: dict[str, str]
    """Case id → "pass" or a one-line failure reason, in run order."""
    dirs: dict[str, list[str]]
    """Directory → its case ids."""
    notes: list[tuple[str, str]]
    """(directory, problem): setup/teardown failures, server deaths and restarts."""
    seconds: float
    statements: list[str] = field(default_factory=list)
    """SQL Postgres logged while svc answered the GraphQL requests (`StatementLog`)."""
    statements_problem: str | None = None
    """Why `statements` could not be collected, if so."""

    def __repr__(self) -> str:
        ok = len(self.passed())
        return f"RunResult({ok}/{len(self.results)} passed in {self.seconds:.1f} s)"

    def passed(self) -> set[str]:
        """Ids of the passing cases."""
        return {i for i, r in self.results.items() if r == PASS}

    def rates(self) -> dict[str, tuple[int, int]]:
        """Directory → (passed, total)."""
        return {
            d: (sum(self.results[i] == PASS for i in ids), len(ids)) for d, ids in self.dirs.items()
        }


class _Engine:
    """The current server and database; `restart` swaps in fresh ones."""

    def __init__(self, pg_url: str, notes: list[tuple[str, str]]) -> None:
        self.pg_url = pg_url
        self.notes = notes
        self.server: ServerProcess | None = None
        self.source_urls: list[str] = []
        self.broken = False
        """Set when a request could not reach the server (refused, reset, timed out)."""
        self.restarts = 0
        self.statement_log = StatementLog(pg_url)
        self.extra_env: dict[str, str] = {}
        """The variables over `CORPUS_ENV` the current server runs with (`FILE_ENV`)."""
        self.restart()

    def use_env(self, extra: dict[str, str]) -> None:
        """Restart on a fresh database and server when the current one does not run with
        `extra` over `CORPUS_ENV` (`FILE_ENV`)."""
        if extra != self.extra_env:
            self.extra_env = dict(extra)
            self.restart(recovering=False)

    def restart(self, recovering: bool = True) -> None:
        """A fresh database and server, with `clear_db.yaml` applied; `recovering`: counted
        in `restarts` (a switch of configuration, `use_env`, is not)."""
        if self.server is not None:
            self.restarts += int(recovering)
            self.server.stop()
            self.server = None
        self.broken = False
        database = create_database(self.pg_url, prefix="conf")
        self.statement_log.enable(database)
        # The reference's second and third databases for its multi-source cases
        # (`pg_add_source` with `{from_env: HASURA_GRAPHQL_PG_SOURCE_URL_1}`).
        self.source_urls = [create_database(self.pg_url, prefix=f"src{k}") for k in (1, 2)]
        env = {**CORPUS_ENV, **self.extra_env}
        for k, url in enumerate(self.source_urls, 1):
            env[f"SVC_GRAPHQL_PG_SOURCE_URL_{k}"] = url
        self.server = ServerProcess(database, *SERVER_ARGS, env=env)
        clear_db = CORPUS / "clear_db.yaml"
        if clear_db.is_file():
            problem = self.post_body(clear_db)
            if problem:
                self.notes.append((".", f"clear_db.yaml failed: {problem}"))

    def clean_sources(self) -> None:
        """Before a file that adds sources: drop the sources an earlier file left behind
        (one that failed half-way) and empty their databases (WAVE3.md section 5)."""
        assert self.server is not None
        for name in ("pg1", "pg2"):
            body = {"type": "pg_drop_source", "args": {"name": name, "cascade": True}}
            self.server.client.post("/v1/metadata", json=body)

        async def empty(url: str) -> None:
            conn = await asyncpg.connect(url)
            try:
                await conn.execute("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
            finally:
                await conn.close()

        for url in self.source_urls:
            asyncio.run(empty(url))

    @property
    def client(self) -> httpx.Client:
        """The HTTP client of the current server."""
        assert self.server is not None
        return self.server.client

    def healthy(self) -> bool:
        """Whether the server process still runs and answered the last request."""
        return self.server is not None and self.server.proc.poll() is None and not self.broken

    def log_tail(self) -> str:
        """The last line of the server log, for notes."""
        assert self.server is not None
        try:
            lines = self.server.log_path.read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return _one_line(lines[-1], 160) if lines else ""

    def request(self, step: dict[str, Any]) -> httpx.Response:
        """`send` on the current server; transport errors mark the server broken."""
        try:
            return send(self.client, step)
        except httpx.TransportError:
            self.broken = True
            raise

    def post_body(self, path: Path) -> str | None:
        """POST a setup/teardown body (to `fixture_url`); the problem, or None on 200."""
        try:
            body = load_yaml(path)
        except (yaml.YAMLError, OSError) as exc:
            return f"{path.name}: {type(exc).__name__}: {_one_line(exc)}"
        try:
            resp = self.request({"url": fixture_url(path), "query": body})
        except httpx.HTTPError as exc:
            return f"{path.name}: {type(exc).__name__}: {_one_line(exc)}"
        if resp.status_code != 200:
            return f"{path.name}: status {resp.status_code}: {_error_text(decode(resp))}"
        return None

    def post_all(self, paths: list[Path]) -> str | None:
        """POST each body in order, stopping at the first failure."""
        for path in paths:
            problem = self.post_body(path)
            if problem:
                return problem
        return None

    def stop(self) -> None:
        """Stop the current server."""
        if self.server is not None:
            self.server.stop()
            self.server = None


def _adds_source(step: dict[str, Any]) -> bool:
    """Whether a step adds a source (a request of type `pg_add_source`)."""
    query = step.get("query")
    return isinstance(query, dict) and query.get("type") == "pg_add_source"


def _run_case_file(engine: _Engine, case_file: CaseFile, results: dict[str, str]) -> None:
    if case_file.check is not None:
        try:
            problem = case_file.check(engine)
        except httpx.HTTPError as exc:
            problem = f"request failed: {type(exc).__name__}: {_one_line(exc)}"
        results[case_file.ids[0]] = problem or PASS
        return
    if case_file.error:
        for case_id in case_file.ids:
            results[case_id] = case_file.error
        return
    if engine.healthy() and any(_adds_source(case.step) for case in case_file.cases):
        engine.clean_sources()
    for case in case_file.cases:
        if not engine.healthy():
            results[case.id] = "not run: the server died during an earlier step"
            continue
        try:
            with engine.statement_log.window(str(case.step.get("url", ""))):
                resp = engine.request(case.step)
        except httpx.HTTPError as exc:
            results[case.id] = f"request failed: {type(exc).__name__}: {_one_line(exc)}"
            continue
        problem = compare_step(case.step, resp.status_code, decode(resp), resp.headers)
        results[case.id] = problem or PASS


class _Suite:
    """Runs one `Suite`, recovering on a fresh server when its state may be broken."""

    def __init__(self, engine: _Engine, suite: Suite, results: dict[str, str]) -> None:
        self.engine = engine
        self.suite = suite
        self.results = results

    def env(self, case_file: CaseFile) -> dict[str, str]:
        """The variables over `CORPUS_ENV` the server runs `case_file` with (`FILE_ENV`)."""
        rel = f"{self.suite.rel}/{case_file.name}" if self.suite.rel != "." else case_file.name
        return FILE_ENV.get(rel, {})

    def note(self, problem: str) -> None:
        """Record a setup/teardown problem of this directory (with the log tail if down)."""
        if not self.engine.healthy():
            problem += f" [server unreachable or exited; log: {self.engine.log_tail()}]"
        self.engine.notes.append((self.suite.rel, problem))

    def fail(self, files: list[CaseFile], reason: str) -> None:
        """Record every case of `files` as failed with `reason`."""
        for case_file in files:
            for case_id in case_file.ids:
                self.results[case_id] = reason

    def teardown(self, paths: list[Path], where: str) -> bool:
        """Run teardown bodies; on failure (or a dead server) move to a fresh server."""
        problem = self.engine.post_all(paths) if self.engine.healthy() else "server not healthy"
        if problem or not self.engine.healthy():
            self.note(f"{where}: teardown failed: {problem}; continuing on a fresh server")
            self.engine.restart()
            return False
        return True

    def dir_setup(self) -> str | None:
        """Run the once-per-directory setup (on a fresh server if the current one is down)."""
        if not self.engine.healthy():
            self.engine.restart()
        return self.engine.post_all(self.suite.dir_setup)

    def run(self) -> None:
        """Directory setup, then per file: file setup, its cases, file teardown; then
        directory teardown. A failed teardown moves to a fresh server (and re-runs the
        directory setup when files remain)."""
        suite = self.suite
        self.engine.use_env(self.env(suite.files[0]))
        problem = self.dir_setup()
        if problem:
            self.fail(suite.files, f"setup failed: {problem}")
            self.note(f"setup failed: {problem}")
            self.teardown(suite.dir_teardown, "after failed setup")
            return
        for n, case_file in enumerate(suite.files):
            if self.env(case_file) != self.engine.extra_env:  # a fresh server (FILE_ENV)
                self.engine.use_env(self.env(case_file))
                problem = self.dir_setup()
                if problem:
                    self.fail([case_file], f"setup failed: {problem}")
                    continue
            problem = self.engine.post_all(suite.file_setup)
            if problem:
                self.fail([case_file], f"setup failed: {problem}")
                self.note(f"{case_file.name}: setup failed: {problem}")
            else:
                _run_case_file(self.engine, case_file, self.results)
            if not self.teardown(suite.file_teardown, case_file.name):
                if n + 1 == len(suite.files):
                    return  # the fresh server holds nothing of this directory
                problem = self.dir_setup()
                if problem:
                    self.fail(suite.files[n + 1 :], f"setup failed (fresh server): {problem}")
                    self.note(f"setup failed on a fresh server: {problem}")
                    self.teardown(suite.dir_teardown, "after failed setup")
                    return
        self.teardown(suite.dir_teardown, "directory")


def run_corpus(pg_url: str, suites: list[Suite] | None = None) -> RunResult:
    """Run every suite on one server (replaced only to recover from a broken state)."""
    started = time.monotonic()
    suites = discover() if suites is None else suites
    results: dict[str, str] = {}
    notes: list[tuple[str, str]] = []
    with fixture_servers.running():
        engine = _Engine(pg_url, notes)
        try:
            for suite in suites:
                _Suite(engine, suite, results).run()
        finally:
            engine.stop()
    if engine.restarts:
        notes.append((".", f"{engine.restarts} fresh database + server restart(s)"))
    dirs = {s.rel: s.ids for s in suites}
    log = engine.statement_log
    return RunResult(results, dirs, notes, time.monotonic() - started, log.statements, log.problem)


# --------------------------------------------------------------------------------------------
# Reporting and baseline


def format_summary(run: RunResult) -> str:
    """The per-directory pass table, then setup/teardown notes."""
    rates = run.rates()
    width = max([len(d) for d in rates] + [9])
    lines = [f"{'directory':<{width}}  passed/total"]
    for directory, (ok, total) in rates.items():
        lines.append(f"{directory:<{width}}  {ok:>6}/{total:<5}")
    ok_all = sum(ok for ok, _ in rates.values())
    total_all = sum(total for _, total in rates.values())
    lines.append(f"{'TOTAL':<{width}}  {ok_all:>6}/{total_all:<5}  ({run.seconds:.1f} s)")
    lines.extend(f"note: {note}" for note in group_notes(run.notes))
    return "\n".join(lines)


def group_notes(notes: list[tuple[str, str]]) -> list[str]:
    """Notes with the same directory and problem merged: `dir: problem [N files: a, b, …]`."""
    groups: dict[tuple[str, str], list[str]] = {}
    for where, problem in notes:
        match = re.match(r"([^\s:]+\.yaml): (.*)$", problem)
        name, rest = (match.group(1), match.group(2)) if match else ("", problem)
        groups.setdefault((where, rest), [])
        if name:
            groups[(where, rest)].append(name)
    out = []
    for (where, rest), names in groups.items():
        suffix = ""
        if names:
            shown = ", ".join(names[:2]) + (", …" if len(names) > 2 else "")
            suffix = f" [{len(names)} file{'s' if len(names) > 1 else ''}: {shown}]"
        out.append(f"{where}: {rest}{suffix}")
    return out


def write_last_run(run: RunResult, path: Path = LAST_RUN_PATH) -> None:
    """Write id → result for every case, sorted by id."""
    path.write_text(
        json.dumps(dict(sorted(run.results.items())), indent=2, ensure_ascii=False) + "\n"
    )


def read_baseline(path: Path = BASELINE_PATH) -> list[str]:
    """The case ids that must pass (empty when the file does not exist)."""
    if not path.is_file():
        return []
    ids = json.loads(path.read_text())
    assert isinstance(ids, list) and all(isinstance(i, str) for i in ids), path
    return ids


def update_baseline(run: RunResult, path: Path = BASELINE_PATH) -> list[str]:
    """Rewrite the baseline as the union of the old one and today's passes; returns it."""
    ids = sorted(set(read_baseline(path)) | run.passed())
    path.write_text(json.dumps(ids, indent=1) + "\n")
    return ids


def missing_from_baseline(run: RunResult, baseline: list[str]) -> Iterator[tuple[str, str]]:
    """(id, result) for each baseline case that did not pass today (scenario tests,
    `<file>::<test>`, are checked by `test_ws_scenarios.py`)."""
    for case_id in baseline:
        if SCENARIO_ID in case_id or not _selected(case_id.rsplit("/", 1)[0]):
            continue
        if case_id in SUPERSEDED:
            continue  # checked against the newer reference instead
        result = run.results.get(case_id, "not found in the corpus")
        if result != PASS:
            yield case_id, result


def pass_rates(run: RunResult) -> dict[str, tuple[int, int]]:
    """Directory → (passed, total) of `run`, for threshold assertions in other tests."""
    return run.rates()
