"""Metadata as code (issue 5, spec 2.1): the config-v2 directory and `svc metadata
export|apply|diff` against a real server."""

from __future__ import annotations

import copy
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from svc.cli import main
from svc.metadata.directory import (
    FILES,
    DirectoryError,
    metadata_from_files,
    metadata_to_files,
)
from svc.metadata.model import Metadata, metadata_from_obj
from tests.support import ROOT, ServerProcess, author_article_steps, create_database

SECRET = "s3cret"
ADMIN = {"X-Svc-Admin-Secret": SECRET}

SQL = """
create table author (id serial primary key, name text not null, info jsonb);
create table article (
  id serial primary key, title text, body text, published boolean not null default false,
  author_id int references author(id)
);
insert into author (name) values ('Ada'), ('Bob');
insert into article (title, author_id) values ('graphs', 1), ('sql', 1), ('graph theory', 2);
create function search_articles(search text) returns setof article
  language sql stable as $$ select * from article where title ilike '%' || search || '%' $$;
create function author_initial(a author) returns text
  language sql stable as $$ select left(a.name, 1) $$;
"""

COLLECTION = {
    "name": "allowed",
    "definition": {
        "queries": [
            {"name": "titles", "query": "query titles {\n  article {\n    title\n  }\n}\n"},
            {"name": "authors", "query": "query authors { author { name } }"},
        ]
    },
}


def _steps() -> list[dict[str, Any]]:
    return [
        {"type": "run_sql", "args": {"sql": SQL}},
        *author_article_steps(),
        {
            "type": "create_select_permission",
            "args": {
                "table": "article",
                "role": "user",
                "permission": {
                    "columns": ["id", "title", "author_id"],
                    "filter": {"author_id": {"_eq": "X-Svc-User-Id"}},
                    "limit": 10,
                },
            },
        },
        {
            "type": "create_select_permission",
            "args": {
                "table": "author",
                "role": "user",
                "permission": {"columns": "*", "filter": {}, "allow_aggregations": True},
            },
        },
        {
            "type": "create_insert_permission",
            "args": {
                "table": "article",
                "role": "user",
                "permission": {
                    "columns": ["title", "body"],
                    "check": {"author_id": {"_eq": "X-Svc-User-Id"}},
                    "set": {"author_id": "X-Svc-User-Id"},
                },
            },
        },
        {
            "type": "create_update_permission",
            "args": {
                "table": "article",
                "role": "editor",
                "permission": {"columns": ["title"], "filter": {}, "check": {}},
            },
        },
        {
            "type": "add_computed_field",
            "args": {
                "table": "author",
                "name": "initial",
                "definition": {"function": "author_initial"},
            },
        },
        {
            "type": "track_function",
            "version": 2,
            "args": {"function": {"schema": "public", "name": "search_articles"}},
        },
    ]


@pytest.fixture(scope="module")
def srv(pg_url: str) -> Iterator[ServerProcess]:
    """A server with an admin secret, tables, relationships, permissions, a computed
    field, a function returning SETOF a tracked table, a query collection on the
    allow-list."""
    s = ServerProcess(create_database(pg_url), "--admin-secret", SECRET)
    try:
        r = s.query({"type": "bulk", "args": _steps()}, headers=ADMIN)
        assert r.status_code == 200, r.text
        # Query collections go in through replace_metadata (raw JSON round-trips), so this
        # test does not depend on the collection operations.
        md = s.query({"type": "export_metadata", "args": {}}, headers=ADMIN).json()
        md["query_collections"] = [COLLECTION]
        md["allowlist"] = [{"collection": "allowed"}]
        r = s.query({"type": "replace_metadata", "args": md}, headers=ADMIN)
        assert r.status_code == 200, r.text
        yield s
    finally:
        s.stop()


def cli(srv: ServerProcess, command: str, directory: Path, *extra: str) -> int:
    return main(["metadata", command, "--endpoint", srv.url, "--dir", str(directory), *extra])


def read(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


# -- against a server ----------------------------------------------------------------------


def test_export_apply_export_is_byte_identical(srv: ServerProcess, tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    assert cli(srv, "export", first, "--admin-secret", SECRET) == 0
    files = read(first)
    assert sorted(files) == sorted(FILES)
    assert files["version.yaml"] == b"version: 2\n"
    assert files["actions.graphql"] == b""
    tables = files["tables.yaml"].decode()
    for expected in ("array_relationships:", "select_permissions:", "computed_fields:"):
        assert expected in tables
    assert b"search_articles" in files["functions.yaml"]
    assert b"query titles {\n" in files["query_collections.yaml"]
    assert files["allow_list.yaml"] == b"- collection: allowed\n"

    # Apply onto an emptied server, so the export below can only come from the directory.
    assert srv.query({"type": "clear_metadata", "args": {}}, headers=ADMIN).status_code == 200
    assert cli(srv, "apply", first, "--admin-secret", SECRET) == 0
    assert cli(srv, "export", second, "--admin-secret", SECRET) == 0
    assert read(second) == files

    # What was applied is served: the function and a role's permission work again.
    data = srv.graphql('{ search_articles(args: {search: "graph"}) { title } }', headers=ADMIN)
    assert sorted(a["title"] for a in data["data"]["search_articles"]) == [
        "graph theory",
        "graphs",
    ]
    as_user = {**ADMIN, "X-Svc-Role": "user", "X-Svc-User-Id": "2"}
    assert srv.graphql("{ article { title } }", headers=as_user) == {
        "data": {"article": [{"title": "graph theory"}]}
    }


def test_export_is_stable_across_calls(srv: ServerProcess, tmp_path: Path) -> None:
    assert cli(srv, "export", tmp_path / "a", "--admin-secret", SECRET) == 0
    assert cli(srv, "export", tmp_path / "b", "--admin-secret", SECRET) == 0
    assert read(tmp_path / "a") == read(tmp_path / "b")


def test_diff_shows_what_apply_would_change(
    srv: ServerProcess, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = tmp_path / "md"
    assert cli(srv, "export", directory, "--admin-secret", SECRET) == 0
    capsys.readouterr()
    assert cli(srv, "diff", directory, "--admin-secret", SECRET) == 0
    assert capsys.readouterr().out == ""

    # Drop the editor's update permission from the directory.
    md = metadata_from_files({p.name: p.read_text() for p in directory.iterdir()})
    md = msgspec.structs.replace(
        md,
        tables=tuple(
            msgspec.structs.replace(t, update_permissions=()) if t.table.name == "article" else t
            for t in md.tables
        ),
    )
    (directory / "tables.yaml").write_text(metadata_to_files(md)["tables.yaml"])
    assert cli(srv, "diff", directory, "--admin-secret", SECRET) == 1
    out = capsys.readouterr().out
    assert "--- server/tables.yaml" in out
    assert f"+++ {directory / 'tables.yaml'}" in out
    removed = [line for line in out.splitlines() if line.startswith("-") and "---" not in line]
    assert any("update_permissions:" in line for line in removed)
    assert any("role: editor" in line for line in removed)
    assert not [line for line in out.splitlines() if line.startswith("+") and "+++" not in line]

    # Apply makes them equal; the permission is gone from the server.
    assert cli(srv, "apply", directory, "--admin-secret", SECRET) == 0
    assert cli(srv, "diff", directory, "--admin-secret", SECRET) == 0
    exported = srv.query({"type": "export_metadata", "args": {}}, headers=ADMIN).json()
    assert all(not t.get("update_permissions") for t in exported["tables"])
    # Put it back for the other tests of this module.
    update = [s for s in _steps() if s["type"] == "create_update_permission"]
    r = srv.query({"type": "bulk", "args": update}, headers=ADMIN)
    assert r.status_code == 200, r.text


def test_apply_of_an_inconsistent_directory_is_refused(
    srv: ServerProcess, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = tmp_path / "md"
    assert cli(srv, "export", directory, "--admin-secret", SECRET) == 0
    before = read(directory)
    text = (directory / "tables.yaml").read_text()
    (directory / "tables.yaml").write_text(text.replace("- author_id", "- no_such_column", 1))
    capsys.readouterr()
    # Refused, or (if the server keeps serving the consistent part) reported: either way
    # the column is named and the status is 1.
    assert cli(srv, "apply", directory, "--admin-secret", SECRET) == 1
    assert "no_such_column" in capsys.readouterr().err
    for name, data in before.items():
        (directory / name).write_bytes(data)
    assert cli(srv, "apply", directory, "--admin-secret", SECRET) == 0
    assert cli(srv, "export", tmp_path / "after", "--admin-secret", SECRET) == 0
    assert read(tmp_path / "after") == before


def test_the_admin_secret_is_required(
    srv: ServerProcess, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli(srv, "export", tmp_path / "md") == 1
    err = capsys.readouterr().err
    assert "svc metadata export:" in err
    assert "access-denied" in err or "invalid" in err
    assert not (tmp_path / "md").exists()


def test_an_unreachable_server_is_status_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["metadata", "export", "--endpoint", "http://127.0.0.1:9", "--dir", str(tmp_path)])
    assert code == 2
    assert "cannot reach" in capsys.readouterr().err


def test_a_bad_directory_names_file_and_path(
    srv: ServerProcess, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "tables.yaml").write_text("- table: author\n  object_relationships:\n  - 3\n")
    assert cli(srv, "apply", tmp_path, "--admin-secret", SECRET) == 1
    err = capsys.readouterr().err
    assert f"{tmp_path / 'tables.yaml'}: $[0].object_relationships[0]: " in err


def test_the_svc_script_runs_metadata_diff(srv: ServerProcess, tmp_path: Path) -> None:
    """`python -m svc` (the `svc` entry point's module) reaches the package's commands."""
    assert cli(srv, "export", tmp_path, "--admin-secret", SECRET) == 0
    cmd = [sys.executable, "-m", "svc", "metadata", "diff", "--endpoint", srv.url]
    r = subprocess.run(
        [*cmd, "--dir", str(tmp_path), "--admin-secret", SECRET],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (r.returncode, r.stdout) == (0, ""), r.stderr


# -- the directory format (no server) -------------------------------------------------------

DOC: dict[str, Any] = {
    "version": 2,
    "tables": [
        {
            "table": {"schema": "public", "name": "b"},
            "select_permissions": [
                {"role": "zed", "permission": {"filter": {"x": 1}, "columns": ["x"]}},
                {"role": "amy", "permission": {"columns": "*", "filter": {}}},
            ],
            "object_relationships": [
                {"using": {"foreign_key_constraint_on": "a_id"}, "name": "a"},
            ],
        },
        {
            "table": "a",
            "array_relationships": [
                {
                    "name": "bs",
                    "using": {"foreign_key_constraint_on": {"column": "a_id", "table": "b"}},
                }
            ],
        },
        {"table": {"schema": "other", "name": "a"}},
    ],
    "functions": [{"function": "f2"}, {"function": {"schema": "public", "name": "f1"}}],
    "query_collections": [COLLECTION],
    "allowlist": [{"collection": "allowed"}],
}


def test_writing_is_canonical() -> None:
    """Entry order, key order and the spelling of names do not change the bytes."""
    files = metadata_to_files(metadata_from_obj(DOC))
    shuffled = copy.deepcopy(DOC)
    shuffled["tables"].reverse()
    shuffled["functions"].reverse()
    shuffled["tables"][2]["select_permissions"].reverse()
    shuffled["tables"][2] = dict(reversed(list(shuffled["tables"][2].items())))
    shuffled["tables"][0]["table"] = {"name": "a", "schema": "other"}
    shuffled["tables"][1]["table"] = {"name": "a", "schema": "public"}
    assert metadata_to_files(metadata_from_obj(shuffled)) == files
    assert list(files) == list(FILES)
    tables = files["tables.yaml"]
    # public.a, public.b, other.a → sorted by (schema, name)
    assert tables.index("name: a\n    schema: other") < tables.index("name: a\n    schema: public")
    assert tables.index("role: amy") < tables.index("role: zed")
    assert files["functions.yaml"] == (
        "- function:\n    name: f1\n    schema: public\n"
        "- function:\n    name: f2\n    schema: public\n"
    )


def test_the_empty_directory() -> None:
    files = metadata_to_files(Metadata())
    assert files == {
        "version.yaml": "version: 2\n",
        "tables.yaml": "[]\n",
        "functions.yaml": "[]\n",
        "actions.yaml": (
            "actions: []\ncustom_types:\n  enums: []\n  input_objects: []\n"
            "  objects: []\n  scalars: []\n"
        ),
        "actions.graphql": "",
        "allow_list.yaml": "[]\n",
        "cron_triggers.yaml": "[]\n",
        "query_collections.yaml": "[]\n",
        "remote_schemas.yaml": "[]\n",
        "rest_endpoints.yaml": "[]\n",
        "api_limits.yaml": "{}\n",
        "graphql_schema_introspection.yaml": "disabled_for_roles: []\n",
    }
    assert metadata_from_files(files) == Metadata()
    assert metadata_from_files({}) == Metadata()  # missing files mean empty


def test_reading_keeps_entry_order_and_round_trips() -> None:
    files = metadata_to_files(metadata_from_obj(DOC))
    md = metadata_from_files(files)
    assert [str(t.table) for t in md.tables] == ["other.a", "a", "b"]
    assert metadata_to_files(md) == files
    # Hand-written files: unordered, short names, unquoted dates stay strings.
    hand = {
        "tables.yaml": (
            "- table: b\n"
            "  select_permissions:\n"
            "  - role: u\n"
            "    permission: {columns: [x], filter: {day: {_gt: 2020-01-01}}}\n"
        ),
    }
    md = metadata_from_files(hand)
    assert md.tables[0].select_permissions[0].permission.filter == {"day": {"_gt": "2020-01-01"}}
    again = metadata_from_files(metadata_to_files(md))
    assert again == md


def test_multi_line_queries_are_literal_blocks() -> None:
    text = metadata_to_files(metadata_from_obj({"query_collections": [COLLECTION]}))[
        "query_collections.yaml"
    ]
    assert "query: |\n          query titles {\n            article {\n" in text
    assert "query: query authors { author { name } }\n" in text


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"tables.yaml": "- table: a\n  x: [\n"}, "tables.yaml: $: invalid YAML: line 3"),
        ({"tables.yaml": "table: a\n"}, "tables.yaml: $: expected a list, got an object"),
        ({"functions.yaml": "- 3\n"}, "functions.yaml: $[0]: expected an object"),
        ({"tables.yaml": "- {}\n"}, 'tables.yaml: $[0]: key "table" not found'),
        ({"tables.yaml": "- table: {schema: 1}\n"}, "tables.yaml: $[0].table: expecting"),
        (
            {"tables.yaml": "- table: a\n- table: b\n  object_relationships:\n  - name: 3\n"},
            "tables.yaml: $[1].object_relationships[0].name: Expected `str`, got `int`",
        ),
        ({"version.yaml": "version: 3\n"}, "version.yaml: $.version: unsupported"),
        ({"actions.graphql": "type Query { a: Int }\n"}, 'actions.graphql: $: action "a" has'),
        ({"actions.graphql": "type Query {\n"}, "actions.graphql: $: not valid GraphQL SDL"),
        ({"actions.yaml": "actions: {}\n"}, "actions.yaml: $.actions: expected a list"),
        # Typed parts (issue 12): a value of the wrong type is refused at its place.
        (
            {"allow_list.yaml": "- collection: 3\n  scope: 1\n"},
            "allow_list.yaml: $[0].collection: Expected `str`, got `int`",
        ),
        (
            {"tables.yaml": "- table: a\n  select_permissions:\n  - role: u\n    permission: 1\n"},
            "tables.yaml: $[0].select_permissions[0].permission: Expected `object`, got `int`",
        ),
    ],
)
def test_bad_files_name_file_and_path(files: dict[str, str], expected: str) -> None:
    with pytest.raises(DirectoryError) as info:
        metadata_from_files(files)
    assert str(info.value).startswith(expected), str(info.value)
