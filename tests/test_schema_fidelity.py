"""The reference's schema to the letter (issue 18), seen through introspection of a real
server: object relationships over a foreign key of NOT NULL columns are non-null
(`album.artist: artist!`) unless the role's filter may hide the target row; manual,
reverse and nullable-key ones stay nullable. And graphql-js accepts the Chinook schema
(`buildClientSchema` + `validateSchema` in Node), as the clients generating types from it
(graphql-codegen) read it."""

from __future__ import annotations

import json
import shutil
import subprocess
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from graphql import get_introspection_query

from tests.support import SHARED, ServerProcess, create_database

SETUP = """
CREATE TABLE artist (id serial PRIMARY KEY, name text NOT NULL);
CREATE TABLE album (id serial PRIMARY KEY, title text NOT NULL,
  artist_id integer NOT NULL REFERENCES artist (id));
CREATE TABLE track (id serial PRIMARY KEY, name text NOT NULL,
  album_id integer REFERENCES album (id));
CREATE TABLE profile (artist_id integer PRIMARY KEY REFERENCES artist (id), bio text);
INSERT INTO artist (name) VALUES ('AC/DC'), ('Accept');
INSERT INTO album (title, artist_id)
  VALUES ('For Those About To Rock', 1), ('Restless', 2), ('Restless', 2);
INSERT INTO track (name, album_id) VALUES ('Balls to the Wall', 2), ('Loose', NULL);
"""


def _rel(table: str, name: str, using: dict[str, Any], kind: str = "object") -> dict[str, Any]:
    args = {"table": table, "name": name, "using": using}
    return {"type": f"create_{kind}_relationship", "args": args}


def _select(
    table: str, role: str, filter_: dict[str, Any], *, aggregations: bool = False
) -> dict[str, Any]:
    permission = {"columns": "*", "filter": filter_, "allow_aggregations": aggregations}
    args = {"table": table, "role": role, "permission": permission}
    return {"type": "create_select_permission", "args": args}


ALBUMS = {"table": "album", "column": "artist_id"}
REVERSE = {"foreign_key_constraint_on": {"table": "profile", "column": "artist_id"}}
STEPS = [
    {"type": "run_sql", "args": {"sql": SETUP}},
    *({"type": "track_table", "args": t} for t in ("artist", "album", "track", "profile")),
    _rel("album", "artist", {"foreign_key_constraint_on": "artist_id"}),
    _rel("track", "album", {"foreign_key_constraint_on": "album_id"}),
    _rel("artist", "profile", REVERSE),
    _rel("artist", "albums", {"foreign_key_constraint_on": ALBUMS}, "array"),
    _rel(
        "album",
        "artist_manual",
        {
            "manual_configuration": {
                "remote_table": "artist",
                "column_mapping": {"artist_id": "id"},
            }
        },
    ),
    *(_select(t, "user", {}) for t in ("artist", "album", "track", "profile")),
    _select("album", "limited", {}),
    _select("artist", "limited", {"name": {"_eq": "Accept"}}),
    _select("artist", "agg", {}),
    _select("album", "agg", {"title": {"_neq": "Restless"}}, aggregations=True),
]


@pytest.fixture(scope="module")
def srv(pg_url: str) -> Iterator[ServerProcess]:
    s = ServerProcess(create_database(pg_url), "--workers", "1")
    try:
        r = s.query({"type": "bulk", "args": STEPS})
        assert r.status_code == 200, r.text
        yield s
    finally:
        s.stop()


def field_type(s: ServerProcess, type_name: str, field: str, role: str = "admin") -> str:
    """The field's type as SDL spells it (`artist!`, `[album!]!`)."""
    q = """query ($t: String!) { __type(name: $t) { fields {
      name type { kind name ofType { kind name ofType { kind name ofType { name } } } } } } }"""
    headers = {} if role == "admin" else {"x-svc-role": role}
    body = s.graphql(q, {"t": type_name}, headers=headers)
    found = {f["name"]: f["type"] for f in body["data"]["__type"]["fields"]}
    return _sdl(found[field])


def _sdl(t: dict[str, Any]) -> str:
    if t["kind"] == "NON_NULL":
        return _sdl(t["ofType"]) + "!"
    if t["kind"] == "LIST":
        return f"[{_sdl(t['ofType'])}]"
    return str(t["name"])


def test_object_relationship_nullability(srv: ServerProcess) -> None:
    assert field_type(srv, "album", "artist") == "artist!"  # NOT NULL foreign key
    assert field_type(srv, "track", "album") == "album"  # nullable key column
    assert field_type(srv, "artist", "profile") == "profile"  # reverse: may have none
    assert field_type(srv, "album", "artist_manual") == "artist"  # manual: no constraint
    assert field_type(srv, "artist", "name") == "String!"
    # a role seeing every artist gets the same types; one whose filter may hide the
    # artist gets a nullable field (its answer can be null)
    assert field_type(srv, "album", "artist", role="user") == "artist!"
    assert field_type(srv, "album", "artist", role="limited") == "artist"
    answer = srv.graphql(
        "{ album(order_by: {id: asc}) { artist { name } } }", headers={"x-svc-role": "limited"}
    )
    accept = {"artist": {"name": "Accept"}}
    assert answer == {"data": {"album": [{"artist": None}, accept, accept]}}


def artists(s: ServerProcess, where: str, role: str = "admin") -> list[str]:
    """Names of the artists matching `where` (GraphQL input syntax)."""
    headers = {} if role == "admin" else {"x-svc-role": role}
    q = f"{{ artist(where: {where}, order_by: {{id: asc}}) {{ name }} }}"
    body = s.graphql(q, headers=headers)
    assert "errors" not in body, body
    return [a["name"] for a in body["data"]["artist"]]


def test_aggregate_bool_exp(srv: ServerProcess) -> None:
    count = "{albums_aggregate: {count: %s}}"
    assert artists(srv, count % "{predicate: {_gt: 1}}") == ["Accept"]
    assert artists(srv, count % "{predicate: {_eq: 1}}") == ["AC/DC"]
    distinct = "{arguments: [title], distinct: true, predicate: {_eq: 1}}"
    assert artists(srv, count % distinct) == ["AC/DC", "Accept"]
    assert artists(srv, count % "{arguments: [title], predicate: {_eq: 2}}") == ["Accept"]
    only_for = '{filter: {title: {_like: "For%"}}, predicate: {_eq: 0}}'
    assert artists(srv, count % only_for) == ["Accept"]
    # combined with other conditions, and a variable predicate
    both = '{_and: [{name: {_like: "AC%"}}, ' + count % "{predicate: {_lt: 2}}" + "]}"
    assert artists(srv, both) == ["AC/DC"]
    q = (
        "query ($p: Int_comparison_exp!) "
        "{ artist(where: {albums_aggregate: {count: {predicate: $p}}}) { name } }"
    )
    assert srv.graphql(q, {"p": {"_gte": 2}}) == {"data": {"artist": [{"name": "Accept"}]}}
    assert srv.graphql(q, {"p": {"_lt": 2}}) == {"data": {"artist": [{"name": "AC/DC"}]}}
    # a role counts only the rows it may see ("Restless" is hidden from `agg`)
    assert artists(srv, count % "{predicate: {_eq: 0}}", role="agg") == ["Accept"]


def test_aggregate_bool_exp_types(srv: ServerProcess) -> None:
    count = "album_aggregate_bool_exp_count"
    assert input_type(srv, count, "predicate") == "Int_comparison_exp!"
    assert input_type(srv, count, "arguments") == "[album_select_column!]"
    assert input_type(srv, count, "distinct") == "Boolean"
    assert input_type(srv, count, "filter") == "album_bool_exp"
    assert input_type(srv, "artist_bool_exp", "albums_aggregate") == "album_aggregate_bool_exp"
    # only where the role may aggregate the target, as `albums_aggregate` itself
    assert input_type(srv, "artist_bool_exp", "albums_aggregate", "user") is None
    assert input_type(srv, "artist_bool_exp", "albums_aggregate", "agg") is not None


def input_type(s: ServerProcess, type_name: str, field: str, role: str = "admin") -> str | None:
    """An input field's type as SDL spells it, None when the type or field is absent."""
    q = """query ($t: String!) { __type(name: $t) { inputFields {
      name type { kind name ofType { kind name ofType { kind name ofType { name } } } } } } }"""
    headers = {} if role == "admin" else {"x-svc-role": role}
    found = s.graphql(q, {"t": type_name}, headers=headers)["data"]["__type"]
    if found is None:
        return None
    fields = {f["name"]: f["type"] for f in found["inputFields"]}
    return _sdl(fields[field]) if field in fields else None


# -- graphql-js ---------------------------------------------------------------------------

GRAPHQL_JS = "graphql@16.9.0"
CACHE = Path.home() / ".cache" / "svc-tests" / "graphql-js"
CHECK = """
const { buildClientSchema, validateSchema } = require(process.argv[1]);
const result = JSON.parse(require("fs").readFileSync(0, "utf8"));
const schema = buildClientSchema(result.data);
const errors = validateSchema(schema);
console.log(JSON.stringify({
  errors: errors.map(e => e.message),
  types: Object.keys(schema.getTypeMap()).length,
}));
"""


def graphql_js() -> Path | None:
    """graphql-js's package folder (fetched once with `npm pack` into ~/.cache), or None
    without Node and npm."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        return None
    package = CACHE / "package"
    if not (package / "index.js").is_file():
        CACHE.mkdir(parents=True, exist_ok=True)
        out = subprocess.run(
            ["npm", "pack", "--silent", GRAPHQL_JS],
            cwd=CACHE,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if out.returncode != 0:
            return None
        with tarfile.open(CACHE / out.stdout.strip().splitlines()[-1]) as tar:
            tar.extractall(CACHE, filter="data")
    return package


CHINOOK = SHARED / "data" / "chinook" / "chinook_pg_serial_pk_proper_naming.sql"


@pytest.fixture(scope="module")
def chinook(pg_url: str) -> Iterator[ServerProcess]:
    if not CHINOOK.is_file():
        pytest.skip("../shared/data/chinook is not beside the clone")
    from tests.test_chinook import track_bulk

    s = ServerProcess(create_database(pg_url), "--workers", "1")
    try:
        assert s.query({"type": "run_sql", "args": {"sql": CHINOOK.read_text()}}).status_code == 200
        assert s.query(track_bulk()).status_code == 200
        yield s
    finally:
        s.stop()


def test_graphql_js_accepts_the_chinook_schema(chinook: ServerProcess) -> None:
    package = graphql_js()
    if package is None:
        pytest.skip("Node or npm missing (or the npm registry unreachable): graphql-js not run")
    result = chinook.graphql(get_introspection_query(descriptions=True))
    assert "errors" not in result
    out = subprocess.run(
        ["node", "-e", CHECK, str(package)],
        input=json.dumps(result),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    verdict = json.loads(out.stdout)
    assert verdict["errors"] == []
    assert verdict["types"] > 100
    # the Chinook foreign keys are NOT NULL: their object relationships are non-null
    assert field_type(chinook, "albums", "artist") == "artists!"


TYPE_DESCRIPTIONS = {
    "album": 'columns and relationships of "album"',
    "album_mutation_response": 'response of any mutation on the table "album"',
    "album_on_conflict": 'on_conflict condition type for table "album"',
    "album_update_column": 'update columns of table "album"',
    "album_set_input": 'input type for updating data in table "album"',
    "album_inc_input": 'input type for incrementing numeric columns in table "album"',
    "album_obj_rel_insert_input": (
        'input type for inserting object relation for remote table "album"'
    ),
    "album_arr_rel_insert_input": (
        'input type for inserting array relation for remote table "album"'
    ),
    "album_aggregate_order_by": 'order by aggregate values of table "album"',
    "album_avg_order_by": 'order by avg() on columns of table "album"',
    "album_max_order_by": 'order by max() on columns of table "album"',
    "album_avg_fields": "aggregate avg on columns",
    "album_aggregate": 'aggregated selection of "album"',
    "album_bool_exp": 'Boolean expression to filter rows from the table "album". '
    "All fields are combined with a logical 'AND'.",
    "album_select_column": 'select columns of table "album"',
    "album_pk_columns_input": "primary key columns input for table: album",
}
ARGUMENT_DESCRIPTIONS = {
    ("mutation_root", "insert_album", "objects"): "the rows to be inserted",
    ("mutation_root", "insert_album", "on_conflict"): "upsert condition",
    ("mutation_root", "insert_album_one", "object"): "the row to be inserted",
    ("mutation_root", "update_album", "_set"): (
        "sets the columns of the filtered rows to the given values"
    ),
    ("mutation_root", "update_album", "_inc"): (
        "increments the numeric columns with given value of the filtered values"
    ),
    ("mutation_root", "update_album", "where"): "filter the rows which have to be updated",
    ("mutation_root", "delete_album", "where"): "filter the rows which have to be deleted",
    ("mutation_root", "update_album_many", "updates"): "updates to execute, in order",
    ("query_root", "album", "where"): "filter the rows returned",
    ("query_root", "album", "limit"): "limit the number of rows returned",
}
FIELD_DESCRIPTIONS = {
    ("album_mutation_response", "affected_rows"): "number of rows affected by the mutation",
    ("album_mutation_response", "returning"): "data from the rows affected by the mutation",
    ("query_root", "album"): 'fetch data from the table: "album"',
    ("query_root", "album_by_pk"): 'fetch data from the table: "album" using primary key columns',
    ("query_root", "album_aggregate"): 'fetch aggregated fields from the table: "album"',
    ("mutation_root", "update_album_many"): 'update multiples rows of table: "album"',
    ("album", "artist"): "An object relationship",
    ("artist", "albums"): "An array relationship",
    ("artist", "albums_aggregate"): "An aggregate relationship",
}


def test_reference_descriptions(srv: ServerProcess) -> None:
    q = """{ __schema { types { name description
      fields { name description args { name description } } } } }"""
    types = {t["name"]: t for t in srv.graphql(q)["data"]["__schema"]["types"]}
    got = {name: types[name]["description"] for name in TYPE_DESCRIPTIONS}
    assert got == TYPE_DESCRIPTIONS
    fields = {(t["name"], f["name"]): f for t in types.values() for f in t["fields"] or ()}
    assert {k: fields[k]["description"] for k in FIELD_DESCRIPTIONS} == FIELD_DESCRIPTIONS
    args = {(*key, a["name"]): a["description"] for key, f in fields.items() for a in f["args"]}
    assert {k: args[k] for k in ARGUMENT_DESCRIPTIONS} == ARGUMENT_DESCRIPTIONS
    update_values = {
        "query": '{ __type(name: "album_update_column") { enumValues { description } } }'
    }
    values = srv.client.post("/v1/graphql", json=update_values).json()
    assert {v["description"] for v in values["data"]["__type"]["enumValues"]} == {"column name"}
