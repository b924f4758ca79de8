"""Postgres array columns are GraphQL lists, as in the reference; scalars on request.

Reference followed (hasura/graphql-engine, `server/src-lib`):

- `Hasura/Backends/Postgres/Instances/Schema.hs`, `columnParser`: a `PGArray inner`
  column is `[Inner!]` (`P.TList NonNullable (TNamed NonNullable inner)`) unless the
  schema option `soPostgresArrays` is `DontUsePostgresArrays`, which recovers the old
  scalar named after the Postgres type (`_text`);
- `Hasura/GraphQL/Schema.hs`: `soPostgresArrays` is `DontUsePostgresArrays` exactly when
  the experimental feature `disable_postgres_arrays` (`EFDisablePostgresArrays`,
  `Hasura/Server/Types.hs`) is on: lists are the default;
- `comparisonExps`: a list column's comparison type is `<Inner>_array_comparison_exp`,
  `_eq`/`_neq`/`_gt`/… take the array (`[Inner!]`), `_in`/`_nin` a list of arrays
  (`[[Inner!]!]`), and every array column has `_contains` / `_contained_in`
  (`AContains`/`AContainedIn`, `@>`/`<@`);
- Postgres records no dimensions: `integer[][]` is `_int4`, hence `[Int!]` (its values
  are still answered as nested JSON arrays, as Postgres' `to_json` writes them).

The conformance corpus expects lists too (`graphql_mutation/insert/basic/
insert_into_array_col_with_array_input.yaml`: a `[String]` variable for a `text[]`
column).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from svc.config import postgres_arrays_as_lists
from tests.support import ServerProcess, create_database

DDL = """
create table things (
  id serial primary key,
  tags text[] not null default '{}',
  nums integer[],
  grid integer[][]
);
insert into things (tags, nums, grid) values
  ('{a,b}', '{1,2,3}', '{{1,2},{3,4}}'),
  ('{b,c}', '{4}', null),
  ('{}', '{5,null}', null);
"""
TABLE = {"schema": "public", "name": "things"}
SETUP = [
    {"type": "run_sql", "args": {"sql": DDL}},
    {"type": "track_table", "args": {"table": TABLE}},
]
ADMIN = {"x-svc-admin-secret": "s"}


def _serve(pg_url: str, features: str = "") -> ServerProcess:
    env = {"SVC_GRAPHQL_SERVER_WORKERS": "1", "SVC_GRAPHQL_EXPERIMENTAL_FEATURES": features}
    server = ServerProcess(create_database(pg_url), "--admin-secret", "s", env=env)
    r = server.query({"type": "bulk", "args": SETUP}, headers=ADMIN)
    assert r.status_code == 200, r.text
    return server


@pytest.fixture(scope="module")
def lists(pg_url: str) -> Iterator[ServerProcess]:
    """A server with the default: array columns as lists."""
    server = _serve(pg_url)
    try:
        yield server
    finally:
        server.stop()


def _gql(server: ServerProcess, query: str, variables: dict[str, Any] | None = None) -> Any:
    return server.graphql(query, variables, headers=ADMIN)


def _ids(answer: Any) -> list[int]:
    assert "errors" not in answer, answer
    return sorted(row["id"] for row in answer["data"]["things"])


def _type_of(server: ServerProcess, type_name: str, field: str, input_: bool = False) -> str:
    """The SDL spelling of `type_name.field`'s type (introspection)."""
    kind = "inputFields" if input_ else "fields"
    q = (
        f'{{ __type(name: "{type_name}") {{ {kind} {{ name type {{ kind name '
        "ofType { kind name ofType { kind name ofType { kind name "
        "ofType { kind name } } } } } } } }"
    )
    answer = _gql(server, q)
    assert "errors" not in answer, answer
    fields = {f["name"]: f["type"] for f in answer["data"]["__type"][kind]}
    return _sdl(fields[field])


def _sdl(t: dict[str, Any]) -> str:
    if t["kind"] == "NON_NULL":
        return _sdl(t["ofType"]) + "!"
    if t["kind"] == "LIST":
        return "[" + _sdl(t["ofType"]) + "]"
    return str(t["name"])


def test_lists_are_the_default() -> None:
    """`disable_postgres_arrays` (any case, among others) keeps scalars; nothing else."""
    assert postgres_arrays_as_lists({})
    assert postgres_arrays_as_lists({"SVC_GRAPHQL_EXPERIMENTAL_FEATURES": "hide_stream_fields"})
    env = {"SVC_GRAPHQL_EXPERIMENTAL_FEATURES": "x, Disable_Postgres_Arrays"}
    assert not postgres_arrays_as_lists(env)


def test_introspection_types(lists: ServerProcess) -> None:
    assert _type_of(lists, "things", "tags") == "[String!]!"
    assert _type_of(lists, "things", "nums") == "[Int!]"
    assert _type_of(lists, "things", "grid") == "[Int!]"  # no dimensions in the catalog
    assert _type_of(lists, "things_insert_input", "tags", True) == "[String!]"
    assert _type_of(lists, "things_set_input", "nums", True) == "[Int!]"
    assert _type_of(lists, "things_bool_exp", "tags", True) == "String_array_comparison_exp"
    exp = "Int_array_comparison_exp"
    assert _type_of(lists, exp, "_eq", True) == "[Int!]"
    assert _type_of(lists, exp, "_contains", True) == "[Int!]"
    assert _type_of(lists, exp, "_contained_in", True) == "[Int!]"
    assert _type_of(lists, exp, "_in", True) == "[[Int!]!]"
    assert _type_of(lists, exp, "_is_null", True) == "Boolean"
    answer = _gql(lists, '{ __type(name: "_text") { name } }')
    assert answer["data"]["__type"] is None


def test_selection_answers_json_arrays(lists: ServerProcess) -> None:
    answer = _gql(lists, "{ things(order_by: {id: asc}) { tags nums grid } }")
    assert answer["data"]["things"] == [
        {"tags": ["a", "b"], "nums": [1, 2, 3], "grid": [[1, 2], [3, 4]]},
        {"tags": ["b", "c"], "nums": [4], "grid": None},
        {"tags": [], "nums": [5, None], "grid": None},  # a null element stays null
    ]


def test_contains_and_contained_in(lists: ServerProcess) -> None:
    q = "query($v: [String!]) { things(where: {tags: {%s: $v}}) { id } }"
    assert _ids(_gql(lists, q % "_contains", {"v": ["b"]})) == [1, 2]
    assert _ids(_gql(lists, q % "_contained_in", {"v": ["a", "b", "z"]})) == [1, 3]
    literal = "{ things(where: {nums: {_contains: [1, 3]}}) { id } }"
    assert _ids(_gql(lists, literal)) == [1]


def test_whole_array_comparisons(lists: ServerProcess) -> None:
    assert _ids(_gql(lists, '{ things(where: {tags: {_eq: ["b", "c"]}}) { id } }')) == [2]
    assert _ids(_gql(lists, '{ things(where: {tags: {_neq: ["b", "c"]}}) { id } }')) == [1, 3]
    q = "query($v: [[String!]!]) { things(where: {tags: {_in: $v}}) { id } }"
    assert _ids(_gql(lists, q, {"v": [["a", "b"], []]})) == [1, 3]
    q = 'query($x: String!) { things(where: {tags: {_eq: ["a", $x]}}) { id } }'
    assert _ids(_gql(lists, q, {"x": "b"})) == [1]


def test_insert_literal_and_variable(lists: ServerProcess) -> None:
    q = """mutation($t: [String!], $n: [Int!]) {
      insert_things(objects: [{tags: $t, nums: $n}, {tags: ["x", "y\\"z", "{,}"], nums: [7]}]) {
        returning { tags nums }
      }
    }"""
    answer = _gql(lists, q, {"t": ["p", "q"], "n": [8, 9]})
    assert "errors" not in answer, answer
    assert answer["data"]["insert_things"]["returning"] == [
        {"tags": ["p", "q"], "nums": [8, 9]},
        {"tags": ["x", 'y"z', "{,}"], "nums": [7]},  # quoting survives the array literal
    ]
    _gql(lists, "mutation { delete_things(where: {id: {_gt: 3}}) { affected_rows } }")


def test_update_sets_an_array(lists: ServerProcess) -> None:
    q = """mutation($v: [Int!]) {
      update_things(where: {id: {_eq: 2}}, _set: {nums: $v, tags: ["u"]}) {
        returning { tags nums }
      }
    }"""
    answer = _gql(lists, q, {"v": [10, 11]})
    assert answer["data"]["update_things"]["returning"] == [{"tags": ["u"], "nums": [10, 11]}]
    back = (
        "mutation { update_things(where: {id: {_eq: 2}}, "
        '_set: {nums: [4], tags: ["b", "c"]}) { affected_rows } }'
    )
    assert _gql(lists, back)["data"]["update_things"]["affected_rows"] == 1


def test_null_elements_are_refused_in_input(lists: ServerProcess) -> None:
    """`[String!]`: a null element is a GraphQL validation error, as in the reference."""
    answer = _gql(
        lists, 'mutation { insert_things(objects: [{tags: ["a", null]}]) { affected_rows } }'
    )
    assert answer["errors"][0]["extensions"]["code"] == "validation-failed", answer
    q = "mutation($t: [String!]) { insert_things(objects: [{tags: $t}]) { affected_rows } }"
    answer = _gql(lists, q, {"t": ["a", None]})
    assert "errors" in answer, answer


def test_string_for_a_list_column_is_an_array_literal(lists: ServerProcess) -> None:
    """A string for a list column is Postgres' array literal, not a one-element list: the
    reference's `columnParser` hands it to `parsePGValue` (`Hasura/Backends/Postgres/SQL/
    Value.hs`, `(_, String t) -> parseTyped <|> pure (PGValUnknown t)`); the corpus case
    `graphql_mutation/update/basic/author_by_pk.yaml` sets `emails: "{author1@hasura.io}"`
    on a `text[]` column and reads back `[author1@hasura.io]`."""
    q = 'mutation { insert_things(objects: [{tags: "{a,b}"}]) { returning { id tags } } }'
    answer = _gql(lists, q)
    row = answer["data"]["insert_things"]["returning"][0]
    _gql(lists, "mutation($i: Int!) { delete_things_by_pk(id: $i) { id } }", {"i": row["id"]})
    assert row["tags"] == ["a", "b"]


def test_disable_postgres_arrays_keeps_scalars(pg_url: str) -> None:
    """`disable_postgres_arrays`: `_text`/`_int4` scalars taking Postgres' array syntax;
    `_contains`/`_contained_in` still offered (the reference's guard is on the column's
    Postgres type, not on the option)."""
    server = _serve(pg_url, "disable_postgres_arrays")
    try:
        assert _type_of(server, "things", "tags") == "_text!"
        assert _type_of(server, "things", "nums") == "_int4"
        assert _type_of(server, "things_bool_exp", "tags", True) == "_text_comparison_exp"
        assert _type_of(server, "_int4_comparison_exp", "_contains", True) == "_int4"
        answer = _gql(server, '{ things(where: {nums: {_contains: "{4}"}}) { id nums } }')
        assert answer["data"]["things"] == [{"id": 2, "nums": [4]}]
        q = 'mutation { insert_things(objects: [{tags: "{x,y}"}]) { returning { tags } } }'
        answer = _gql(server, q)
        assert answer["data"]["insert_things"]["returning"] == [{"tags": ["x", "y"]}]
        # a custom scalar takes any literal: a list is written as an array literal too
        q = 'mutation { insert_things(objects: [{tags: ["z"]}]) { returning { tags } } }'
        answer = _gql(server, q)
        assert answer["data"]["insert_things"]["returning"] == [{"tags": ["z"]}]
    finally:
        server.stop()
