"""The schema builder's shortcuts keep graphql-core's guarantees (`svc.schema.types`).

`build_schema` makes graphql-core objects without graphql-core's per-call checks, collects
the schema's types itself and marks the schema valid, so graphql-core's `validate_schema`
does not run on the hot path. Here:

- a Chinook-like database (relationships both ways, a view, jsonb, arrays, a composite
  key, a function, computed fields, roles with column subsets, filters, no aggregates,
  write permissions) and a tree of generated tables, each schema built for several roles,
  passes graphql-core's validation when rebuilt as an unvalidated `GraphQLSchema`;
- the same schemas built with graphql-core's own constructors (`CheckedTypes`) are
  identical, object by object, and `GraphQLSchema` collects the same types in the same
  order;
- every generated type name is one `svc.schema.names` knows (its clash check relies on it);
- names graphql-core would reject, and types left empty, make the builder fall back to
  graphql-core's constructors and validation, with graphql-core's errors;
- the garbage collector is left as it was found.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
from collections.abc import Iterator
from typing import Any

import asyncpg
import pytest
from graphql import (
    GraphQLArgument,
    GraphQLBoolean,
    GraphQLEnumType,
    GraphQLEnumValue,
    GraphQLError,
    GraphQLField,
    GraphQLInputField,
    GraphQLInputObjectType,
    GraphQLInt,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLSchema,
    GraphQLString,
    print_schema,
    validate_schema,
)

from svc.api.engine import Engine
from svc.config import Config
from svc.ir.agg_predicates import AGG_PREDICATES, arguments_enum
from svc.ir.model import Ir
from svc.ir.permissions import SelectPermission
from svc.schema import build_schema
from svc.schema.build import SchemaBuilder
from svc.schema.directives import DIRECTIVES
from svc.schema.names import (
    GLOBAL_TYPE_NAMES,
    TABLE_TYPE_SUFFIXES,
    plain_names,
)
from svc.schema.types import CheckedTypes, Types
from tests.support import create_database

DDL = """
create table artist (id serial primary key, name text);
create table genre (id serial primary key, name varchar(120));
create table album (
  id serial primary key, title text not null, artist_id int not null references artist(id),
  released date, meta jsonb, unique (artist_id, title)
);
create table track (
  id serial primary key, name text not null, album_id int references album(id),
  genre_id int references genre(id), milliseconds int not null, bytes bigint,
  unit_price numeric(10, 2) not null, tags text[], added timestamptz default now(),
  rating float8, data json
);
create table playlist (id serial primary key, name text);
create table playlist_track (
  playlist_id int not null references playlist(id), track_id int not null references track(id),
  primary key (playlist_id, track_id)
);
create view long_track as select * from track where milliseconds > 300000;
create function search_tracks(search text) returns setof track as $$
  select * from track where name ilike '%' || search || '%' $$ language sql stable;
create function album_title_upper(a album) returns text as $$ select upper(a.title) $$
  language sql stable;
create function album_tracks_longer(a album, min_ms int default 0) returns setof track as $$
  select * from track where album_id = a.id and milliseconds > min_ms $$ language sql stable;
"""


def _obj(name: str, column: str) -> dict[str, Any]:
    return {"name": name, "using": {"foreign_key_constraint_on": column}}


def _arr(name: str, table: str, column: str) -> dict[str, Any]:
    on = {"table": {"schema": "public", "name": table}, "column": column}
    return {"name": name, "using": {"foreign_key_constraint_on": on}}


def _select(role: str, columns: list[str], **more: Any) -> dict[str, Any]:
    return {"role": role, "permission": {"columns": columns, "filter": {}, **more}}


CHINOOK_METADATA: dict[str, Any] = {
    "version": 2,
    "tables": [
        {
            "table": {"schema": "public", "name": "artist"},
            "array_relationships": [_arr("albums", "album", "artist_id")],
            "select_permissions": [
                _select("user", ["id", "name"], allow_aggregations=True),
                _select("anonymous", ["name"]),
            ],
        },
        {
            "table": {"schema": "public", "name": "album"},
            "object_relationships": [_obj("artist", "artist_id")],
            "array_relationships": [_arr("tracks", "track", "album_id")],
            "computed_fields": [
                {
                    "name": "title_upper",
                    "definition": {"function": "album_title_upper", "table_argument": "a"},
                },
                {
                    "name": "long_tracks",
                    "definition": {"function": "album_tracks_longer", "table_argument": "a"},
                },
            ],
            "select_permissions": [
                _select(
                    "user",
                    ["id", "title", "artist_id", "meta"],
                    computed_fields=["title_upper"],
                    allow_aggregations=True,
                ),
                _select("anonymous", ["id", "title"]),
            ],
            "insert_permissions": [
                {
                    "role": "user",
                    "permission": {"columns": ["title", "artist_id", "meta"], "check": {}},
                }
            ],
            "update_permissions": [
                {"role": "user", "permission": {"columns": ["title", "meta"], "filter": {}}}
            ],
        },
        {
            "table": {"schema": "public", "name": "track"},
            "object_relationships": [_obj("album", "album_id"), _obj("genre", "genre_id")],
            "select_permissions": [
                {
                    "role": "user",
                    "permission": {
                        "columns": "*",
                        "filter": {"album": {"artist_id": {"_eq": "X-Svc-User-Id"}}},
                        "allow_aggregations": True,
                    },
                },
                _select("anonymous", ["id", "name", "milliseconds"], limit=10),
            ],
            "delete_permissions": [{"role": "user", "permission": {"filter": {}}}],
        },
        {
            "table": {"schema": "public", "name": "genre"},
            "array_relationships": [_arr("tracks", "track", "genre_id")],
            "select_permissions": [_select("user", ["id", "name"])],
        },
        {"table": {"schema": "public", "name": "playlist"}},
        {
            "table": {"schema": "public", "name": "playlist_track"},
            "object_relationships": [_obj("track", "track_id"), _obj("playlist", "playlist_id")],
            "select_permissions": [_select("user", ["playlist_id", "track_id"])],
        },
        {"table": {"schema": "public", "name": "long_track"}},
    ],
    "functions": [{"function": {"schema": "public", "name": "search_tracks"}}],
}

GENERATED = 60
ROLES = ("admin", "user", "anonymous", "nobody")


def _generated_ddl() -> str:
    parts = []
    for i in range(GENERATED):
        parent = f", parent_id integer references gen_{(i - 1) // 5:04d}(id)" if i else ""
        parts.append(
            f"create table gen_{i:04d} (id serial primary key, name text not null, "
            f"amount numeric, flag boolean, created_at timestamptz default now(){parent});"
        )
    return "\n".join(parts)


def _generated_metadata() -> dict[str, Any]:
    tables: list[dict[str, Any]] = []
    for i in range(GENERATED):
        entry: dict[str, Any] = {"table": {"schema": "public", "name": f"gen_{i:04d}"}}
        if i:
            entry["object_relationships"] = [_obj("parent", "parent_id")]
            parent = tables[(i - 1) // 5]
            children = parent.setdefault("array_relationships", [])
            children.append(_arr(f"children_{i:04d}", f"gen_{i:04d}", "parent_id"))
        if i % 3:
            columns = ["id", "name", "parent_id"] if i % 2 else ["id", "amount", "flag"]
            entry["select_permissions"] = [_select("user", columns)]
        tables.append(entry)
    return {"version": 2, "tables": tables}


async def _ir(url: str, ddl: str, metadata: dict[str, Any]) -> Ir:
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(ddl)
    finally:
        await conn.close()
    engine = await Engine.start(Config(database_url=url, log_requests=False))
    try:
        await engine.metadata({"type": "replace_metadata", "args": metadata}, "admin")
        ir: Ir = engine.state.ir
    finally:
        await engine.close()
    assert not ir.inconsistencies, ir.inconsistencies
    return ir


@pytest.fixture(scope="module")
def irs(pg_url: str) -> Iterator[dict[str, Ir]]:
    """The Chinook-like and the generated IR."""
    loop = asyncio.new_event_loop()
    try:
        yield {
            "chinook": loop.run_until_complete(_ir(create_database(pg_url), DDL, CHINOOK_METADATA)),
            "generated": loop.run_until_complete(
                _ir(create_database(pg_url), _generated_ddl(), _generated_metadata())
            ),
        }
    finally:
        loop.close()


def _unvalidated(schema: GraphQLSchema) -> GraphQLSchema:
    """The same types in a schema graphql-core has not been told is valid."""
    return GraphQLSchema(schema.query_type, schema.mutation_type, schema.subscription_type)


# -- built schemas are valid, and the same as with graphql-core's constructors ---------------
@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("which", ["chinook", "generated"])
def test_built_schemas_pass_graphql_core_validation(
    irs: dict[str, Ir], which: str, role: str
) -> None:
    ir = irs[which]
    assert plain_names(ir)  # the fast path is the one under test
    schema = build_schema(ir, role)
    assert validate_schema(_unvalidated(schema)) == []
    assert validate_schema(schema) == []


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("which", ["chinook", "generated"])
def test_fast_types_equal_graphql_core_types(irs: dict[str, Ir], which: str, role: str) -> None:
    fast = build_schema(irs[which], role)
    checked = SchemaBuilder(irs[which], role, types=CheckedTypes()).build()
    assert print_schema(fast) == print_schema(checked)
    assert list(fast.type_map) == list(checked.type_map)
    for name, named in fast.type_map.items():
        _assert_same(named, checked.type_map[name], name)


@pytest.mark.parametrize("which", ["chinook", "generated"])
def test_schema_is_what_graphql_schema_makes(irs: dict[str, Ir], which: str) -> None:
    fast = build_schema(irs[which], "user")
    core = GraphQLSchema(
        fast.query_type,
        fast.mutation_type,
        fast.subscription_type,
        directives=DIRECTIVES,  # graphql-core's and the reference's @cached
        assume_valid=True,
        extensions=fast.extensions,  # the role view it was built from (`schema_view`)
    )
    mine, theirs = vars(fast), vars(core)
    assert mine.keys() == theirs.keys()
    for key, value in theirs.items():
        if key == "type_map":  # the same objects, in the same order
            assert [(k, id(v)) for k, v in mine[key].items()] == [
                (k, id(v)) for k, v in value.items()
            ]
        else:
            assert mine[key] == value, key


def _assert_same(a: Any, b: Any, where: str) -> None:
    """`a` and `b` have the same class and the same attributes, recursively through fields,
    arguments, enum values and wrappers; named types are compared by name below the top."""
    assert type(a) is type(b), where
    if isinstance(a, GraphQLList | GraphQLNonNull):
        _assert_same(a.of_type, b.of_type, where)
        return
    mine, theirs = dict(vars(a)), dict(vars(b))
    for thunk in ("_fields", "_interfaces"):  # the thunk given, or what it resolved to
        mine.pop(thunk, None)
        theirs.pop(thunk, None)
    assert mine.keys() == theirs.keys(), where
    for key, value in mine.items():
        other = theirs[key]
        if isinstance(value, dict) and key in ("fields", "args", "values"):
            assert list(value) == list(other), f"{where}.{key}"
            for name, item in value.items():
                _assert_same(item, other[name], f"{where}.{name}")
        elif key == "type":
            _assert_same_type(value, other, where)
        else:
            assert value == other, f"{where}.{key}"


def _assert_same_type(a: Any, b: Any, where: str) -> None:
    assert str(a) == str(b), where
    assert type(a) is type(b), where


def test_types_set_what_graphql_core_constructors_set() -> None:
    t = Types()
    enum_value = t.enum_value("v", "described")
    assert vars(enum_value) == vars(GraphQLEnumValue("v", description="described"))
    assert vars(t.argument(GraphQLInt, "d", 3)) == vars(GraphQLArgument(GraphQLInt, 3, "d"))
    assert vars(t.input_field(GraphQLInt, [])) == vars(GraphQLInputField(GraphQLInt, []))
    assert vars(t.non_null(GraphQLInt)) == vars(GraphQLNonNull(GraphQLInt))
    assert vars(t.list_of(GraphQLInt)) == vars(GraphQLList(GraphQLInt))
    args = {"a": t.argument(GraphQLInt)}
    ext = {"svc": 1}
    assert vars(t.field(GraphQLInt, args, "d", ext)) == vars(
        GraphQLField(GraphQLInt, args, description="d", extensions=ext)
    )
    assert vars(t.field(GraphQLInt)) == vars(GraphQLField(GraphQLInt))
    enum = t.enum_type("E", {"v": enum_value}, "an enum")
    assert vars(enum) == vars(GraphQLEnumType("E", {"v": enum_value}, description="an enum"))
    fields = {"f": t.field(GraphQLString)}
    fast_object = t.object_type("O", lambda: fields, "an object")
    inputs = {"i": t.input_field(GraphQLBoolean)}
    fast_input = t.input_type("I", inputs, "an input")
    t.finish()
    core_object = GraphQLObjectType("O", lambda: fields, description="an object")
    core_input = GraphQLInputObjectType("I", inputs, description="an input")
    assert fast_object.interfaces == core_object.interfaces  # resolves graphql-core's too
    pairs = ((fast_object, core_object, fields), (fast_input, core_input, inputs))
    for fast, core, given in pairs:
        assert core.fields == fast.fields  # resolves graphql-core's thunk
        mine, theirs = dict(vars(fast)), dict(vars(core))
        assert mine.pop("_fields") == given  # a resolved mapping, where graphql-core kept
        theirs.pop("_fields")  # the thunk it was given
        assert mine == theirs
    assert t.valid


def test_empty_type_leaves_schema_to_be_validated() -> None:
    t = Types()
    t.input_type("Empty", lambda: {})
    t.finish()
    assert not t.valid
    t = Types()
    t.enum_type("Empty", {})
    assert not t.valid


# -- every generated type name is one svc.schema.names knows --------------------------------
@pytest.mark.parametrize("which", ["chinook", "generated"])
def test_generated_type_names_are_known(irs: dict[str, Ir], which: str) -> None:
    ir = irs[which]
    tables = {t.gql_name for t in ir.tables.values() if t.gql_name}
    functions = {f.gql_name for f in ir.functions.values()}
    functions |= {cf.function.name for t in ir.tables.values() for cf in t.computed_fields}
    for role in ROLES:
        for name, named in build_schema(ir, role).type_map.items():
            if name.startswith("__") or name in tables or name in GLOBAL_TYPE_NAMES:
                continue
            if type(named).__name__ == "GraphQLScalarType":
                continue
            if name.endswith("_comparison_exp") or name.removesuffix("_args") in functions:
                continue
            if any(name == arguments_enum(t, fn) for t in tables for fn in AGG_PREDICATES):
                continue
            assert any(
                name.startswith(f"{table}_") and name[len(table) + 1 :] in TABLE_TYPE_SUFFIXES
                for table in tables
            ), name


# -- what graphql-core would reject falls back to graphql-core ------------------------------
def _with_table(ir: Ir, which: str, **changes: Any) -> Ir:
    """`ir` with the table whose GraphQL name is `which` changed."""
    tables = dict(ir.tables)
    key = next(k for k, t in tables.items() if t.gql_name == which)
    tables[key] = dataclasses.replace(tables[key], **changes)
    return dataclasses.replace(ir, tables=tables)


def _renamed_column(ir: Ir, new_name: str) -> Ir:
    album = next(t for t in ir.tables.values() if t.gql_name == "album")
    columns = tuple(
        dataclasses.replace(c, gql_name=new_name) if c.name == "released" else c
        for c in album.columns
    )
    return _with_table(ir, "album", columns=columns)


def test_reserved_name_is_reported_by_validation(irs: dict[str, Ir]) -> None:
    ir = _renamed_column(irs["chinook"], "__released")
    assert not plain_names(ir)
    messages = [e.message for e in validate_schema(build_schema(ir, "admin"))]
    assert "Name '__released' must not begin with '__'" in messages[0]


def test_invalid_enum_value_raises_as_graphql_core_does(irs: dict[str, Ir]) -> None:
    ir = _renamed_column(irs["chinook"], "true")
    assert not plain_names(ir)
    with pytest.raises(GraphQLError, match="Enum values cannot be named: true"):
        build_schema(ir, "admin")


def test_invalid_relationship_name_raises_as_graphql_core_does(irs: dict[str, Ir]) -> None:
    ir = irs["chinook"]
    album = next(t for t in ir.tables.values() if t.gql_name == "album")
    rels = tuple(dataclasses.replace(r, name=f"{r.name}-x") for r in album.relationships)
    with pytest.raises(GraphQLError, match="Names must only contain"):
        build_schema(_with_table(ir, "album", relationships=rels), "admin")


def test_type_name_clash_is_detected(irs: dict[str, Ir]) -> None:
    ir = _with_table(irs["chinook"], "genre", gql_name="artist_bool_exp")
    assert not plain_names(ir)
    with pytest.raises(TypeError):  # an object type where an input type belongs
        build_schema(ir, "admin")
    ir = _with_table(_with_table(ir, "artist", gql_name="_a"), "artist_bool_exp", gql_name="_a_x")
    assert plain_names(ir)
    ir = _with_table(ir, "_a_x", gql_name="_a_order_by")
    assert not plain_names(ir)


def test_scalar_named_like_a_table_is_refused_as_graphql_core_does(irs: dict[str, Ir]) -> None:
    album = next(t for t in irs["chinook"].tables.values() if t.gql_name == "album")
    columns = tuple(
        dataclasses.replace(c, scalar="artist") if c.name == "released" else c
        for c in album.columns
    )
    ir = _with_table(irs["chinook"], "album", columns=columns)
    with pytest.raises(TypeError, match="contains multiple types named 'artist'"):
        build_schema(ir, "admin")


def test_role_without_columns_gets_graphql_core_validation(irs: dict[str, Ir]) -> None:
    ir = irs["chinook"]
    genre = next(t for t in ir.tables.values() if t.gql_name == "genre")
    perm: SelectPermission = dataclasses.replace(genre.select_permissions["user"], columns=())
    ir = _with_table(ir, "genre", select_permissions={"user": perm})
    assert plain_names(ir)
    schema = build_schema(ir, "user")
    # A lazy schema is marked valid (`svc.schema.lazy`): made whole, graphql-core finds
    # what it finds in the eager one.
    assert len(schema.type_map) > 0
    schema._validation_errors = None
    messages = [e.message for e in validate_schema(schema)]
    # Only the types the reference also serves without fields (Note [Selectability of
    # tables]; `svc.schema.role_schema` accepts them); no enum without values is made.
    assert messages
    assert all(m.endswith("must define one or more fields.") for m in messages)
    assert "genre_select_column" not in schema.type_map


# -- the garbage collector ------------------------------------------------------------------
def test_collector_left_as_found(irs: dict[str, Ir]) -> None:
    assert gc.isenabled()
    build_schema(irs["generated"], "admin")
    assert gc.isenabled()
    gc.disable()
    try:
        build_schema(irs["generated"], "admin")
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_fixture_covers_what_the_builder_makes(irs: dict[str, Ir]) -> None:
    schema = build_schema(irs["chinook"], "admin")
    assert {"search_tracks", "search_tracks_aggregate", "long_track"} <= set(
        schema.query_type.fields if schema.query_type else {}
    )
    album = schema.type_map["album"]
    assert isinstance(album, GraphQLObjectType)
    assert {"title_upper", "long_tracks", "meta", "tracks_aggregate"} <= set(album.fields)
    assert "album_append_input" in schema.type_map  # jsonb update operators
    assert "playlist_track_pk_columns_input" in schema.type_map
