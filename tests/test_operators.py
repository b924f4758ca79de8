"""The one operator table (`svc.ir.operators`, issue 12) is what every layer uses.

- the schema's `<Scalar>_comparison_exp` types, built from a real database with a column of
  each kind (numbers, text-likes, jsonb, json, dates, uuid, arrays, PostGIS geometry and
  geography), list exactly the table's operators for that column's type, with the field
  type the operand kind says;
- every operator renders to the SQL written down here (planner node, then renderer), and
  every operator the schema offers runs on Postgres in a `where` (what fails today, in
  Postgres or in svc, is a strict xfail with its reason: `KNOWN_FAILURES`);
- permission filters accept exactly the table's names (`$op` spellings, `_ne`), and the
  permission-only column comparisons filter the rows Postgres says they should;
- no module of svc besides the table defines a collection of operator names.
"""

from __future__ import annotations

import ast
import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from graphql import GraphQLInputObjectType, GraphQLList, GraphQLNonNull, get_named_type

from svc.api.engine import Engine
from svc.config import Config
from svc.errors import SvcError
from svc.ir.model import Ir
from svc.ir.operators import CAST_OPERATOR, CASTS, OPERATORS, Operand, schema_operators
from svc.ir.permissions import FilterResolver, TableShape
from svc.metadata.model import QualifiedName
from svc.plan.nodes import Const, Param
from svc.plan.permissions import operator_exp
from svc.sql.render import Renderer
from tests.support import create_database

SVC = Path(__file__).resolve().parent.parent / "svc"
TABLE = QualifiedName(schema="public", name="things")

DDL = """
create extension if not exists postgis;
create extension if not exists citext;
create table things (
  id serial primary key, i int, big bigint, n numeric, f float8, t text, v varchar(10),
  c citext, bp char(3), nm name, flag boolean, j jsonb, js json, ts timestamptz, d date,
  u uuid, g geometry(Geometry, 4326), gg geography, arr int[]
);
insert into things (i, big, n, f, t, v, c, bp, nm, flag, j, js, ts, d, u, g, gg, arr) values
  (1, 1, 1.5, 1.5, 'ab', 'ab', 'AB', 'abc', 'ab', true, '{"a": 1}', '{"a": 1}',
   '2020-01-01Z', '2020-01-01', '00000000-0000-0000-0000-000000000001',
   'SRID=4326;POINT(0 0)', 'POINT(0 0)', '{1,2}'),
  (3, 2, 2.5, 2.5, 'cd', 'cd', 'CD', 'cde', 'cd', false, '{"b": 2}', '{"b": 2}',
   '2021-01-01Z', '2021-01-01', '00000000-0000-0000-0000-000000000002',
   'SRID=4326;POINT(1 1)', 'POINT(1 1)', '{3}'),
  (2, null, null, null, null, null, null, null, null, null, null, null, null, null, null,
   null, null, null);
"""
POINT = {"type": "Point", "coordinates": [0, 0]}
# A value of each column's type, as a GraphQL variable.
SAMPLE: dict[str, Any] = {
    "id": 1,
    "i": 1,
    "big": 1,
    "n": 1.5,
    "f": 1.5,
    "t": "a%",
    "v": "a%",
    "c": "a%",
    "bp": "abc",
    "nm": "a%",
    "flag": True,
    "j": {"a": 1},
    "js": {"a": 1},
    "ts": "2020-01-01T00:00:00Z",
    "d": "2020-01-01",
    "u": "00000000-0000-0000-0000-000000000001",
    "g": POINT,
    "gg": POINT,
    "arr": [1, 2],
}
# Column comparisons the permission test checks, with the SQL Postgres evaluates for them
# (the oracle, written independently of the table).
COLUMN_ORACLE = {
    "_ceq": "i = id",
    "_cne": "i <> id",
    "_cneq": "i <> id",
    "_cgt": "i > id",
    "_clt": "i < id",
    "_cgte": "i >= id",
    "_clte": "i <= id",
}
# Every operator's rendered SQL over column "c" of the row "_t" (value parameters typed
# text, or geometry for PostGIS), written down independently of the table.
_INFIX = {
    "_eq": "=",
    "_neq": "<>",
    "_ne": "<>",
    "_gt": ">",
    "_lt": "<",
    "_gte": ">=",
    "_lte": "<=",
    "_like": "LIKE",
    "_nlike": "NOT LIKE",
    "_ilike": "ILIKE",
    "_nilike": "NOT ILIKE",
    "_similar": "SIMILAR TO",
    "_nsimilar": "NOT SIMILAR TO",
    "_regex": "~",
    "_nregex": "!~",
    "_iregex": "~*",
    "_niregex": "!~*",
    "_contains": "@>",
    "_contained_in": "<@",
    "_has_key": "?",
}
GEO_PARAM = "ST_GeomFromGeoJSON($1::text)::geometry"
RENDERED = {
    **{op: f'_t."c" {sql} $1::text' for op, sql in _INFIX.items()},
    "_in": '_t."c" = ANY($1::text[])',
    "_nin": '_t."c" <> ALL($1::text[])',
    "_has_keys_any": '_t."c" ?| $1::text[]',
    "_has_keys_all": '_t."c" ?& $1::text[]',
    "_is_null": '_t."c" IS NULL',
    "_st_contains": f'ST_Contains(_t."c", {GEO_PARAM})',
    "_st_crosses": f'ST_Crosses(_t."c", {GEO_PARAM})',
    "_st_equals": f'ST_Equals(_t."c", {GEO_PARAM})',
    "_st_intersects": f'ST_Intersects(_t."c", {GEO_PARAM})',
    "_st_overlaps": f'ST_Overlaps(_t."c", {GEO_PARAM})',
    "_st_touches": f'ST_Touches(_t."c", {GEO_PARAM})',
    "_st_within": f'ST_Within(_t."c", {GEO_PARAM})',
    "_st_d_within": (
        f'ST_DWithin(_t."c", {GEO_PARAM}, $2::text::double precision, $3::text::boolean)'
    ),
    **{op: f'_t."c" {sql.split()[1]} _t."d"' for op, sql in COLUMN_ORACLE.items()},
}
# (column, operator) pairs the schema offers that fail in Postgres today: strict xfails,
# so a fix shows up.
_JSON = "Postgres has no equality or ordering operators for json"
_GEOGRAPHY = (
    "the reference offers only _st_intersects and _st_d_within on geography (Hasura docs, "
    "PostGIS operators); svc offers all PostGIS operators and PostGIS has no geography form"
)
_LIST = "a list parameter of {} is cast without the element conversion its scalar needs"
KNOWN_FAILURES = {
    **{("js", op): _JSON for op in ("_eq", "_neq", "_gt", "_lt", "_gte", "_lte", "_in", "_nin")},
    **{
        ("g", op): "PostGIS: operator is not unique: geometry <> geometry"
        for op in ("_neq", "_nin")
    },
    **{
        ("gg", f"_st_{op}"): _GEOGRAPHY
        for op in ("contains", "crosses", "equals", "overlaps", "touches", "within")
    },
    **{("gg", op): _LIST.format("geography (GeoJSON text)") for op in ("_in", "_nin")},
}


@dataclass
class Env:
    loop: asyncio.AbstractEventLoop
    engine: Engine
    url: str

    def graphql(self, query: str, variables: dict[str, Any], role: str = "admin") -> Any:
        body = {"query": query, "variables": variables}
        answer = self.engine.graphql(body, role, {"x-svc-role": role})
        return json.loads(self.loop.run_until_complete(answer))

    @property
    def ir(self) -> Ir:
        return self.engine.state.ir


def _metadata() -> dict[str, Any]:
    perms = [
        {"role": f"r{op[1:]}", "permission": {"columns": ["id"], "filter": {"i": {op: "id"}}}}
        for op in COLUMN_ORACLE
    ]
    perms.append({"role": "rne", "permission": {"columns": ["id"], "filter": {"i": {"$ne": 1}}}})
    table = {"table": {"schema": "public", "name": "things"}, "select_permissions": perms}
    return {"version": 2, "tables": [table]}


@pytest.fixture(scope="module")
def env(pg_url: str) -> Iterator[Env]:
    """An engine over a database with a column of each kind and the permission roles."""
    url = create_database(pg_url)
    loop = asyncio.new_event_loop()

    async def start() -> Engine:
        conn = await asyncpg.connect(url)
        try:
            await conn.execute(DDL)
        finally:
            await conn.close()
        engine = await Engine.start(Config(database_url=url, log_requests=False))
        await engine.metadata({"type": "replace_metadata", "args": _metadata()}, "admin")
        return engine

    engine = loop.run_until_complete(start())
    try:
        assert not engine.state.ir.inconsistencies, engine.state.ir.inconsistencies
        yield Env(loop, engine, url)
    finally:
        loop.run_until_complete(engine.close())
        loop.close()


# -- the schema offers exactly the table's operators ---------------------------------------


def test_comparison_types_list_the_tables_operators(env: Env) -> None:
    schema = env.engine.state.schema("admin")
    where = schema.get_type("things_bool_exp")
    assert isinstance(where, GraphQLInputObjectType)
    seen = set()
    for column in env.ir.tables[TABLE].columns:
        exp = get_named_type(where.fields[column.gql_name].type)
        assert isinstance(exp, GraphQLInputObjectType)
        expected = schema_operators(column.scalar, column.type_name, is_array=column.is_array)
        cast = [CAST_OPERATOR] if column.type_name in CASTS and not column.is_array else []
        assert list(exp.fields) == sorted([*cast, *(op.name for op in expected)]), column.name
        for op in expected:
            operand_type = exp.fields[op.name].type
            scalar = column.scalar
            if column.is_array and op.operand is not Operand.BOOLEAN:
                # an array column is a list (`[Int!]`): `_in`'s operand `[[Int!]!]`
                assert str(operand_type) == (
                    "[[Int!]!]" if op.operand is Operand.LIST else "[Int!]"
                )
                continue
            _check_operand_type(operand_type, op.operand, scalar)
        seen.update(f for f in exp.fields if f != CAST_OPERATOR)
    # Every operator the table offers to the schema is offered for some column here.
    assert seen == {name for name, op in OPERATORS.items() if not op.permission_only}


def _check_operand_type(field_type: Any, operand: Operand, scalar: str) -> None:
    named = get_named_type(field_type).name
    is_list = isinstance(field_type, GraphQLList)
    if is_list:
        assert isinstance(field_type.of_type, GraphQLNonNull)
    expected = {
        Operand.SCALAR: (scalar, False),
        Operand.LIST: (scalar, True),
        Operand.BOOLEAN: ("Boolean", False),
        Operand.TEXT: ("String", False),
        Operand.TEXT_LIST: ("String", True),
        Operand.D_WITHIN: (
            "st_d_within_geography_input" if scalar == "geography" else "st_d_within_input",
            False,
        ),
    }[operand]
    assert (named, is_list) == expected


def test_scalar_types_get_the_operators_of_their_kind(env: Env) -> None:
    by_column = {c.name: c for c in env.ir.tables[TABLE].columns}

    def names(column: str) -> set[str]:
        c = by_column[column]
        return {op.name for op in schema_operators(c.scalar, c.type_name, is_array=c.is_array)}

    generic = {"_eq", "_neq", "_gt", "_lt", "_gte", "_lte", "_in", "_nin", "_is_null"}
    assert names("i") == names("ts") == names("u") == generic
    assert names("arr") - generic == {"_contains", "_contained_in"}
    assert names("t") == names("c") == names("bp") == names("nm") == names("v")
    assert names("t") - generic == {
        "_like",
        "_nlike",
        "_ilike",
        "_nilike",
        "_similar",
        "_nsimilar",
        "_regex",
        "_nregex",
        "_iregex",
        "_niregex",
    }
    assert names("j") - generic == {
        "_contains",
        "_contained_in",
        "_has_key",
        "_has_keys_any",
        "_has_keys_all",
    }
    assert names("js") == generic
    assert names("g") == names("gg")
    assert {n for n in names("g") - generic if not n.startswith("_st_")} == set()
    assert len(names("g") - generic) == 8


# -- every operator renders, every offered operator runs -----------------------------------


@pytest.mark.parametrize("name", sorted(OPERATORS))
def test_operator_renders(name: str) -> None:
    op = OPERATORS[name]
    pg_type = "geometry" if name.startswith("_st_") else "text"
    value: Any = {
        Operand.LIST: ["a"],
        Operand.TEXT_LIST: ["a"],
        Operand.BOOLEAN: True,
        Operand.COLUMN: "d",
        Operand.D_WITHIN: {"distance": 1, "from": POINT, "use_spheroid": True},
    }.get(op.operand, "a")

    def make(v: Any, t: str, *, is_list: bool) -> Param:
        return Param(Const(v), t, is_list)

    exp = operator_exp("c", pg_type, name, value, make)
    assert Renderer().bool_exp(exp, "_t") == RENDERED[name]


def _offered() -> list[Any]:
    """(column, operator) for every column of `things` and every operator its type gets
    (computed from the table; the schema test above checks the schema agrees)."""
    cases = []
    for column, type_name, scalar in COLUMN_TYPES:
        for op in schema_operators(scalar, type_name, is_array=type_name.startswith("_")):
            reason = KNOWN_FAILURES.get((column, op.name))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            cases.append(pytest.param(column, op.name, marks=marks, id=f"{column}-{op.name}"))
    return cases


# The columns of `things`: (name, Postgres type name, GraphQL scalar) as the IR names them
# (test_offered_columns_are_the_tables checks this list against the IR).
COLUMN_TYPES = (
    ("id", "int4", "Int"),
    ("i", "int4", "Int"),
    ("big", "int8", "bigint"),
    ("n", "numeric", "numeric"),
    ("f", "float8", "float8"),
    ("t", "text", "String"),
    ("v", "varchar", "String"),
    ("c", "citext", "citext"),
    ("bp", "bpchar", "bpchar"),
    ("nm", "name", "name"),
    ("flag", "bool", "Boolean"),
    ("j", "jsonb", "jsonb"),
    ("js", "json", "json"),
    ("ts", "timestamptz", "timestamptz"),
    ("d", "date", "date"),
    ("u", "uuid", "uuid"),
    ("g", "geometry", "geometry"),
    ("gg", "geography", "geography"),
    ("arr", "_int4", "_int4"),
)


def test_offered_columns_are_the_tables(env: Env) -> None:
    columns = env.ir.tables[TABLE].columns
    assert tuple((c.name, c.type_name, c.scalar) for c in columns) == COLUMN_TYPES


def _operand(column: str, name: str) -> Any:
    kind = OPERATORS[name].operand
    sample = SAMPLE[column]
    return {
        Operand.SCALAR: sample,
        Operand.LIST: [sample],
        Operand.BOOLEAN: True,
        Operand.TEXT: "a",
        Operand.TEXT_LIST: ["a", "b"],
        Operand.D_WITHIN: {"distance": 1, "from": sample},
    }[kind]


@pytest.mark.parametrize(("column", "name"), _offered())
def test_offered_operator_runs(env: Env, column: str, name: str) -> None:
    where = env.engine.state.schema("admin").get_type("things_bool_exp")
    assert isinstance(where, GraphQLInputObjectType)
    exp = get_named_type(where.fields[column].type)
    assert isinstance(exp, GraphQLInputObjectType)
    var_type = str(exp.fields[name].type)
    query = f"query q($v: {var_type}) {{ things(where: {{{column}: {{{name}: $v}}}}) {{ id }} }}"
    answer = env.graphql(query, {"v": _operand(column, name)})
    assert "errors" not in answer, answer
    assert isinstance(answer["data"]["things"], list)


# -- permissions -----------------------------------------------------------------------------


def _resolver() -> FilterResolver:
    shape = TableShape(frozenset({"a", "b"}), {}, {})
    return FilterResolver({TABLE: shape})


@pytest.mark.parametrize("name", sorted(OPERATORS))
def test_permission_filters_accept_the_tables_operators(name: str) -> None:
    op = OPERATORS[name]
    operand = "b" if op.operand is Operand.COLUMN else 1
    for spelling in (name, "$" + name[1:]):
        resolved = _resolver().resolve(TABLE, {"a": {spelling: operand}})
        assert resolved == {"a": {op.canonical or name: operand}}


@pytest.mark.parametrize("name", ["_foo", "_st_3d_intersects", "_cfoo", "_append", "$in_"])
def test_permission_filters_refuse_other_names(name: str) -> None:
    with pytest.raises(SvcError, match="Unknown operator : "):
        _resolver().resolve(TABLE, {"a": {name: 1}})


def test_column_comparison_names_an_existing_column() -> None:
    with pytest.raises(SvcError, match='no such column exists : "zz"'):
        _resolver().resolve(TABLE, {"a": {"_ceq": "zz"}})


@pytest.mark.parametrize("name", [*COLUMN_ORACLE, "_ne"])
def test_permission_only_operators_filter_rows(env: Env, name: str) -> None:
    answer = env.graphql("query { things(order_by: {id: asc}) { id } }", {}, role=f"r{name[1:]}")
    ids = [row["id"] for row in answer["data"]["things"]]
    condition = "i <> 1" if name == "_ne" else COLUMN_ORACLE[name]

    async def oracle() -> list[int]:
        conn = await asyncpg.connect(env.url)
        try:
            rows = await conn.fetch(f"select id from things where {condition} order by id")
        finally:
            await conn.close()
        return [r["id"] for r in rows]

    expected = env.loop.run_until_complete(oracle())
    assert ids == expected
    assert 0 < len(expected) < 3  # the filter decides something


# -- no other operator-name sets --------------------------------------------------------------

# Modules allowed to hold a collection of operator names, with why (none today).
ALLOWED: dict[str, str] = {}


def _operator_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        name = node.value.replace("$", "_", 1) if node.value.startswith("$") else node.value
        if name in OPERATORS or name.startswith("_st_"):
            return name
    return None


def operator_collections(source: str) -> list[tuple[int, str]]:
    """(line, name) of each operator name that is a member of a set, tuple or list display
    or a dict key. A dict with a single operator key is a value (`{"_eq": v}`, the implicit
    equality of a permission filter), not a table of operators."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Set | ast.Tuple | ast.List):
            members = list(node.elts)
        elif isinstance(node, ast.Dict):
            members = [k for k in node.keys if k is not None]
            if len(members) < 2:
                continue
        else:
            continue
        found.extend((m.lineno, n) for m in members if (n := _operator_name(m)) is not None)
    return found


def test_no_operator_name_sets_outside_the_table() -> None:
    offenders = {}
    for path in sorted(SVC.rglob("*.py")):
        rel = path.relative_to(SVC.parent).as_posix()
        if rel == "svc/ir/operators.py" or rel in ALLOWED:
            continue
        hits = operator_collections(path.read_text())
        if hits:
            offenders[rel] = hits
    assert offenders == {}


def test_the_check_finds_operator_sets() -> None:
    sources = (
        'LIST_OPS = frozenset({"_in", "_nin", "_has_keys_any", "_has_keys_all"})',
        'x = op in ("_contains", "_contained_in")',
        'F = {"_st_contains": "ST_Contains", "_st_within": "ST_Within"}',
        'OPS = ["$eq"]',
    )
    for source in sources:
        assert operator_collections(source), source
    assert operator_collections('r = {"_eq": value}; Compare(c, "_eq", v)') == []
