"""Introspection walked directly (`svc.schema.introspection`) answers what graphql-core's
executor answers (graphql-core 3.2's `graphql.type.introspection` resolvers are the
reference: the engine answered introspection through them until 2026-11-29).

Compared on: the standard introspection query (graphql-core's `get_introspection_query`
with every option) and selections with aliases, merged fields, named and inline fragments,
`@skip`/`@include` under variables, `includeDeprecated`, `__type(name:)` for present and
absent names, and `__typename` inside introspection objects; over an SDL schema with an
interface, a union, enums, deprecated fields, arguments, enum values and input fields,
default values, `@oneOf` and `@specifiedBy`, and over the lazy schemas of the Chinook-like
and generated IRs of `tests/test_schema_build.py` for each role.

Answers are kept in the state's plan cache per document and variables
(`GraphQLService._introspection`): asked again they are not made again, other variables
get their own, a metadata change answers from the new schema, an answer from
`PACK_FROM` bytes is kept compressed, and an answer larger than a cache entry may be is
made each time. Listing every type walks a fresh build of the role's
schema (`State.whole_schema`), so the served one stays lazy; other introspection reads
the served one. The answers are made in a worker thread (the event loop keeps serving).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from typing import Any

import msgspec
import pytest
from graphql import (
    FieldNode,
    GraphQLSchema,
    OperationDefinitionNode,
    build_schema,
    execute_sync,
    get_introspection_query,
    parse,
    validate,
)
from graphql.execution.collect_fields import collect_fields
from graphql.type.introspection import introspection_types

from svc.api import packed_answers
from svc.api.engine import Engine
from svc.api.graphql import GraphQLService
from svc.api.packed_answers import Packed
from svc.api.state import LARGEST_ENTRY, State
from svc.config import Config
from svc.ir.model import Ir
from svc.schema import build_schema as build_role_schema
from svc.schema.introspection import RESOLVERS, introspect
from svc.schema.lazy import is_whole
from tests.test_schema_build import ROLES, irs  # noqa: F401 (the module's fixture)

SDL = '''
"""A thing with an id."""
interface Node { id: ID! }
type Book implements Node {
  id: ID!
  "The title"
  title(upper: Boolean = false, lang: Lang = EN, tags: [String!] = ["a", "b"]): String
  old: Int @deprecated(reason: "use title")
  oldArg(x: Int @deprecated(reason: "gone"), y: Filter = {title: "t", n: 3}): Int
}
type Author implements Node { id: ID! books: [Book!]! }
type Shelf { first: Book, second: Book }
union Item = Book | Author
enum Lang { EN FR @deprecated(reason: "no") "German" DE }
input Filter { title: String, n: Int = 2, gone: Int @deprecated(reason: "x") }
input Pick @oneOf { a: Int, b: String }
scalar Url @specifiedBy(url: "https://example.com/url")
type Query {
  node(id: ID!): Node
  items(filter: Filter, pick: Pick): [Item]
  url: Url
  shelf: Shelf
}
type Mutation { touch(id: ID!): Book }
'''

SELECTIONS = [
    get_introspection_query(
        descriptions=True,
        specified_by_url=True,
        directive_is_repeatable=True,
        schema_description=True,
        input_value_deprecation=True,
        experimental_directive_deprecation=True,
    ),
    get_introspection_query(descriptions=False),
    """query Q($all: Boolean!, $skip: Boolean!, $name: String!) {
      a: __schema { qt: queryType { name __typename } mutationType { name }
        subscriptionType { name } t: types { ...T } }
      b: __type(name: $name) { ...T fa: fields(includeDeprecated: $all) { name isDeprecated } }
      c: __type(name: "Nope") { name }
      d: __type(name: "Lang") { enumValues(includeDeprecated: true) { name deprecationReason } }
      e: __schema { directives { name locations isRepeatable args { name defaultValue } } }
      f: __type(name: "Filter") { inputFields(includeDeprecated: $all) { name defaultValue
        isDeprecated } plain: inputFields { type { kind name ofType { name } } } }
    }
    fragment T on __Type {
      kind name @skip(if: $skip)
      ... on __Type { possibleTypes { name } interfaces { name } }
      ...@include(if: $all) { specifiedByURL isOneOf }
      fields { n: name args(includeDeprecated: $all) { name type { ...R } defaultValue }
        type { ...R } __typename }
      fields { description }
    }
    fragment R on __Type { kind name ofType { kind name ofType { kind name ofType { name } } } }
    """,
]
VARIABLES = [
    {"all": True, "skip": False, "name": "Book"},
    {"all": False, "skip": True, "name": "Filter"},
]


def _nodes(schema: GraphQLSchema, query: str, variables: dict[str, Any]) -> Any:
    doc = parse(query)
    op = next(d for d in doc.definitions if isinstance(d, OperationDefinitionNode))
    fragments = {d.name.value: d for d in doc.definitions if d.kind == "fragment_definition"}
    assert schema.query_type is not None
    fields = collect_fields(schema, fragments, variables, schema.query_type, op.selection_set)
    return fields, fragments


def _json(data: Any) -> dict[str, bytes]:
    """graphql-core's answer as `introspect` gives it: each root's JSON, keys in order."""
    return {key: msgspec.json.encode(value) for key, value in data.items()}


def _compare(schema: GraphQLSchema, query: str, variables: dict[str, Any]) -> None:
    doc = parse(query)
    assert not validate(schema, doc)
    want = execute_sync(schema, doc, variable_values=variables)
    assert not want.errors
    fields, fragments = _nodes(schema, query, variables)
    got = introspect(schema, fields, fragments, variables)
    assert got == _json(want.data)


@pytest.mark.parametrize("variables", VARIABLES)
@pytest.mark.parametrize("query", range(len(SELECTIONS)))
def test_sdl_schema_answers_as_graphql_core(query: int, variables: dict[str, Any]) -> None:
    _compare(build_schema(SDL), SELECTIONS[query], variables)


def test_every_introspection_field_has_a_resolver() -> None:
    """Each field graphql-core's introspection types have is answered (a field added by a
    newer graphql-core fails here, not as a 500)."""
    for name, fields in RESOLVERS.items():
        assert set(fields) == set(introspection_types[name].fields), name  # type: ignore[union-attr]


def test_two_aliases_listing_types_build_one_whole_schema() -> None:
    schema = build_schema(SDL)
    asked: list[int] = []

    def whole() -> GraphQLSchema:
        asked.append(1)
        return schema

    query = "{ a: __schema { types { name } } b: __schema { types { kind } } }"
    fields, fragments = _nodes(schema, query, {})
    got = introspect(schema, fields, fragments, {}, whole)
    assert asked == [1] and set(got) == {"a", "b"}


def test_the_comparison_sees_a_difference() -> None:
    """A changed schema gives a different answer (the comparison can fail)."""
    schema = build_schema(SDL)
    fields, fragments = _nodes(schema, SELECTIONS[0], {})
    got = introspect(schema, fields, fragments, {})
    other = execute_sync(build_schema(SDL.replace("EN FR", "EN FRX")), parse(SELECTIONS[0]))
    assert got != _json(other.data)
    assert got == _json(execute_sync(build_schema(SDL), parse(SELECTIONS[0])).data)


def test_a_type_is_answered_once_per_plan() -> None:
    """A type reached twice under one selection is written once and repeated: its
    fields are read once."""
    schema = build_schema(SDL)
    reads: list[str] = []
    book = schema.type_map["Book"]
    kept = book.fields  # type: ignore[attr-defined]

    class Counting(type(book)):  # type: ignore[misc]
        @property
        def fields(self) -> Any:
            reads.append(self.name)
            return kept

    book.__class__ = Counting
    query = '{ __type(name: "Shelf") { fields { type { name fields { name } } } } }'
    fields, fragments = _nodes(schema, query, {})
    got = msgspec.json.decode(introspect(schema, fields, fragments, {})["__type"])
    assert reads == ["Book"]
    first, second = (f["type"] for f in got["fields"])
    assert (
        first
        == second
        == {
            "name": "Book",
            "fields": [{"name": n} for n in ("id", "title", "oldArg")],
        }
    )


def test_only_introspection_roots_are_answered() -> None:
    schema = build_schema(SDL)
    fields, fragments = _nodes(schema, '{ url __typename t: __type(name: "Url") { name } }', {})
    assert introspect(schema, fields, fragments, {}) == {"t": b'{"name":"Url"}'}


@pytest.mark.parametrize("which", ["chinook", "generated"])
@pytest.mark.parametrize("role", ROLES)
def test_role_schemas_answer_as_graphql_core(irs: dict[str, Ir], which: str, role: str) -> None:  # noqa: F811
    # two fresh lazy schemas: one made whole by the executor, one by the walk
    query = SELECTIONS[0]
    want = execute_sync(build_role_schema(irs[which], role), parse(query))
    assert not want.errors
    schema = build_role_schema(irs[which], role)
    fields, fragments = _nodes(schema, query, {})
    assert introspect(schema, fields, fragments, {}) == _json(want.data)
    assert isinstance(fields["__schema"][0], FieldNode)


STEPS = [
    {"type": "run_sql", "args": {"sql": "create table item (id int primary key, name text)"}},
    {"type": "track_table", "args": "item"},
]
CACHE_BYTES = 16 * 1024
FIELDS = "query($n: String!) { __type(name: $n) { fields { name } } }"


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The roles whose introspection answers were made (not taken from the cache)."""
    made: list[str] = []
    plain = GraphQLService._introspect

    def counting(
        schema: GraphQLSchema, prepared: Any, variables: dict[str, Any], *rest: Any
    ) -> Any:
        made.append(str(variables))
        return plain(schema, prepared, variables, *rest)

    monkeypatch.setattr(GraphQLService, "_introspect", staticmethod(counting))
    yield made


def _run(url: str, steps: Callable[[Engine], Any], **config: Any) -> None:
    async def go() -> None:
        eng = await Engine.start(Config(database_url=url, log_requests=False, **config))
        try:
            await eng.metadata({"type": "bulk", "args": STEPS}, "admin")
            await steps(eng)
        finally:
            await eng.close()

    asyncio.run(go())


async def _fields(eng: Engine, name: str) -> Any:
    body = await eng.graphql({"query": FIELDS, "variables": {"n": name}}, "admin", {})
    found = msgspec.json.decode(body)["data"]["__type"]
    return None if found is None else [f["name"] for f in found["fields"]]


def test_answers_are_kept_per_document_and_variables(
    new_database: Callable[[], str], counted: list[str]
) -> None:
    async def steps(eng: Engine) -> None:
        for _ in range(3):
            assert await _fields(eng, "item") == ["id", "name"]
            assert await _fields(eng, "nope") is None
        assert counted == ["{'n': 'item'}", "{'n': 'nope'}"]
        sql = "alter table item add column price int"
        await eng.metadata({"type": "run_sql", "args": {"sql": sql}}, "admin")
        assert await _fields(eng, "item") == ["id", "name", "price"]
        assert await _fields(eng, "item") == ["id", "name", "price"]
        assert len(counted) == 3

    _run(new_database(), steps)


def test_an_answer_too_large_for_the_cache_is_made_each_time(
    new_database: Callable[[], str], counted: list[str]
) -> None:
    async def steps(eng: Engine) -> None:
        query = {"query": "{ __schema { types { name fields { name } inputFields { name } } } }"}
        answers = [await eng.graphql(query, "admin", {}) for _ in range(2)]
        assert answers[0] == answers[1] and b'"item_bool_exp"' in answers[0]
        assert len(answers[0]) > CACHE_BYTES // LARGEST_ENTRY  # more than an entry may hold
        assert len(counted) == 2

    _run(new_database(), steps, plan_cache_bytes=CACHE_BYTES)


def test_a_large_answer_is_kept_compressed(
    new_database: Callable[[], str], counted: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """From `PACK_FROM` bytes an answer is kept zlib-compressed (the reference keeps an
    introspection answer until the schema changes: "The response of an introspection
    query is cached till the schema changes", a maintainer on hasura/graphql-engine#3161;
    55 MB at 10,000 tables would not fit a cache entry as it is) and given back equal; a
    metadata change drops it."""
    monkeypatch.setattr(packed_answers, "PACK_FROM", 1024)
    query = {"query": "{ __schema { types { name fields { name } inputFields { name } } } }"}

    async def steps(eng: Engine) -> None:
        answers = [await eng.graphql(query, "admin", {}) for _ in range(3)]
        assert answers[0] == answers[1] == answers[2] and b'"item_bool_exp"' in answers[0]
        assert len(counted) == 1
        kept = [v for v in eng.state.plans._entries.values() if isinstance(v, Packed)]
        assert len(kept) == 1 and kept[0].size < len(answers[0]) // 4
        sql = "alter table item add column price int"
        await eng.metadata({"type": "run_sql", "args": {"sql": sql}}, "admin")
        again = await eng.graphql(query, "admin", {})
        assert b'"price"' in again and len(counted) == 2

    _run(new_database(), steps)


def test_packing_gives_the_answers_back() -> None:
    small = {"a": b'{"x":1}'}
    assert packed_answers.kept_form(small) is small  # below PACK_FROM: kept as is
    large = {"a": b'{"name":"t"},' * 200_000, "b": b"null"}
    kept = packed_answers.kept_form(large)
    assert isinstance(kept, Packed) and kept.size == packed_answers.kept_bytes(kept)
    assert kept.size < packed_answers.PACK_FROM // 10
    assert packed_answers.unpack(kept) == large


def test_listing_every_type_leaves_the_served_schema_lazy(
    new_database: Callable[[], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    fresh: list[str] = []
    plain = State.whole_schema

    def counting(state: State, role: str) -> GraphQLSchema:
        fresh.append(role)
        return plain(state, role)

    monkeypatch.setattr(State, "whole_schema", counting)

    async def steps(eng: Engine) -> None:
        state = await eng.current_state()
        for query in ('{ __type(name: "item") { name } }', "{ __schema { queryType { name } } }"):
            assert b'"name"' in await eng.graphql({"query": query}, "admin", {})
        assert fresh == []
        query = "{ __schema { types { name kind fields { name } } } }"
        body = await eng.graphql({"query": query}, "admin", {})
        assert fresh == ["admin"]
        served = state.schema("admin")
        assert not is_whole(served)
        want = execute_sync(served, parse(query))  # makes the served schema whole
        assert is_whole(served)
        assert body == b'{"data":' + msgspec.json.encode(want.data) + b"}"

    _run(new_database(), steps)


def test_answers_are_made_off_the_loop(
    new_database: Callable[[], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: list[threading.Thread] = []
    plain = GraphQLService._introspect_role.__func__  # type: ignore[attr-defined]

    def recording(cls: Any, *args: Any) -> Any:
        threads.append(threading.current_thread())
        return plain(cls, *args)

    monkeypatch.setattr(GraphQLService, "_introspect_role", classmethod(recording))

    async def steps(eng: Engine) -> None:
        query = "{ __schema { types { name fields { name args { name } } } } }"
        first = await eng.graphql({"query": query}, "admin", {})
        assert threads and threads[0] is not threading.main_thread()
        again = await eng.graphql({"query": query + " "}, "admin", {})  # not cached
        assert again == first and len(threads) == 2

    _run(new_database(), steps)


def test_concurrent_requests_make_the_answer_once(
    new_database: Callable[[], str], counted: list[str]
) -> None:
    """Introspection answers are made one at a time per worker; the same request waiting
    behind another takes its answer from the cache."""

    async def steps(eng: Engine) -> None:
        query = {"query": "{ __schema { types { name } } }"}
        answers = await asyncio.gather(*(eng.graphql(query, "admin", {}) for _ in range(3)))
        assert len(set(answers)) == 1 and b'"item"' in answers[0]
        assert len(counted) == 1

    _run(new_database(), steps)
