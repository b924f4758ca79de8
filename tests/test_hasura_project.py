"""A Hasura CLI project taken over by svc with its own files, as a user arriving from
Hasura does it: `svc migrate apply`, `svc serve --hasura-compat`, `svc metadata apply`,
then queries as each role with Hasura's headers, `svc compile` agreeing with the live
server, and the export equal to what was applied.

The projects (`tests/fixtures/hasura_project_v3`, `.../hasura_project_v2`) are written
in the formats the Hasura CLI writes (config v3: `databases/databases.yaml` with
`!include`, per-table files; config v2: one `tables.yaml`), following the reference's
documentation of the metadata directory and its CLI (`cli/internal/metadataobject/`):
an enum table (`is_enum`), permissions on `X-Hasura-User-Id`, an insert preset from the
session, a select permission with `columns: []` (aggregates only), and a query action of
`kind: ""` (a kind the reference ignores for queries).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from svc.cli import main
from svc.cli.metadata import project_metadata_dir
from tests.support import ServerProcess, create_database
from tests.webhook_recorder import WebhookRecorder

FIXTURES = Path(__file__).resolve().parent / "fixtures"
ADA = "11111111-1111-1111-1111-111111111111"
BRIAN = "22222222-2222-2222-2222-222222222222"
SUMMARY = b'{"open": 1, "done": 1}'


class Project:
    """One project applied to a fresh database and served by `svc serve --hasura-compat`."""

    def __init__(self, root: Path, database: str, server: ServerProcess) -> None:
        self.root, self.database, self.server = root, database, server

    def graphql(self, query: str, **headers: str) -> Any:
        r = self.server.client.post("/v1/graphql", json={"query": query}, headers=headers)
        assert r.status_code == 200, r.text
        return r.json()

    def as_user(self, user: str, query: str) -> Any:
        return self.graphql(query, **{"X-Hasura-Role": "user", "X-Hasura-User-Id": user})

    def metadata(self, kind: str, args: Any = None) -> Any:
        r = self.server.client.post("/v1/metadata", json={"type": kind, "args": args or {}})
        assert r.status_code == 200, r.text
        return r.json()


@pytest.fixture(scope="module")
def handler() -> Iterator[WebhookRecorder]:
    with WebhookRecorder() as hook:
        hook.rule("/task-summary", status=200, body=SUMMARY)
        yield hook


@pytest.fixture(scope="module", params=["hasura_project_v3", "hasura_project_v2"])
def project(
    request: pytest.FixtureRequest,
    pg_url: str,
    handler: WebhookRecorder,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Project]:
    root = tmp_path_factory.mktemp("project") / request.param
    shutil.copytree(FIXTURES / request.param, root)
    database = create_database(pg_url, prefix="hproj")
    assert main(["migrate", "apply", "--project", str(root), "--database-url", database]) == 0
    env = {"ACTION_BASE_URL": handler.url("").rstrip("/")}
    server = ServerProcess(database, "--hasura-compat", env=env)
    try:
        # No --dir: the project's metadata directory, as `hasura metadata apply` finds it.
        apply = ["metadata", "apply", "--endpoint", server.url, "--project", str(root)]
        assert main([*apply, "--hasura-compat"]) == 0
        yield Project(root, database, server)
    finally:
        server.stop()


def test_the_metadata_applies_consistently(project: Project) -> None:
    answer = project.metadata("get_inconsistent_metadata")
    assert answer["is_consistent"] is True, answer
    exported = project.metadata("export_metadata")
    source = exported["sources"][0] if "sources" in exported else exported
    assert {t["table"]["name"] for t in source["tables"]} == {"task_status", "tasks", "users"}


def test_the_version_2_export_is_the_references_shape(project: Project) -> None:
    """`export_metadata` version 2 (what the Hasura CLI and console read) answers
    `{resource_version, metadata}` with the document in the version 3 shape."""
    body = {"type": "export_metadata", "version": 2, "args": {}}
    answer = project.server.client.post("/v1/metadata", json=body).json()
    assert isinstance(answer["resource_version"], int)
    document = answer["metadata"]
    assert document["version"] == 3 and "tables" not in document
    assert [(s["name"], s["kind"]) for s in document["sources"]] == [("default", "postgres")]
    assert len(document["sources"][0]["tables"]) == 3


def test_each_user_sees_their_rows_by_x_hasura_user_id(project: Project) -> None:
    query = "{ tasks(order_by: {id: asc}) { title owner_id } users { name } }"
    ada = project.as_user(ADA, query)["data"]
    assert [t["title"] for t in ada["tasks"]] == ["write the parser", "review the planner"]
    assert ada["users"] == [{"name": "Ada"}]
    brian = project.as_user(BRIAN, query)["data"]
    assert [t["title"] for t in brian["tasks"]] == ["write the parser", "ship it"]
    assert brian["users"] == [{"name": "Brian"}]


def test_the_enum_table_types_status(project: Project) -> None:
    got = project.as_user(ADA, "{ tasks(where: {status: {_eq: done}}) { title status } }")
    assert got == {"data": {"tasks": [{"title": "write the parser", "status": "done"}]}}
    kind = project.as_user(ADA, '{ __type(name: "task_status_enum") { enumValues { name } } }')
    values = {v["name"] for v in kind["data"]["__type"]["enumValues"]}
    assert values == {"todo", "doing", "done"}


def test_the_insert_preset_reads_the_session(project: Project) -> None:
    mutation = (
        'mutation { insert_tasks_one(object: {title: "new", status: doing}) { owner_id status } }'
    )
    got = project.as_user(BRIAN, mutation)
    assert got == {"data": {"insert_tasks_one": {"owner_id": BRIAN, "status": "doing"}}}


def test_a_role_with_columns_empty_counts_only(project: Project) -> None:
    got = project.graphql(
        "{ tasks_aggregate { aggregate { count } } }", **{"X-Hasura-Role": "public"}
    )
    assert got == {"data": {"tasks_aggregate": {"aggregate": {"count": 1}}}}


def test_the_query_action_of_kind_empty_is_served(project: Project) -> None:
    got = project.as_user(ADA, f'{{ taskSummary(ownerId: "{ADA}") {{ open done }} }}')
    assert got == {"data": {"taskSummary": {"open": 1, "done": 1}}}


def test_compile_agrees_with_the_live_server(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["compile", "--dir", str(project.root / "metadata"), "--database-url", project.database]
    assert main([*args, "--hasura-compat"]) == 0, capsys.readouterr()


def test_the_export_is_the_applied_project(project: Project, tmp_path: Path) -> None:
    """Exported into a copy of the project's directory (so in its config version), the
    files hold the same metadata as the project's own (svc writes canonically; the
    project's files are hand-written, so documents are compared, not bytes)."""
    out = tmp_path / "metadata"
    shutil.copytree(project.root / "metadata", out)
    export = ["metadata", "export", "--endpoint", project.server.url, "--dir", str(out)]
    assert main([*export, "--hasura-compat"]) == 0
    assert yaml.safe_load((out / "version.yaml").read_text()) == yaml.safe_load(
        (project.root / "metadata" / "version.yaml").read_text()
    )
    diff = ["metadata", "diff", "--endpoint", project.server.url, "--dir", str(out)]
    assert main([*diff, "--hasura-compat"]) == 0


def test_the_metadata_directory_is_found_as_the_hasura_cli_finds_it(tmp_path: Path) -> None:
    """`metadata_directory` of `config.yaml` (the Hasura CLI's `cli/config.go`), else
    `metadata`; an unreadable `config.yaml` counts as none."""
    assert project_metadata_dir(tmp_path) == tmp_path / "metadata"
    (tmp_path / "config.yaml").write_text("version: 3\nmetadata_directory: hasura/md\n")
    assert project_metadata_dir(tmp_path) == tmp_path / "hasura/md"
    (tmp_path / "config.yaml").write_text("version: [3\n")
    assert project_metadata_dir(tmp_path) == tmp_path / "metadata"


def test_compile_and_apply_report_the_same_unsupported_objects(
    pg_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The v3 project with an inherited role (served) and a second source (kept, not
    served by svc yet): `svc compile` and `svc metadata apply` name the same objects with
    the same reasons, and the rest of the project is served, the inherited role too."""
    root = tmp_path / "project"
    shutil.copytree(FIXTURES / "hasura_project_v3", root)
    metadata = root / "metadata"
    (metadata / "inherited_roles.yaml").write_text(
        "- role_name: staff\n  role_set:\n    - user\n    - public\n"
    )
    with (metadata / "databases" / "databases.yaml").open("a") as f:
        f.write("- name: analytics\n  kind: postgres\n  tables: []\n")
    database = create_database(pg_url, prefix="hproj")
    assert main(["migrate", "apply", "--project", str(root), "--database-url", database]) == 0
    capsys.readouterr()
    compiled = ["compile", "--dir", str(metadata), "--database-url", database, "--hasura-compat"]
    assert main(compiled) == 1
    reasons = sorted(
        line.split(": ", 2)[2] for line in capsys.readouterr().err.splitlines() if ": $" in line
    )
    # `analytics` is served (issue 28) but has no connection_info: inconsistent alike
    assert len(reasons) == 1 and "connection_info is missing" in reasons[0], reasons
    server = ServerProcess(database, "--hasura-compat", env={"ACTION_BASE_URL": "http://x"})
    try:
        apply = ["metadata", "apply", "--endpoint", server.url, "--project", str(root)]
        assert main([*apply, "--hasura-compat"]) == 0
        warned = capsys.readouterr().err
        assert "metadata is inconsistent" in warned
        lines = warned.splitlines()
        applied = sorted(x.split(": ", 1)[1] for x in lines if x.startswith("inconsistent "))
        assert applied == reasons
        r = server.client.post(
            "/v1/graphql",
            json={"query": "{ tasks_aggregate { aggregate { count } } }"},
            headers={"X-Hasura-Role": "public"},
        )
        assert r.json() == {"data": {"tasks_aggregate": {"aggregate": {"count": 1}}}}
        r = server.client.post(
            "/v1/graphql",
            json={"query": "{ tasks_aggregate { aggregate { count } } }"},
            headers={
                "X-Hasura-Role": "staff",
                "X-Hasura-User-Id": "00000000-0000-0000-0000-000000000000",
            },
        )
        # `public`'s rows at least (the role is made of `user` and `public`)
        assert r.json()["data"]["tasks_aggregate"]["aggregate"]["count"] >= 1, r.text
    finally:
        server.stop()
