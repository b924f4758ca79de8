"""Config v3 metadata directories (`version: 3`, `databases/…`, `!include`), as the Hasura
CLI writes them: read by `svc metadata apply`, `svc compile` and `svc metadata diff`,
written by `svc metadata export`, against a real server and Postgres; and a second source,
which svc does not serve, reported the same way by `svc compile` and the live apply.

The project below is written by hand in the reference's layout
(`cli/internal/metadataobject/sources` of hasura/graphql-engine): `databases.yaml`
including `default/tables/tables.yaml`, which includes one file per table, the include
spellings the CLI writes and reads (`"!include x.yaml"`, `!include "x.yaml"`), and the
top-level files. Its config v2 twin holds the same metadata in `tables.yaml`,
`functions.yaml` and the same top-level files.
"""

from __future__ import annotations

import copy
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from svc.cli import main
from svc.cli.metadata import DirectoryFiles
from svc.errors import SvcError
from svc.metadata.directory import DirectoryError
from svc.metadata.directory_v3 import (
    DEFAULT_CONFIGURATION,
    document_to_files_v3,
    metadata_from_files_v3,
    metadata_to_files_v3,
    normalised_document,
    read_directory_v3,
)
from svc.metadata.model import metadata_from_obj, metadata_to_obj
from tests.fixture_servers import remote_node
from tests.support import ServerProcess, create_database

SQL = """
create table author (id serial primary key, name text not null);
create table article (
  id serial primary key, title text not null, body text,
  published boolean not null default false, author_id int not null references author(id)
);
create schema content;
create table content.tag (id serial primary key, label text not null);
insert into author (name) values ('Ada'), ('Bob');
insert into article (title, author_id) values ('graphs', 1), ('sql', 1), ('graph theory', 2);
insert into content.tag (label) values ('math');
create function search_articles(search text) returns setof article
  language sql stable as $$ select * from article where title ilike '%' || search || '%' $$;
create function author_initial(a author) returns text
  language sql stable as $$ select left(a.name, 1) $$;
"""

USER_ID = {"author_id": {"_eq": "X-Svc-User-Id"}}
ARTICLE: dict[str, Any] = {
    "table": {"name": "article", "schema": "public"},
    "object_relationships": [
        {"name": "author", "using": {"foreign_key_constraint_on": "author_id"}},
    ],
    "insert_permissions": [
        {
            "role": "user",
            "permission": {
                "check": USER_ID,
                "set": {"author_id": "X-Svc-User-Id"},
                "columns": ["title", "body"],
            },
        }
    ],
    "select_permissions": [
        {
            "role": "user",
            "permission": {"columns": ["id", "title", "author_id"], "filter": USER_ID},
        }
    ],
    "update_permissions": [
        {
            "role": "editor",
            "permission": {"columns": ["title"], "filter": {}, "check": {}},
        }
    ],
}
AUTHOR: dict[str, Any] = {
    "table": {"name": "author", "schema": "public"},
    "array_relationships": [
        {
            "name": "articles",
            "using": {
                "foreign_key_constraint_on": {
                    "column": "author_id",
                    "table": {"name": "article", "schema": "public"},
                }
            },
        }
    ],
    "computed_fields": [
        {"name": "initial", "definition": {"function": {"name": "author_initial"}}},
    ],
    "select_permissions": [
        {
            "role": "user",
            "permission": {
                "columns": ["id", "name"],
                "computed_fields": ["initial"],
                "filter": {},
                "allow_aggregations": True,
            },
        }
    ],
}
TAG: dict[str, Any] = {
    "table": {"name": "tag", "schema": "content"},
    "select_permissions": [{"role": "user", "permission": {"columns": "*", "filter": {}}}],
}
FUNCTION: dict[str, Any] = {
    "function": {"name": "search_articles", "schema": "public"},
    "permissions": [{"role": "user"}],
}

# A source's connection as the reference exports it (svc connects to its own database).
CONFIGURATION = """\
  configuration:
    connection_info:
      database_url:
        from_env: HASURA_GRAPHQL_DATABASE_URL
      isolation_level: read-committed
      pool_settings:
        connection_lifetime: 600
        idle_timeout: 180
        max_connections: 50
        retries: 1
      use_prepared_statements: true
"""
DATABASES = (
    "- name: default\n  kind: postgres\n"
    + CONFIGURATION
    + '  tables: "!include default/tables/tables.yaml"\n'
    + '  functions: !include "default/functions/functions.yaml"\n'
)
TOP_FILES = {
    "actions.yaml": """\
actions:
  - name: send_email
    definition:
      kind: synchronous
      handler: '{{ACTION_BASE_URL}}/send'
    permissions:
      - role: user
    comment: sends an email
custom_types:
  enums: []
  input_objects: []
  objects:
    - name: SendResult
  scalars: []
""",
    "actions.graphql": """\
type Mutation {
  send_email(to: String!): SendResult
}

type SendResult {
  ok: Boolean!
}
""",
    "remote_schemas.yaml": """\
- name: node
  definition:
    url: http://localhost:4000
    timeout_seconds: 60
    customization:
      root_fields_namespace: node
  comment: the node fixture
""",
    "cron_triggers.yaml": """\
- name: nightly
  webhook: '{{HOOK}}/nightly'
  schedule: 0 3 * * *
  include_in_metadata: true
  payload:
    k: 1
  comment: every night
""",
    "allow_list.yaml": "- collection: allowed-queries\n",
    "rest_endpoints.yaml": """\
- name: article_by_id
  url: article/:id
  methods:
    - GET
  definition:
    query:
      collection_name: allowed-queries
      query_name: article_by_id
  comment: one article
""",
    "inherited_roles.yaml": "[]\n",
    "network.yaml": "{}\n",
    "api_limits.yaml": "{}\n",
    "graphql_schema_introspection.yaml": "{}\n",
}
TITLES = "query titles {\n  article {\n    title\n  }\n}\n"
TAGS = {"data": {"content_tag": [{"label": "math"}]}}  # what admin reads of content.tag
BY_ID = "query article_by_id($id: Int!) {\n  article_by_pk(id: $id) {\n    id\n    title\n  }\n}\n"


def collections(titles: str) -> str:
    return (
        "- name: allowed-queries\n  definition:\n    queries:\n"
        f"      - name: titles\n        query: {titles}\n"
        "      - name: article_by_id\n        query: |\n"
        + "".join(f"          {line}\n" for line in BY_ID.splitlines())
    )


def dump(value: Any) -> str:
    return yaml.safe_dump(value, sort_keys=False)


def v3_project() -> dict[str, str]:
    """The config v3 project, `{relative path: text}`, as a Hasura project holds it."""
    return {
        "version.yaml": "version: 3\n",
        "databases/databases.yaml": DATABASES,
        "databases/default/tables/tables.yaml": (
            '- "!include public_article.yaml"\n'
            '- "!include public_author.yaml"\n'
            "- !include content_tag.yaml\n"
        ),
        "databases/default/tables/public_article.yaml": dump(ARTICLE),
        "databases/default/tables/public_author.yaml": dump(AUTHOR),
        "databases/default/tables/content_tag.yaml": dump(TAG),
        "databases/default/functions/functions.yaml": '- !include "public_search_articles.yaml"\n',
        "databases/default/functions/public_search_articles.yaml": dump(FUNCTION),
        # a query of a collection in a file of its own (a non-YAML include is its text)
        "query_collections.yaml": collections("!include queries/titles.graphql"),
        "queries/titles.graphql": TITLES,
        **TOP_FILES,
    }


def v2_project() -> dict[str, str]:
    """The same metadata as a config v2 directory."""
    top = {k: v for k, v in TOP_FILES.items() if k not in ("inherited_roles.yaml", "network.yaml")}
    return {
        "version.yaml": "version: 2\n",
        "tables.yaml": dump([ARTICLE, AUTHOR, TAG]),
        "functions.yaml": dump([FUNCTION]),
        "query_collections.yaml": collections(
            "|\n" + "".join(f"          {line}\n" for line in TITLES.splitlines()).rstrip("\n")
        ),
        **top,
    }


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def read(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def db_url(pg_url: str) -> str:
    return create_database(pg_url, prefix="v3dir")


@pytest.fixture(scope="module")
def srv(db_url: str) -> Iterator[ServerProcess]:
    env = {"HOOK": "http://127.0.0.1:1", "ACTION_BASE_URL": "http://127.0.0.1:1"}
    with remote_node.serve():
        s = ServerProcess(db_url, "--workers", "1", env=env)
        try:
            r = s.query({"type": "run_sql", "args": {"sql": SQL}})
            assert r.status_code == 200, r.text
            yield s
        finally:
            s.stop()


def cli(srv: ServerProcess, command: str, directory: Path, *extra: str) -> int:
    return main(["metadata", command, "--endpoint", srv.url, "--dir", str(directory), *extra])


def compile_dir(
    capsys: pytest.CaptureFixture[str], directory: Path, url: str
) -> tuple[int, list[str]]:
    capsys.readouterr()
    code = main(["compile", "--dir", str(directory), "--database-url", url])
    return code, capsys.readouterr().err.splitlines()


def clear(srv: ServerProcess) -> None:
    r = srv.query({"type": "clear_metadata", "args": {}})
    assert r.status_code == 200, r.text


def export_doc(srv: ServerProcess) -> Any:
    r = srv.query({"type": "export_metadata", "args": {}})
    assert r.status_code == 200, r.text
    return r.json()


# -- against a server ------------------------------------------------------------------------


def test_a_v3_project_applies_as_its_v2_twin(srv: ServerProcess, tmp_path: Path) -> None:
    """`svc metadata apply` of the v3 project and of its v2 twin give the same metadata
    (the same config v2 export, byte for byte), and what was applied is served."""
    v3 = write(tmp_path / "v3", v3_project())
    v2 = write(tmp_path / "v2", v2_project())
    clear(srv)
    assert cli(srv, "apply", v3) == 0
    assert cli(srv, "export", tmp_path / "from_v3", "--config-version", "2") == 0

    as_user = {"X-Svc-Role": "user", "X-Svc-User-Id": "1"}
    answer = srv.graphql(
        "{ article { title author { name initial } } content_tag { label }"
        ' search_articles(args: {search: "graph"}) { id } }',
        headers=as_user,
    )
    assert answer == {
        "data": {
            "article": [
                {"title": "graphs", "author": {"name": "Ada", "initial": "A"}},
                {"title": "sql", "author": {"name": "Ada", "initial": "A"}},
            ],
            "content_tag": [{"label": "math"}],
            "search_articles": [{"id": 1}],
        }
    }
    assert srv.graphql("{ node { hello } }") == {"data": {"node": {"hello": "world"}}}
    rest = srv.client.get("/api/rest/article/2")
    assert rest.json() == {"article_by_pk": {"id": 2, "title": "sql"}}, rest.text

    clear(srv)
    assert cli(srv, "apply", v2) == 0
    assert cli(srv, "export", tmp_path / "from_v2", "--config-version", "2") == 0
    assert read(tmp_path / "from_v3") == read(tmp_path / "from_v2")
    exported = read(tmp_path / "from_v2")
    assert b"nightly" in exported["cron_triggers.yaml"]
    assert b"send_email(to: String!): SendResult" in exported["actions.graphql"]


def test_export_metadata_answers_version_3_for_a_v3_project(
    srv: ServerProcess, tmp_path: Path
) -> None:
    """After a v3 apply the API answers the reference's shape, `{version: 3, sources:
    [{name: default, kind: postgres, tables, functions, configuration}]}` (a document
    built through the API, with nothing version 2 cannot say, stays version 2: spec
    2.1), and `replace_metadata` takes that answer back unchanged."""
    clear(srv)
    assert export_doc(srv) == {"tables": []}
    assert cli(srv, "apply", write(tmp_path, v3_project())) == 0
    doc = export_doc(srv)
    assert doc["version"] == 3 and "tables" not in doc
    (source,) = doc["sources"]
    assert list(source)[:4] == ["name", "kind", "tables", "functions"]
    assert (source["name"], source["kind"]) == ("default", "postgres")
    assert source["configuration"]["connection_info"]["pool_settings"]["max_connections"] == 50
    assert sorted(t["table"]["name"] for t in source["tables"]) == ["article", "author", "tag"]
    assert doc["remote_schemas"][0]["name"] == "node"
    wrapped = srv.query({"type": "export_metadata", "version": 2, "args": {}}).json()
    assert wrapped["metadata"] == doc
    r = srv.query({"type": "replace_metadata", "args": doc})
    assert r.status_code == 200, r.text
    assert export_doc(srv) == doc


def test_compile_agrees_with_apply(
    srv: ServerProcess, db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`svc compile` says of the v3 project what it says of its v2 twin; a problem in a
    per-table file is printed at that file, and the live apply reports it."""
    v3 = write(tmp_path / "v3", v3_project())
    v2 = write(tmp_path / "v2", v2_project())
    code, err = compile_dir(capsys, v3, db_url)
    assert (code, err) == (0, ["svc compile: 3 tables, 1 functions, 3 roles: consistent"])
    assert compile_dir(capsys, v2, db_url) == (code, err)

    table = v3 / "databases/default/tables/public_article.yaml"
    table.write_text(table.read_text().replace("- author_id\n", "- no_such_column\n", 1))
    code, err = compile_dir(capsys, v3, db_url)
    assert code == 1
    assert err[0].startswith(
        "databases/default/tables/public_article.yaml: "
        "$.select_permissions[0].permission.columns[2]: Inconsistent object: "
    ), err
    assert "no_such_column" in err[0]
    clear(srv)
    # As the Hasura CLI applies a config v3 project (`allow_inconsistent_metadata`): the
    # rest is applied, the inconsistent permission kept and reported, exit 0 with a warning.
    assert cli(srv, "apply", v3) == 0
    warned = capsys.readouterr().err
    assert "no_such_column" in warned and "metadata is inconsistent" in warned
    doc = export_doc(srv)  # version 3: the project's source configuration is kept
    assert len(doc["sources"][0]["tables"]) == 3, doc
    assert cli(srv, "apply", v2) == 0  # the consistent twin replaces it

    # A bad value is refused before any request, at its file and place.
    table.write_text(dump({**ARTICLE, "object_relationships": [{"name": 3, "using": {}}]}))
    code, err = compile_dir(capsys, v3, db_url)
    assert code == 2
    assert err == [
        f"{table}: $.object_relationships[0].name: Expected `str`, got `int`",
    ]
    assert cli(srv, "apply", v3) == 1
    assert capsys.readouterr().err.startswith(f"{table}: $.object_relationships[0].name: ")


def test_export_round_trips_to_identical_files(srv: ServerProcess, tmp_path: Path) -> None:
    """`svc metadata export` writes v3 into a v3 directory (or with `--config-version
    3`); export → clear → apply → export gives the same bytes; the databases tree keeps no
    file the export did not write."""
    project = write(tmp_path / "project", v3_project())
    clear(srv)
    assert cli(srv, "apply", project) == 0
    stale = project / "databases/default/tables/public_gone.yaml"
    stale.write_text("table: gone\n")
    assert cli(srv, "export", project) == 0  # a v3 directory: written as v3
    assert not stale.exists()
    shutil.rmtree(project / "queries")  # the included query file: inlined by the export
    first = read(project)
    assert first["version.yaml"] == b"version: 3\n"
    assert first["databases/default/tables/tables.yaml"] == (
        b'- "!include content_tag.yaml"\n'
        b'- "!include public_article.yaml"\n'
        b'- "!include public_author.yaml"\n'
    )
    databases = first["databases/databases.yaml"].decode()
    assert databases.startswith("- name: default\n  kind: postgres\n  configuration:\n")
    assert "max_connections: 50" in databases
    assert databases.endswith(
        '  tables: "!include default/tables/tables.yaml"\n'
        '  functions: "!include default/functions/functions.yaml"\n'
    )
    assert first["databases/default/functions/functions.yaml"] == (
        b'- "!include public_search_articles.yaml"\n'
    )
    assert b"role: editor" in first["databases/default/tables/public_article.yaml"]
    assert first["inherited_roles.yaml"] == b"[]\n"
    assert b"query titles {" in first["query_collections.yaml"]  # the include, inlined

    fresh = tmp_path / "fresh"
    assert cli(srv, "export", fresh, "--config-version", "3") == 0
    assert read(fresh) == first
    clear(srv)
    assert cli(srv, "apply", fresh) == 0
    assert cli(srv, "export", tmp_path / "again", "--config-version", "3") == 0
    assert read(tmp_path / "again") == first
    # Without the option, a new directory is config v2, as before.
    assert cli(srv, "export", tmp_path / "v2") == 0
    assert read(tmp_path / "v2")["version.yaml"] == b"version: 2\n"


def test_diff_of_a_v3_directory(
    srv: ServerProcess, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`svc metadata diff` compares canonical v3 files: none for the applied project
    (hand-written order and include spellings never show), the edited per-table file
    after an edit, a table file the server does not have against an empty one."""
    project = write(tmp_path, v3_project())
    clear(srv)
    assert cli(srv, "apply", project) == 0
    capsys.readouterr()
    assert cli(srv, "diff", project) == 0
    assert capsys.readouterr().out == ""

    table = project / "databases/default/tables/public_article.yaml"
    table.write_text(dump({k: v for k, v in ARTICLE.items() if k != "update_permissions"}))
    assert cli(srv, "diff", project) == 1
    out = capsys.readouterr().out
    name = "databases/default/tables/public_article.yaml"
    assert f"--- server/{name}\n+++ {project / name}\n" in out
    removed = [line for line in out.splitlines() if line.startswith("-") and "---" not in line]
    assert "-update_permissions:" in removed and "-  - role: editor" in removed
    assert not [line for line in out.splitlines() if line.startswith("+") and "+++" not in line]

    # apply makes them equal
    assert cli(srv, "apply", project) == 0
    assert cli(srv, "diff", project) == 0
    capsys.readouterr()

    # a table the server does not track: its file is new, tables.yaml gains an include
    tables = project / "databases/default/tables/tables.yaml"
    tables.write_text(tables.read_text() + '- "!include public_extra.yaml"\n')
    (project / "databases/default/tables/public_extra.yaml").write_text("table: extra\n")
    assert cli(srv, "diff", project) == 1
    out = capsys.readouterr().out
    assert "--- server/databases/default/tables/public_extra.yaml" in out
    assert "+table:\n+  name: extra\n+  schema: public\n" in out
    assert '+- "!include public_extra.yaml"' in out


def test_a_second_source_is_reported_by_compile_and_apply(
    srv: ServerProcess, db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A source other than `default` is never dropped: `svc compile` reports it at its
    entry of `databases.yaml`, `svc metadata apply` keeps and reports it with the same
    reason, and `replace_metadata` without the flag refuses it (the
    reference's treatment of a source it cannot serve: an inconsistent object of type
    `source`); with `allow_inconsistent_metadata` it is kept, listed, exported back (v3
    only) and dropped by `drop_inconsistent_metadata`."""
    files = v3_project()
    files["databases/databases.yaml"] += (
        "- name: analytics\n  kind: postgres\n"
        + CONFIGURATION.replace("HASURA_GRAPHQL_DATABASE_URL", "SVC_TEST_ANALYTICS_URL")
        + '  tables: "!include analytics/tables/tables.yaml"\n'
    )
    files["databases/analytics/tables/tables.yaml"] = '- "!include public_events.yaml"\n'
    files["databases/analytics/tables/public_events.yaml"] = (
        "table:\n  name: events\n  schema: public\n"
    )
    project = write(tmp_path / "project", files)
    # Served (issue 28), but its database URL comes from a variable neither the server
    # nor `svc compile` has: an inconsistent source, said alike by both.
    reason = 'Inconsistent object: environment variable "SVC_TEST_ANALYTICS_URL" is not set'

    code, err = compile_dir(capsys, project, db_url)
    assert code == 1
    assert err == [
        f"databases/databases.yaml: $[1]: {reason}",
        "svc compile: 3 tables, 1 functions, 3 roles: 1 problem(s)",
    ]

    clear(srv)
    assert cli(srv, "apply", project) == 0  # the Hasura CLI's apply: kept and reported
    warned = capsys.readouterr().err
    assert reason.removeprefix("Inconsistent object: ") in warned, warned
    assert "metadata is inconsistent" in warned
    assert [s["name"] for s in export_doc(srv)["sources"]] == ["default", "analytics"]
    clear(srv)

    # The API: refused the same way; kept when inconsistencies are allowed.
    document = read_directory_v3(DirectoryFiles(project)).document
    r = srv.query({"type": "replace_metadata", "args": document})
    assert (r.status_code, r.json()["code"], r.json()["error"]) == (
        400,
        "invalid-configuration",
        reason,
    )
    r = srv.query(
        {
            "type": "replace_metadata",
            "args": {"metadata": document, "allow_inconsistent_metadata": True},
        }
    )
    assert r.status_code == 200, r.text
    issue = {"definition": "analytics", "reason": reason, "type": "source"}
    assert r.json() == {"is_consistent": False, "inconsistent_objects": [issue]}
    listed = srv.query({"type": "get_inconsistent_metadata", "args": {}}).json()
    assert listed["inconsistent_objects"] == [issue]
    assert srv.graphql("{ content_tag { label } }") == TAGS
    doc = export_doc(srv)
    assert [s["name"] for s in doc["sources"]] == ["default", "analytics"]
    assert doc["sources"][1]["tables"] == [{"table": {"name": "events", "schema": "public"}}]

    # svc metadata export: v2 cannot hold it (refused), v3 writes it back
    assert cli(srv, "export", tmp_path / "v2", "--config-version", "2") == 1
    assert "--config-version 3" in capsys.readouterr().err
    assert cli(srv, "export", tmp_path / "v3", "--config-version", "3") == 0
    exported = read(tmp_path / "v3")
    assert exported["databases/analytics/tables/public_events.yaml"] == (
        b"table:\n  name: events\n  schema: public\n"
    )
    assert b"- name: analytics\n" in exported["databases/databases.yaml"]
    # Applied again: kept and reported again (exit 0 with the warning, as the Hasura CLI)
    assert cli(srv, "apply", tmp_path / "v3") == 0
    assert "inconsistent source: " in capsys.readouterr().err

    r = srv.query({"type": "drop_inconsistent_metadata", "args": {}})
    assert r.status_code == 200, r.text
    doc = export_doc(srv)
    assert [s["name"] for s in doc["sources"]] == ["default"]
    assert srv.query({"type": "get_inconsistent_metadata", "args": {}}).json() == {
        "is_consistent": True,
        "inconsistent_objects": [],
    }


def test_keys_of_the_default_source_are_kept_or_refused_at_their_file(
    srv: ServerProcess, db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A `customization` that changes names is refused (`svc.metadata.unsupported`) by
    compile and apply alike, at its place in `databases.yaml`, before any request; one
    that asks for the defaults (a null key, as exports write them) is kept and exported
    back, as `configuration` is."""
    files = v3_project()
    files["databases/databases.yaml"] = files["databases/databases.yaml"].replace(
        "  tables:", "  customization:\n    type_names:\n      mapping: shop\n  tables:"
    )
    project = write(tmp_path / "named", files)
    place = f"{project / 'databases/databases.yaml'}: $[0].customization.type_names: "
    code, err = compile_dir(capsys, project, db_url)
    assert code == 2
    assert err[0].startswith(place + "svc does not support this source customization yet"), err
    clear(srv)
    assert cli(srv, "apply", project) == 1
    assert capsys.readouterr().err.startswith(place)
    assert export_doc(srv) == {"tables": []}

    files["databases/databases.yaml"] = files["databases/databases.yaml"].replace(
        "mapping: shop", "mapping: null"
    )
    project = write(tmp_path / "defaults", files)
    assert cli(srv, "apply", project) == 0
    (source,) = export_doc(srv)["sources"]
    assert source["customization"] == {"type_names": {"mapping": None}}
    assert cli(srv, "export", tmp_path / "out", "--config-version", "3") == 0
    written = (tmp_path / "out/databases/databases.yaml").read_text()
    assert "  customization:\n    type_names:\n      mapping: null\n" in written


def test_apply_refuses_include_errors_before_any_request(
    srv: ServerProcess, db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = v3_project()
    files["databases/default/tables/tables.yaml"] += '- "!include public_missing.yaml"\n'
    project = write(tmp_path, files)
    clear(srv)
    assert cli(srv, "apply", project) == 1
    including = project / "databases/default/tables/tables.yaml"
    assert capsys.readouterr().err == (
        f"{including}: $[3]: !include public_missing.yaml: no such file: "
        "databases/default/tables/public_missing.yaml\n"
    )
    assert export_doc(srv) == {"tables": []}
    code, err = compile_dir(capsys, project, db_url)
    assert code == 2 and err[0].startswith(f"{including}: $[3]: !include public_missing.yaml")


# -- reading (no server) --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (
            {"databases/default/tables/tables.yaml": '- "!include public_nope.yaml"\n'},
            "databases/default/tables/tables.yaml: $[0]: !include public_nope.yaml: "
            "no such file: databases/default/tables/public_nope.yaml",
        ),
        (
            {"databases/default/tables/tables.yaml": "- !include ../../../../etc/passwd\n"},
            "databases/default/tables/tables.yaml: $[0]: !include ../../../../etc/passwd: "
            "leaves the metadata directory",
        ),
        (
            {"databases/default/tables/tables.yaml": '- "!include /etc/passwd"\n'},
            "databases/default/tables/tables.yaml: $[0]: !include /etc/passwd: "
            "leaves the metadata directory",
        ),
        (
            {
                "databases/default/tables/tables.yaml": "- !include a.yaml\n",
                "databases/default/tables/a.yaml": "table: a\nconfiguration: !include b.yaml\n",
                "databases/default/tables/b.yaml": "- !include ../tables/a.yaml\n",
            },
            "databases/default/tables/b.yaml: $[0]: !include ../tables/a.yaml: include cycle: "
            "databases/default/tables/a.yaml -> databases/default/tables/b.yaml "
            "-> databases/default/tables/a.yaml",
        ),
        (
            {"databases/default/tables/tables.yaml": '- "!include tables.yaml"\n'},
            "databases/default/tables/tables.yaml: $[0]: !include tables.yaml: include cycle: "
            "databases/default/tables/tables.yaml -> databases/default/tables/tables.yaml",
        ),
        (
            {"databases/default/tables/tables.yaml": "- !include\n"},
            "databases/default/tables/tables.yaml: $[0]: !include names no file",
        ),
        (
            {"databases/default/tables/public_article.yaml": "table: [\n"},
            "databases/default/tables/public_article.yaml: $: invalid YAML: line 2",
        ),
        (
            {"databases/default/tables/public_author.yaml": "- table: author\n"},
            "databases/default/tables/public_author.yaml: $: expected an object, got a list",
        ),
        (
            {"databases/default/tables/public_author.yaml": "name: author\n"},
            'databases/default/tables/public_author.yaml: $: key "table" not found',
        ),
        (
            {"databases/databases.yaml": "name: default\n"},
            "databases/databases.yaml: $: expected a list, got an object",
        ),
        (
            {"databases/databases.yaml": "- kind: postgres\n"},
            "databases/databases.yaml: $[0].name: expected a source name",
        ),
        ({"version.yaml": "version: 2\n"}, "version.yaml: $.version: expected version 3"),
        ({"network.yaml": "- 1\n"}, "network.yaml: $: expected an object, got a list"),
        (
            {"actions.graphql": "type Mutation {\n"},
            "actions.graphql: $: not valid GraphQL SDL",
        ),
    ],
)
def test_bad_directories_name_the_file(edit: dict[str, str], expected: str) -> None:
    files = {**v3_project(), **edit}
    with pytest.raises(DirectoryError) as info:
        metadata_from_files_v3(files)
    assert str(info.value).startswith(expected), str(info.value)


def test_the_include_spellings_of_the_reference() -> None:
    """What the CLI writes (`"!include x"`) and reads (the `!include` tag, a quoted path,
    quotes inside the string) give the same metadata; includes are relative to the
    including file, wherever they are."""
    plain_md = metadata_from_files_v3(v3_project())
    spellings = {
        '"!include default/tables/tables.yaml"': '!include "default/tables/tables.yaml"',
        '!include "default/functions/functions.yaml"': (
            '"!include \\"default/functions/functions.yaml\\""'
        ),
    }
    files = v3_project()
    for old, new in spellings.items():
        files["databases/databases.yaml"] = files["databases/databases.yaml"].replace(old, new)
    # a table's permissions in a file of their own, two folders away
    files["databases/default/tables/public_author.yaml"] = dump(
        {**AUTHOR, "select_permissions": "!include ../../../permissions/author_select.yaml"}
    )
    files["permissions/author_select.yaml"] = dump(AUTHOR["select_permissions"])
    assert metadata_from_files_v3(files) == plain_md
    assert (
        metadata_to_obj(plain_md)["sources"][0]["configuration"]["connection_info"][
            "isolation_level"
        ]
        == "read-committed"
    )
    read_back = read_directory_v3(files)
    place = read_back.locate(("sources", 0, "tables", 1, "select_permissions", 0, "role"))
    assert place == ("permissions/author_select.yaml", "$[0].role")


def test_unapplied_top_level_keys_flow_into_the_document() -> None:
    """Every key of every file reaches the document (the model reports what svc does not
    apply); a file holding nothing (as the CLI writes for an empty key) gives no key; the
    writer writes them back to their files."""
    files = {
        **v3_project(),
        "inherited_roles.yaml": dump([{"role_name": "staff", "role_set": ["user", "editor"]}]),
        "network.yaml": dump({"tls_allowlist": [{"host": "example.com"}]}),
        "backend_configs.yaml": dump({"dataconnector": {"sqlite": {"uri": "http://x"}}}),
        "opentelemetry.yaml": dump({"status": "enabled", "exporter_otlp": {"protocol": "http"}}),
        "metrics_config.yaml": dump({"analyze_query_variables": True}),
        "api_limits.yaml": "{}\n",
    }
    document = read_directory_v3(files).document
    assert document["inherited_roles"] == [{"role_name": "staff", "role_set": ["user", "editor"]}]
    assert document["network"] == {"tls_allowlist": [{"host": "example.com"}]}
    assert document["backend_configs"] == {"dataconnector": {"sqlite": {"uri": "http://x"}}}
    assert document["opentelemetry"]["status"] == "enabled"
    assert document["metrics_config"] == {"analyze_query_variables": True}
    assert "api_limits" not in document
    assert read_directory_v3(v3_project()).document.keys() >= {"sources", "actions"}
    assert "network" not in read_directory_v3(v3_project()).document

    md = metadata_from_obj(document, "$")
    written = document_to_files_v3(normalised_document(document, md))
    assert written["inherited_roles.yaml"] == (
        "- role_name: staff\n  role_set:\n    - user\n    - editor\n"
    )
    assert written["network.yaml"] == "tls_allowlist:\n  - host: example.com\n"
    again = read_directory_v3(written).document
    keys = ("inherited_roles", "network", "backend_configs", "opentelemetry", "metrics_config")
    assert {k: again.get(k) for k in keys} == {k: document.get(k) for k in keys}


def test_a_symbolic_link_out_of_the_directory_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside.yaml"
    outside.write_text(dump(TAG))
    project = write(tmp_path / "project", v3_project())
    link = project / "databases/default/tables/content_tag.yaml"
    link.unlink()
    os.symlink(outside, link)
    with pytest.raises(DirectoryError) as info:
        metadata_from_files_v3(DirectoryFiles(project))
    assert str(info.value) == (
        "databases/default/tables/content_tag.yaml: $: leaves the metadata directory "
        "(a symbolic link)"
    )
    shutil.copy(outside, project / "elsewhere.yaml")  # inside: fine
    link.unlink()
    os.symlink(project / "elsewhere.yaml", link)
    assert len(metadata_from_files_v3(DirectoryFiles(project)).tables) == 3


# -- writing (no server) --------------------------------------------------------------------


def test_writing_is_canonical() -> None:
    """Entry order, key order, include spellings and name spellings do not change the
    bytes, and reading what was written gives the same metadata."""
    md = metadata_from_files_v3(v3_project())
    files = metadata_to_files_v3(md)
    shuffled = v3_project()
    shuffled["databases/default/tables/tables.yaml"] = (
        "- !include content_tag.yaml\n- !include public_author.yaml\n"
        '- "!include public_article.yaml"\n'
    )
    article = copy.deepcopy(ARTICLE)
    article["table"] = "article"
    article = dict(reversed(list(article.items())))
    shuffled["databases/default/tables/public_article.yaml"] = dump(article)
    assert metadata_to_files_v3(metadata_from_files_v3(shuffled)) == files
    again = metadata_from_files_v3(files)
    assert metadata_to_files_v3(again) == files
    assert metadata_to_obj(again) == metadata_to_obj(metadata_from_files_v3(files))
    assert list(files)[:3] == [
        "version.yaml",
        "databases/databases.yaml",
        "databases/default/functions/functions.yaml",
    ]


def test_a_version_2_document_is_written_with_the_default_source() -> None:
    md = metadata_from_obj({"version": 2, "tables": [{"table": "t"}]})
    files = metadata_to_files_v3(md)
    assert files["databases/databases.yaml"] == (
        "- name: default\n  kind: postgres\n  configuration:\n    connection_info:\n"
        "      database_url:\n        from_env: HASURA_GRAPHQL_DATABASE_URL\n"
        '  tables: "!include default/tables/tables.yaml"\n'
    )
    assert files["databases/default/tables/public_t.yaml"] == (
        "table:\n  name: t\n  schema: public\n"
    )
    assert "databases/default/functions/functions.yaml" not in files
    back = metadata_from_files_v3(files)
    assert back.default_source == {
        "name": "default",
        "kind": "postgres",
        "configuration": DEFAULT_CONFIGURATION,
    }
    assert back.tables == md.tables
    empty = metadata_to_files_v3(metadata_from_obj({}))
    assert empty["databases/default/tables/tables.yaml"] == "[]\n"
    assert empty["actions.graphql"] == "" and empty["network.yaml"] == "{}\n"


def test_file_names_are_the_clis_and_never_collide() -> None:
    """`<schema>_<table>.yaml`; names that would leave the folder or repeat one already
    written (case ignored: case-insensitive file systems) get `_2`, `_3`, …"""
    tables = [
        {"table": {"schema": "a_b", "name": "c"}},
        {"table": {"schema": "a", "name": "b_c"}},
        {"table": {"schema": "public", "name": "Author"}},
        {"table": {"schema": "public", "name": "author"}},
        {"table": {"schema": "public", "name": "../x/y"}},
        {"table": {"schema": "public", "name": "tables"}},
    ]
    files = metadata_to_files_v3(metadata_from_obj({"version": 2, "tables": tables}))
    folder = "databases/default/tables/"
    names = sorted(f.removeprefix(folder) for f in files if f.startswith(folder))
    assert names == [
        "a_b_c.yaml",
        "a_b_c_2.yaml",
        "public_.._x_y.yaml",
        "public_Author.yaml",
        "public_author_2.yaml",
        "public_tables.yaml",
        "tables.yaml",
    ]
    back = metadata_from_files_v3(files)
    assert sorted(str(t.table) for t in back.tables) == sorted(
        str(t.table) for t in metadata_from_obj({"tables": tables}).tables
    )


# -- sources in the model (no server) -------------------------------------------------------


def test_the_sources_of_a_version_3_document() -> None:
    """The served source is the first `default` of kind postgres; every other one is kept
    whole and reported (another kind, a second `default`, another name); errors inside the
    served source are at its path; the export puts the served source first."""
    from svc.ir.sources import source_issues

    doc: dict[str, Any] = {
        "version": 3,
        "sources": [
            {"name": "default", "kind": "mssql", "tables": [{"table": "a"}]},
            {"name": "default", "kind": "postgres", "tables": [{"table": "t"}]},
            {"name": "default", "tables": []},
            {"name": "pg", "kind": "postgres", "configuration": {}},
        ],
    }
    md = metadata_from_obj(doc)
    assert [t.table.name for t in md.tables] == ["t"]
    assert md.default_source is None  # name and kind only: version 2 says as much
    assert md.other_sources == (doc["sources"][0], doc["sources"][2], doc["sources"][3])
    issues = source_issues(md)
    # `pg` is served (issue 28: `svc.ir.source_tables` reports it only when unreachable)
    assert [(i.type, i.definition) for i in issues] == [("source", "default")] * 2
    assert [i.reason.removeprefix("Inconsistent object: ") for i in issues] == [
        'source "default" is of kind "mssql"; svc serves one source, "default", of kind "postgres"',
        'source "default" is declared more than once; it is kept but not served',
    ]
    out = metadata_to_obj(md)
    assert [s["name"] for s in out["sources"]] == ["default", "default", "default", "pg"]
    assert out["sources"][0] == {
        "name": "default",
        "kind": "postgres",
        "tables": [{"table": {"name": "t", "schema": "public"}}],
    }
    assert metadata_from_obj(out) == md

    bad = {"version": 3, "sources": [{"name": "pg"}, {"name": "default", "tables": [{}]}]}
    bad["sources"][1]["tables"] = [{"table": "t", "object_relationships": [{"name": 3}]}]
    with pytest.raises(SvcError) as info:
        metadata_from_obj(bad)
    assert info.value.path == ("$.args.sources[1].tables[0].object_relationships[0].name")
    only_other = metadata_from_obj({"version": 3, "sources": [{"name": "pg"}]})
    assert metadata_to_obj(only_other) == {"version": 3, "sources": [{"name": "pg"}]}
    for missing in ({}, {"name": 1}):
        with pytest.raises(SvcError) as info:
            metadata_from_obj({"version": 3, "sources": [missing]})
        assert info.value.path.startswith("$.args.sources[0]")


def test_a_read_replica_that_cannot_be_used_is_reported_by_compile_and_apply(
    srv: ServerProcess, db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A read replica whose URL names an environment variable that is not set is an
    inconsistent object of the source (`svc/ir/sources.py` `ReplicaIssue`): `svc compile`
    reports it at the entry, the live apply with the same reason."""
    files = v3_project()
    replica = (
        "      read_replicas:\n"
        "        - database_url:\n"
        "            from_env: SVC_TEST_UNSET_REPLICA_URL\n"
    )
    files["databases/databases.yaml"] = DATABASES.replace(
        "      use_prepared_statements: true\n", "      use_prepared_statements: true\n" + replica
    )
    project = write(tmp_path / "project", files)
    reason = (
        'Inconsistent object: read replica 0 of source "default" cannot be used: '
        'environment variable "SVC_TEST_UNSET_REPLICA_URL" is not set'
    )
    code, err = compile_dir(capsys, project, db_url)
    assert (code, err) == (
        1,
        [
            "databases/databases.yaml: $[0].configuration.connection_info.read_replicas[0]: "
            + reason,
            "svc compile: 3 tables, 1 functions, 3 roles: 1 problem(s)",
        ],
    )
    clear(srv)
    document = read_directory_v3(DirectoryFiles(project)).document
    r = srv.query({"type": "replace_metadata", "args": document})
    assert (r.status_code, r.json()["error"]) == (400, reason)
    clear(srv)
