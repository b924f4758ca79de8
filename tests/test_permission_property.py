"""Select permissions hold under generated queries (issue 4, acceptance).

A fixture schema (`author`, `article` with a `text[]` column, `comment`, with object and
array relationships both ways) carries select permissions for the roles `user` (rows
through the session variable `X-Svc-User-Id`, a relationship filter, aggregates allowed,
the array column: `_eq`, `_contains`, `_contained_in`, …) and `anonymous` (published rows
only, fewer columns, no aggregates, a row limit, no access to `comment`); `editor` and
the inherited role `member` (= user + editor, cells redacted) are described below. Hypothesis writes
queries over exactly what each role can see (root lists, `_by_pk`, `_aggregate`, nested
object and array relationships and their aggregates, `where` with `_and`/`_or`/`_not`,
comparison operators and relationship filters, `order_by`, `limit`, `offset`,
`distinct_on`), runs them in-process through `Engine.graphql`, and checks every answer
against an oracle that never looks at svc's SQL:

- which rows a role may see comes from hand-written SQL run directly on Postgres
  (`permitted`), per table and session;
- `where` is evaluated in Python over a copy of the data, with SQL's three-valued logic
  and relationship filters restricted to permitted rows (as svc and the reference do);
- so every list (root, nested, aggregate `nodes`) must hold exactly the expected rows when
  it has no window, and otherwise only expected rows and exactly as many as the window
  allows; object relationships are the permitted target or null; every column value is the
  row's own; every object has exactly the requested keys; aggregates equal the values
  computed over the permitted rows.

A corpus of SQL-injection strings then goes through session variables (in-process and
as real HTTP headers), `where` arguments (literals and variables) and `_by_pk` keys; each
answer is an error or exactly what Postgres itself computes for the same value, and the
data is unchanged afterwards.
"""

from __future__ import annotations

import asyncio
import functools
import json
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import asyncpg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from svc.api.engine import Engine
from svc.config import Config
from svc.ir.operators import OPERATORS
from tests.support import ServerProcess, create_database

# -- the fixture schema and its data ------------------------------------------------------

DDL = """
create table author (
  id int primary key, name text not null, secret_note text, karma int
);
create table article (
  id int primary key, title text not null, body text,
  author_id int not null references author(id), is_published boolean not null,
  rating int, internal_score int, tags text[]
);
create table comment (
  id int primary key, article_id int not null references article(id),
  author_id int references author(id), text text, likes int not null, ip_address text
);
create index on article (author_id);
create index on comment (article_id);
create index on comment (author_id);
"""

# Text values chosen to be awkward in SQL and in LIKE patterns. Non-ASCII letters appear in
# one case only, so `ILIKE` answers the same whatever the cluster's locale.
NAMES = [
    "Ada",
    "Bob",
    "O'Brien",
    "100% Pure",
    "under_score",
    "back\\slash",
    "Zoë",
    "日本",
    "semi;colon",
    'quote"d',
    "dollar$$sign",
    "--dash",
    "{1,2}",
    "null",
    "",
]
TITLES = [
    "Hello",
    "hello world",
    "It's 50% off",
    "a_b",
    "path\\to",
    "résumé",
    "'; drop table article; --",
    "$$x$$",
    "ÄÖÜ? no: aou",
    "tab\tseparated",
]
TEXTS = ["nice", "Nice!", "meh", "100%", "_", "o'k", "x\\y", "✓ ok", "", "spam"]


def _seed() -> dict[str, list[dict[str, Any]]]:
    """Deterministic rows. Authors 21-26 have only unpublished articles, 27-30 none;
    unpublished ratings are 1000 + id so a leaked row shows in any aggregate."""
    rng = random.Random(20240417)
    authors = [
        {
            "id": i,
            "name": NAMES[i % len(NAMES)] if i <= len(NAMES) else f"author {i}",
            "secret_note": None if i % 5 == 0 else f"secret {i}",
            "karma": None if i % 7 == 0 else rng.randint(0, 25),
        }
        for i in range(1, 31)
    ]
    articles = []
    tag_rng = random.Random(7)  # its own stream: the other columns keep their values
    for i in range(1, 151):
        published = rng.random() < 0.6
        articles.append(
            {
                "id": i,
                "title": f"{rng.choice(TITLES)} {i}" if i % 4 else rng.choice(TITLES),
                "body": None if i % 6 == 0 else f"body of {i}",
                "author_id": rng.randint(1, 20) if published else rng.randint(1, 26),
                "is_published": published,
                "rating": (None if i % 11 == 0 else rng.randint(0, 10)) if published else 1000 + i,
                "internal_score": rng.randint(0, 100),
                "tags": None
                if i % 9 == 0
                else tag_rng.sample(["a", "b", "c", "x"], tag_rng.randint(0, 3)),
            }
        )
    comments = [
        {
            "id": i,
            "article_id": rng.randint(1, 150),
            "author_id": None if i % 19 == 0 else rng.randint(1, 30),
            "text": None if i % 13 == 0 else rng.choice(TEXTS),
            "likes": rng.randint(0, 9),
            "ip_address": f"10.0.{i % 256}.{i % 7}",
        }
        for i in range(1, 301)
    ]
    return {"author": authors, "article": articles, "comment": comments}


DATA = _seed()
ROWS: dict[str, dict[int, dict[str, Any]]] = {
    t: {r["id"]: r for r in rows} for t, rows in DATA.items()
}


# -- the model the generator and the oracle share ---------------------------------------


@dataclass(frozen=True)
class Rel:
    kind: str  # "object" | "array"
    target: str
    near: str  # column of the table the relationship is on
    far: str  # column of the target


COLUMN_KINDS: dict[str, dict[str, str]] = {
    "author": {"id": "int", "name": "text", "secret_note": "text", "karma": "int"},
    "article": {
        "id": "int",
        "title": "text",
        "body": "text",
        "author_id": "int",
        "is_published": "bool",
        "rating": "int",
        "internal_score": "int",
        "tags": "array",  # text[]: a GraphQL list (`[String!]`)
    },
    "comment": {
        "id": "int",
        "article_id": "int",
        "author_id": "int",
        "text": "text",
        "likes": "int",
        "ip_address": "text",
    },
}
RELS: dict[str, dict[str, Rel]] = {
    "author": {
        "articles": Rel("array", "article", "id", "author_id"),
        "comments": Rel("array", "comment", "id", "author_id"),
    },
    "article": {
        "author": Rel("object", "author", "author_id", "id"),
        "comments": Rel("array", "comment", "id", "article_id"),
    },
    "comment": {
        "article": Rel("object", "article", "article_id", "id"),
        "author": Rel("object", "author", "author_id", "id"),
    },
}
# Children of each row through each array relationship: (table, rel) -> near value -> ids.
CHILDREN: dict[tuple[str, str], dict[Any, list[int]]] = {}
for _table, _rels in RELS.items():
    for _name, _rel in _rels.items():
        _index: dict[Any, list[int]] = {}
        for _row in DATA[_rel.target]:
            _index.setdefault(_row[_rel.far], []).append(_row["id"])
        CHILDREN[(_table, _name)] = _index


def related(table: str, rel_name: str, row: dict[str, Any]) -> list[int]:
    """Ids of the target rows `row` reaches through a relationship (before permissions)."""
    rel = RELS[table][rel_name]
    key = row[rel.near]
    if key is None:
        return []
    if rel.kind == "object":
        return [key] if key in ROWS[rel.target] else []
    return CHILDREN[(table, rel_name)].get(key, [])


@dataclass(frozen=True)
class Perm:
    columns: tuple[str, ...]
    filter: dict[str, Any]
    aggregations: bool = False
    limit: int | None = None
    # The same rule in plain SQL over the alias `t` (the oracle); parameters from
    # `_perm_args`: the user id, or the author name and the allowed ids.
    sql: str = "true"


PERMS: dict[str, dict[str, Perm]] = {
    "user": {
        "author": Perm(
            ("id", "name", "karma"),
            {"_or": [{"id": {"_eq": "X-Svc-User-Id"}}, {"articles": {"is_published": True}}]},
            aggregations=True,
            sql="t.id = $1::text::int or exists "
            "(select 1 from article a where a.author_id = t.id and a.is_published)",
        ),
        "article": Perm(
            ("id", "title", "body", "author_id", "is_published", "rating", "tags"),
            # `{"is_published": True}`: Hasura's implicit `_eq`.
            {"_or": [{"author_id": {"_eq": "X-Svc-User-Id"}}, {"is_published": True}]},
            aggregations=True,
            sql="t.author_id = $1::text::int or t.is_published",
        ),
        "comment": Perm(
            ("id", "article_id", "author_id", "text", "likes"),
            {
                "_or": [
                    {"author_id": {"_eq": "X-Svc-User-Id"}},
                    {"article": {"is_published": {"_eq": True}}},
                ]
            },
            aggregations=True,
            sql="t.author_id = $1::text::int or exists "
            "(select 1 from article a where a.id = t.article_id and a.is_published)",
        ),
    },
    "anonymous": {
        "author": Perm(
            ("id", "name"),
            {"articles": {"is_published": {"_eq": True}}},
            sql="exists (select 1 from article a where a.author_id = t.id and a.is_published)",
        ),
        "article": Perm(
            ("id", "title", "author_id", "rating"),
            {"is_published": {"_eq": True}},
            limit=40,
            sql="t.is_published",
        ),
    },
    # Aggregates over a filtered, limited table: what they compute must not depend on the
    # rows the filter hides (unpublished ratings are 1000 + id), whatever the limit.
    "capped": {
        "author": Perm(("id", "name"), {}, aggregations=True),
        "article": Perm(
            ("id", "author_id", "rating"),
            {"is_published": {"_eq": True}},
            aggregations=True,
            limit=3,
            sql="t.is_published",
        ),
    },
    # A parent of `member` (below) that sees rows `user` does not: articles by their
    # internal score (unpublished ones of other authors too), authors by karma.
    "editor": {
        "author": Perm(
            ("id", "name", "secret_note"),
            {"karma": {"_gte": 12}},
            aggregations=True,
            sql="t.karma >= 12",
        ),
        "article": Perm(
            ("id", "title", "author_id", "internal_score"),
            {"internal_score": {"_gte": 50}},
            aggregations=True,
            sql="t.internal_score >= 50",
        ),
    },
    # Text and list session variables (the injection corpus goes through both).
    "named": {
        "author": Perm(
            ("id", "name"),
            {
                "_or": [
                    {"name": {"_eq": "X-Svc-Author-Name"}},
                    {"id": {"_in": "X-Svc-Allowed-Ids"}},
                ]
            },
            sql="t.name = $1::text or t.id = any($2::text::int[])",
        ),
    },
}
# Inherited roles (Hasura's `inherited_roles`): `member` is made of `user` and `editor`.
# The oracle gives it the combination `svc.ir.inherited` documents (rows either parent
# sees, columns either grants, the largest limit, aggregations if either allows them) and
# reads a column only one parent grants as null in the rows that parent does not see —
# wherever the request reads it (`CASES`, `role_rows`; the reference's column redaction).
INHERITED: dict[str, tuple[str, ...]] = {"member": ("user", "editor")}


def _combined(parents: tuple[str, ...]) -> dict[str, Perm]:
    out: dict[str, Perm] = {}
    for table, kinds in COLUMN_KINDS.items():
        perms = [PERMS[p][table] for p in parents if table in PERMS[p]]
        if not perms:
            continue
        limits = [p.limit for p in perms if p.limit is not None]
        out[table] = Perm(
            tuple(c for c in kinds if any(c in p.columns for p in perms)),
            {"_or": [p.filter for p in perms]},
            aggregations=any(p.aggregations for p in perms),
            limit=max(limits) if limits else None,
            sql=" or ".join(f"({p.sql})" for p in perms),
        )
    return out


# inherited role -> table -> column shown in some rows only -> the parents granting it
CASES: dict[str, dict[str, dict[str, tuple[str, ...]]]] = {}
for _role, _parents in INHERITED.items():
    PERMS[_role] = _combined(_parents)
    for _table, _perm in PERMS[_role].items():
        _with = [p for p in _parents if _table in PERMS[p]]
        for _column in _perm.columns:
            _granting = tuple(p for p in _with if _column in PERMS[p][_table].columns)
            if len(_granting) < len(_with):
                CASES.setdefault(_role, {}).setdefault(_table, {})[_column] = _granting

# Session user ids hypothesis picks from: authors with published articles, with only
# unpublished ones (21-26), with none (27-30), and ids that match no author.
USER_IDS = ["1", "2", "3", "7", "13", "20", "21", "24", "26", "27", "30", "999", "-5", "0"]


def visible_columns(role: str, table: str) -> list[str]:
    return list(PERMS[role][table].columns)


def visible_rels(role: str, table: str) -> dict[str, Rel]:
    return {n: r for n, r in RELS[table].items() if r.target in PERMS[role]}


def aggregations(role: str, table: str) -> bool:
    return PERMS[role][table].aggregations


# -- the engine under test ----------------------------------------------------------------


@dataclass
class Env:
    loop: asyncio.AbstractEventLoop
    engine: Engine
    url: str
    conn: Any  # asyncpg.Connection (admin, for the oracle)
    # (role, session key) -> table -> permitted ids
    permitted_cache: dict[tuple[str, tuple[str, ...]], dict[str, frozenset[int]]] = field(
        default_factory=dict
    )
    fingerprint: dict[str, str] = field(default_factory=dict)
    metadata_version: int = 0

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    def graphql(
        self,
        query: str,
        variables: dict[str, Any] | None = None,
        *,
        role: str = "admin",
        session: dict[str, str] | None = None,
    ) -> Any:
        body: dict[str, Any] = {"query": query}
        if variables:
            body["variables"] = variables
        sess = {"x-svc-role": role, **(session or {})}
        return json.loads(self.run(self.engine.graphql(body, role, sess)))

    def permitted(self, role: str, session: dict[str, str]) -> dict[str, frozenset[int]]:
        """Ids of each table the role may see with `session`, by plain SQL on Postgres."""
        args = _perm_args(role, session)
        key = (role, tuple(args))
        found = self.permitted_cache.get(key)
        if found is None:
            found = {}
            for table, perm in PERMS[role].items():
                sql = f"select t.id from {table} t where {perm.sql}"
                n = len(set(re.findall(r"\$(\d)", sql)))
                rows = self.run(self.conn.fetch(sql, *args[:n]))
                found[table] = frozenset(r["id"] for r in rows)
            self.permitted_cache[key] = found
        return found

    def database_fingerprint(self) -> dict[str, str]:
        """Row count and an md5 of every row of every fixture table."""
        out = {}
        for table in COLUMN_KINDS:
            row = self.run(
                self.conn.fetchrow(
                    f"select count(*) as n, md5(coalesce(string_agg(t::text, '|' order by "
                    f"t.id), '')) as h from {table} t"
                )
            )
            out[table] = f"{row['n']}:{row['h']}"
        return out


def _perm_args(role: str, session: dict[str, str]) -> list[str | None]:
    if role == "named":
        return [session.get("x-svc-author-name"), session.get("x-svc-allowed-ids")]
    if role in ("user", "member"):
        return [session.get("x-svc-user-id")]
    return []


def _metadata_steps() -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = [
        {"type": "track_table", "args": {"schema": "public", "name": t}} for t in COLUMN_KINDS
    ]
    for table, rels in RELS.items():
        for name, rel in rels.items():
            using: Any = (
                {"foreign_key_constraint_on": rel.near}
                if rel.kind == "object"
                else {"foreign_key_constraint_on": {"table": rel.target, "column": rel.far}}
            )
            steps.append(
                {
                    "type": f"create_{rel.kind}_relationship",
                    "args": {"table": table, "name": name, "using": using},
                }
            )
    for role, tables in PERMS.items():
        if role in INHERITED:
            continue
        for table, perm in tables.items():
            permission: dict[str, Any] = {
                "columns": list(perm.columns),
                "filter": perm.filter,
                "allow_aggregations": perm.aggregations,
            }
            if perm.limit is not None:
                permission["limit"] = perm.limit
            steps.append(
                {
                    "type": "create_select_permission",
                    "args": {"table": table, "role": role, "permission": permission},
                }
            )
    for role, parents in INHERITED.items():
        steps.append(
            {"type": "add_inherited_role", "args": {"role_name": role, "role_set": list(parents)}}
        )
    return steps


@pytest.fixture(scope="module")
def env(pg_url: str) -> Iterator[Env]:
    url = create_database(pg_url, prefix="perm")
    loop = asyncio.new_event_loop()

    async def setup() -> tuple[Engine, Any]:
        conn = await asyncpg.connect(url)
        await conn.execute(DDL)
        for table, rows in DATA.items():
            cols = list(COLUMN_KINDS[table])
            await conn.copy_records_to_table(
                table, records=[tuple(r[c] for c in cols) for r in rows], columns=cols
            )
        config = Config(
            database_url=url, pool_size=4, metadata_poll_seconds=3600.0, log_requests=False
        )
        engine = await Engine.start(config)
        await engine.metadata({"type": "bulk", "args": _metadata_steps()}, "admin")
        return engine, conn

    engine, conn = loop.run_until_complete(setup())
    e = Env(loop, engine, url, conn)
    e.fingerprint = e.database_fingerprint()
    e.metadata_version = engine.state.version
    for role in PERMS:  # build each role's schema now, not inside the first example
        assert e.graphql("{ __typename }", role=role) == {"data": {"__typename": "query_root"}}
    try:
        yield e
    finally:
        loop.run_until_complete(engine.close())
        loop.run_until_complete(conn.close())
        loop.close()


@pytest.fixture(scope="module")
def http(env: Env) -> Iterator[ServerProcess]:
    """A real `svc serve` on the same database, for session variables as HTTP headers."""
    # The default interface (ASGI): header values that are not ASCII reach the session.
    srv = ServerProcess(env.url)
    try:
        yield srv
    finally:
        srv.stop()


# -- generated queries ----------------------------------------------------------------------
#
# A query is a tree of tuples, rendered to GraphQL text by `Renderer` and checked by
# `Checker`:
#   root:    ("list", table, args, sel) | ("agg", table, args, aggsel) | ("pk", table, id, sel)
#   sel:     tuple of ("col", name) | ("obj", rel, sel) | ("arr", rel, args, sel)
#            | ("arragg", rel, args, aggsel); always starts with ("col", "id")
#   aggsel:  tuple of ("count", column | None, distinct) | ("op", op, columns) | ("nodes", sel)
#   args:    {"where", "order_by", "limit", "offset", "distinct_on"} (absent = not given)
#   where:   ("and", items) | ("or", items) | ("not", w) | ("rel", rel, w) | ("empty",)
#            | ("col", column, ((op, value, as_variable), ...))
#   order:   ("col", column, direction) | ("obj", rel, order) | ("agg", rel, op, column, dir)

DIRECTIONS = [
    "asc",
    "desc",
    "asc_nulls_first",
    "asc_nulls_last",
    "desc_nulls_first",
    "desc_nulls_last",
]
OPS = {
    "int": ["_eq", "_neq", "_gt", "_lt", "_gte", "_lte", "_in", "_nin", "_is_null"],
    "text": ["_eq", "_neq", "_in", "_nin", "_is_null", "_like", "_nlike", "_ilike", "_nilike"],
    "bool": ["_eq", "_neq", "_is_null", "_in"],
    "array": ["_eq", "_neq", "_contains", "_contained_in", "_is_null"],
}
GQL_SCALAR = {"int": "Int", "text": "String", "bool": "Boolean", "array": "[String!]"}
MAX_DEPTH = 3  # relationship levels below the root

# Strategies are built once per argument tuple (hypothesis validates each new strategy
# object, which otherwise dominates the run time).
BOOLS = st.booleans()


@functools.cache
def pick(options: tuple[Any, ...]) -> st.SearchStrategy[Any]:
    return st.sampled_from(options)


@functools.cache
def some(options: tuple[Any, ...], min_size: int, max_size: int) -> st.SearchStrategy[list[Any]]:
    return st.lists(st.sampled_from(options), min_size=min_size, max_size=max_size, unique=True)


@functools.cache
def ints(lo: int, hi: int) -> st.SearchStrategy[int]:
    return st.integers(lo, hi)


def chance(draw: st.DrawFn, one_in: int) -> bool:
    """True once in `one_in` draws (shrinks towards false)."""
    return draw(ints(0, one_in - 1)) == one_in - 1


def _kind(table: str, column: str) -> str:
    return COLUMN_KINDS[table][column]


@functools.cache
def _values(table: str, column: str) -> st.SearchStrategy[Any]:
    kind = _kind(table, column)
    if kind == "array":
        lists = {tuple(r[column]) for r in DATA[table] if r[column] is not None}
        return pick(tuple(sorted([*lists, (), ("zz",), ("a", "zz")]))).map(list)
    present = tuple(sorted({r[column] for r in DATA[table] if r[column] is not None}, key=repr))
    if kind == "bool":
        return BOOLS
    if kind == "int":
        lo, hi = min(present), max(present)
        return st.one_of(pick(present), ints(lo - 2, hi + 2))
    return pick((*present, "nope", "Hello 1", "ada"))


def _pattern_from(value: str, cut: int, shape: int) -> str:
    part = value[cut % (len(value) + 1) :][:3]
    pattern = ["%" + part + "%", part + "%", "%" + part, "_" + part + "%"][shape % 4]
    if (len(pattern) - len(pattern.rstrip("\\"))) % 2:
        pattern += "%"  # a trailing escape character is an error, not a pattern
    return pattern


@functools.cache
def _patterns(table: str, column: str) -> st.SearchStrategy[str]:
    present = tuple(sorted({r[column] for r in DATA[table] if r[column]}))
    return st.one_of(
        pick(("%", "_", "%o%", "%\\%%", "%\\_%", "%'%", "h%", "%1", "__", "%ë%")),
        st.builds(_pattern_from, pick(present), ints(0, 20), ints(0, 3)),
    )


@functools.cache
@st.composite
def _operand(draw: st.DrawFn, table: str, column: str, op: str) -> Any:
    if op == "_is_null":
        return draw(BOOLS)
    if op in ("_in", "_nin"):
        return draw(st.lists(_values(table, column), max_size=4))
    if op in ("_like", "_nlike", "_ilike", "_nilike"):
        return draw(_patterns(table, column))
    return draw(_values(table, column))


@functools.cache
@st.composite
def where_exp(draw: st.DrawFn, role: str, table: str, depth: int = 0) -> Any:
    rels = visible_rels(role, table)
    kinds = ["col", "col", "col", "empty"]
    if depth < 3:
        kinds += ["and", "or", "not"]
        if rels:
            kinds += ["rel", "rel"]
    kind = draw(pick(tuple(kinds)))
    if kind == "empty":
        return ("empty",)
    if kind in ("and", "or"):
        return (kind, tuple(draw(st.lists(where_exp(role, table, depth + 1), max_size=3))))
    if kind == "not":
        return ("not", draw(where_exp(role, table, depth + 1)))
    if kind == "rel":
        name = draw(pick(tuple(sorted(rels))))
        return ("rel", name, draw(where_exp(role, rels[name].target, depth + 1)))
    column = draw(pick(tuple(visible_columns(role, table))))
    ops = draw(some(tuple(OPS[_kind(table, column)]), 1, 2))
    return (
        "col",
        column,
        tuple((op, draw(_operand(table, column, op)), draw(BOOLS)) for op in ops),
    )


def _orderable(role: str, table: str) -> tuple[str, ...]:
    """The role's columns the generator orders and distincts by (not arrays: the oracle
    checks order on numbers and booleans only)."""
    return tuple(c for c in visible_columns(role, table) if _kind(table, c) != "array")


def _numeric(role: str, table: str) -> list[str]:
    return [c for c in visible_columns(role, table) if _kind(table, c) == "int"]


@functools.cache
@st.composite
def order_item(draw: st.DrawFn, role: str, table: str, depth: int = 0) -> Any:
    rels = visible_rels(role, table)
    objects = tuple(sorted(n for n, r in rels.items() if r.kind == "object"))
    arrays = tuple(sorted(n for n, r in rels.items() if r.kind == "array"))
    kinds = (
        ["col", "col"] + (["obj"] if objects and depth < 2 else []) + (["agg"] if arrays else [])
    )
    kind = draw(pick(tuple(kinds)))
    direction = draw(pick(tuple(DIRECTIONS)))
    if kind == "col":
        return ("col", draw(pick(_orderable(role, table))), direction)
    if kind == "obj":
        name = draw(pick(objects))
        return ("obj", name, draw(order_item(role, rels[name].target, depth + 1)))
    name = draw(pick(arrays))
    target = rels[name].target
    op = draw(pick(("count", "max", "min", "sum")))
    columns = tuple(_numeric(role, target))
    if op == "count" or not columns:
        return ("agg", name, "count", None, direction)
    return ("agg", name, op, draw(pick(columns)), direction)


@functools.cache
@st.composite
def select_args(draw: st.DrawFn, role: str, table: str) -> dict[str, Any]:
    args: dict[str, Any] = {}
    if not chance(draw, 4):
        args["where"] = draw(where_exp(role, table))
    columns = _orderable(role, table)
    order: list[Any] = []
    if chance(draw, 5):
        distinct = draw(some(columns, 1, 2))
        args["distinct_on"] = distinct
        if draw(BOOLS):
            lead = draw(st.permutations(distinct))
            order = [("col", c, draw(pick(tuple(DIRECTIONS)))) for c in lead]
    if ("distinct_on" not in args or order) and draw(BOOLS):
        order += draw(st.lists(order_item(role, table), min_size=1, max_size=2))
    if order:
        args["order_by"] = order
    if chance(draw, 3):
        args["limit"] = (draw(ints(0, 12)), draw(BOOLS))
    if chance(draw, 4):
        args["offset"] = (draw(ints(0, 8)), draw(BOOLS))
    return args


@functools.cache
def _relationship_choices(role: str, table: str) -> tuple[Any, ...]:
    out: list[Any] = []
    for name, rel in sorted(visible_rels(role, table).items()):
        if rel.kind == "object":
            out.append(("obj", name))
        else:
            out.append(("arr", name))
            if aggregations(role, rel.target):
                out.append(("arragg", name))
    return tuple(out)


@functools.cache
@st.composite
def selection(draw: st.DrawFn, role: str, table: str, depth: int = 0) -> tuple[Any, ...]:
    columns = tuple(c for c in visible_columns(role, table) if c != "id")
    fields: list[Any] = [("col", "id")] + [("col", c) for c in draw(some(columns, 0, 3))]
    choices = _relationship_choices(role, table)
    # Up to two relationships at the root, one further down, none at the deepest level.
    wanted = min(
        (draw(ints(0, 4)) + 1) // 2 if depth == 0 else min(draw(ints(0, 2)), 1), len(choices)
    )
    if depth >= MAX_DEPTH or not wanted:
        return tuple(fields)
    for item in draw(some(choices, wanted, wanted)):
        target = RELS[table][item[1]].target
        if item[0] == "obj":
            fields.append(("obj", item[1], draw(selection(role, target, depth + 1))))
        elif item[0] == "arr":
            args = draw(select_args(role, target))
            fields.append(("arr", item[1], args, draw(selection(role, target, depth + 1))))
        else:
            args = draw(select_args(role, target))
            fields.append(("arragg", item[1], args, draw(agg_selection(role, target, depth + 1))))
    return tuple(fields)


@functools.cache
@st.composite
def agg_selection(draw: st.DrawFn, role: str, table: str, depth: int = 0) -> tuple[Any, ...]:
    columns = tuple(visible_columns(role, table))
    numeric = tuple(_numeric(role, table))
    comparable = tuple(c for c in columns if _kind(table, c) not in ("bool", "array"))
    items: list[Any] = []
    if not chance(draw, 4):
        column = draw(st.one_of(st.none(), pick(columns)))
        items.append(("count", column, draw(st.one_of(st.none(), BOOLS))))
    for op in ("sum", "avg", "max", "min"):
        options = numeric if op in ("sum", "avg") else comparable
        if options and chance(draw, 3):
            items.append(("op", op, tuple(draw(some(options, 1, 2)))))
    if not items or draw(BOOLS):
        items.append(("nodes", draw(selection(role, table, min(depth + 1, MAX_DEPTH)))))
    return tuple(items)


@functools.cache
@st.composite
def root_field(draw: st.DrawFn, role: str) -> Any:
    table = draw(pick(tuple(sorted(PERMS[role]))))
    kinds = ("list", "list", "pk") + (("agg", "agg") if aggregations(role, table) else ())
    kind = draw(pick(kinds))
    if kind == "pk":
        key = draw(ints(0, len(DATA[table]) + 1))
        return ("pk", table, key, draw(selection(role, table)))
    args = draw(select_args(role, table))
    if kind == "agg":
        return ("agg", table, args, draw(agg_selection(role, table)))
    return ("list", table, args, draw(selection(role, table)))


@functools.cache
@st.composite
def request(draw: st.DrawFn, role: str) -> tuple[tuple[Any, ...], dict[str, str]]:
    roots = (draw(root_field(role)),)
    if chance(draw, 4):
        roots += (draw(root_field(role)),)
    session = {"x-svc-user-id": draw(pick(tuple(USER_IDS)))} if role in ("user", "member") else {}
    return roots, session


# -- rendering ------------------------------------------------------------------------------


def literal(value: Any) -> str:
    """A GraphQL literal for a Python value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    raise TypeError(value)


class Renderer:
    """Query tree -> (GraphQL text, variables); some operands travel as variables."""

    def __init__(self) -> None:
        self.variables: dict[str, Any] = {}
        self.declarations: list[str] = []

    def value(self, value: Any, gql_type: str, as_variable: bool) -> str:
        if not as_variable:
            return literal(value)
        name = f"v{len(self.variables)}"
        self.variables[name] = value
        self.declarations.append(f"${name}: {gql_type}")
        return f"${name}"

    def document(self, roots: tuple[Any, ...]) -> tuple[str, dict[str, Any]]:
        body = " ".join(self.root(f"r{i}", root) for i, root in enumerate(roots))
        header = f"query q({', '.join(self.declarations)})" if self.declarations else "query q"
        return f"{header} {{ {body} }}", self.variables

    def root(self, alias: str, root: Any) -> str:
        kind, table = root[0], root[1]
        if kind == "pk":
            return f"{alias}: {table}_by_pk(id: {root[2]}) {self.sel(table, root[3])}"
        args = self.args(table, root[2])
        if kind == "agg":
            return f"{alias}: {table}_aggregate{args} {self.aggsel(table, root[3])}"
        return f"{alias}: {table}{args} {self.sel(table, root[3])}"

    def sel(self, table: str, fields: tuple[Any, ...]) -> str:
        parts = []
        for f in fields:
            if f[0] == "col":
                parts.append(f[1])
                continue
            target = RELS[table][f[1]].target
            if f[0] == "obj":
                parts.append(f"{f[1]} {self.sel(target, f[2])}")
            elif f[0] == "arr":
                parts.append(f"{f[1]}{self.args(target, f[2])} {self.sel(target, f[3])}")
            else:
                parts.append(
                    f"{f[1]}_aggregate{self.args(target, f[2])} {self.aggsel(target, f[3])}"
                )
        return "{ " + " ".join(parts) + " }"

    def aggsel(self, table: str, items: tuple[Any, ...]) -> str:
        aggregate: list[str] = []
        nodes = ""
        for item in items:
            if item[0] == "count":
                args = []
                if item[1] is not None:
                    args.append(f"columns: [{item[1]}]")
                if item[2] is not None:
                    args.append(f"distinct: {literal(item[2])}")
                aggregate.append(f"count({', '.join(args)})" if args else "count")
            elif item[0] == "op":
                aggregate.append(f"{item[1]} {{ {' '.join(item[2])} }}")
            else:
                nodes = f"nodes {self.sel(table, item[1])}"
        inner = f"aggregate {{ {' '.join(aggregate)} }}" if aggregate else ""
        return "{ " + " ".join(p for p in (inner, nodes) if p) + " }"

    def args(self, table: str, args: dict[str, Any]) -> str:
        out = []
        if "where" in args:
            out.append(f"where: {self.where(table, args['where'])}")
        if "order_by" in args:
            items = ", ".join(self.order(table, o) for o in args["order_by"])
            out.append(f"order_by: [{items}]")
        if "distinct_on" in args:
            out.append(f"distinct_on: [{', '.join(args['distinct_on'])}]")
        for name in ("limit", "offset"):
            if name in args:
                value, as_variable = args[name]
                out.append(f"{name}: {self.value(value, 'Int', as_variable)}")
        return f"({', '.join(out)})" if out else ""

    def where(self, table: str, w: Any) -> str:
        kind = w[0]
        if kind == "empty":
            return "{}"
        if kind in ("and", "or"):
            return f"{{_{kind}: [{', '.join(self.where(table, x) for x in w[1])}]}}"
        if kind == "not":
            return f"{{_not: {self.where(table, w[1])}}}"
        if kind == "rel":
            return f"{{{w[1]}: {self.where(RELS[table][w[1]].target, w[2])}}}"
        column, ops = w[1], w[2]
        scalar = GQL_SCALAR[_kind(table, column)]
        parts = []
        for op, operand, as_variable in ops:
            if op == "_is_null":
                gql_type = "Boolean"
            elif op in ("_in", "_nin"):
                gql_type = f"[{scalar}!]"
            else:
                gql_type = scalar
            parts.append(f"{op}: {self.value(operand, gql_type, as_variable)}")
        return f"{{{column}: {{{', '.join(parts)}}}}}"

    def order(self, table: str, o: Any) -> str:
        if o[0] == "col":
            return f"{{{o[1]}: {o[2]}}}"
        if o[0] == "obj":
            return f"{{{o[1]}: {self.order(RELS[table][o[1]].target, o[2])}}}"
        _, rel, op, column, direction = o
        inner = direction if op == "count" else f"{{{column}: {direction}}}"
        return f"{{{rel}_aggregate: {{{op}: {inner}}}}}"


# -- the oracle -----------------------------------------------------------------------------


def _and3(values: list[bool | None]) -> bool | None:
    out: bool | None = True
    for v in values:
        if v is False:
            return False
        if v is None:
            out = None
    return out


def _or3(values: list[bool | None]) -> bool | None:
    out: bool | None = False
    for v in values:
        if v is True:
            return True
        if v is None:
            out = None
    return out


def like(pattern: str, value: str, *, ci: bool) -> bool:
    """Postgres `LIKE`/`ILIKE` (backslash escapes) as a regular expression."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 1
            out.append(re.escape(pattern[i]))
        elif c == "%":
            out.append(".*")
        elif c == "_":
            out.append(".")
        else:
            out.append(re.escape(c))
        i += 1
    flags = re.S | (re.I if ci else 0)
    return re.fullmatch("".join(out), value, flags) is not None


def compare(op: str, value: Any, operand: Any) -> bool | None:
    """One comparison in SQL's three-valued logic."""
    if op == "_is_null":
        return (value is None) == operand
    if op == "_in" and not operand:
        return False  # `= ANY('{}')` is false, even for null
    if op == "_nin" and not operand:
        return True  # `<> ALL('{}')` is true, even for null
    if value is None:
        return None
    if op == "_contains":  # arrays: `@>`, elements compared as sets
        return set(operand) <= set(value)
    if op == "_contained_in":
        return set(value) <= set(operand)
    if op == "_in":
        return value in operand
    if op == "_nin":
        return value not in operand
    if op in ("_like", "_ilike"):
        return like(operand, value, ci=op == "_ilike")
    if op in ("_nlike", "_nilike"):
        return not like(operand, value, ci=op == "_nilike")
    return {
        "_eq": value == operand,
        "_neq": value != operand,
        "_gt": value > operand,
        "_lt": value < operand,
        "_gte": value >= operand,
        "_lte": value <= operand,
    }[op]


# direction -> (descending, nulls first)
ORDER = {
    "asc": (False, False),
    "asc_nulls_last": (False, False),
    "asc_nulls_first": (False, True),
    "desc": (True, True),
    "desc_nulls_first": (True, True),
    "desc_nulls_last": (True, False),
}


def window(n: int, args: dict[str, Any], cap: int | None) -> int:
    """How many of `n` matching rows (or distinct groups) a list returns."""
    n = max(0, n - args.get("offset", (0,))[0])
    if "limit" in args:
        n = min(n, args["limit"][0])
    return n if cap is None else min(n, cap)


class Leak(AssertionError):
    """A row, column or value the role may not see reached the answer."""


def role_rows(env: Env, role: str, session: dict[str, str]) -> dict[str, dict[int, dict[str, Any]]]:
    """The rows as `role` reads them: for an inherited role, a column only some parents
    grant is null in the rows none of those parents sees (`CASES`); else the data."""
    cases = CASES.get(role)
    if not cases:
        return ROWS
    out = dict(ROWS)
    for table, columns in cases.items():
        seen = {
            c: frozenset().union(*(env.permitted(p, session)[table] for p in g))
            for c, g in columns.items()
        }
        out[table] = {
            i: {k: (None if k in seen and i not in seen[k] else v) for k, v in row.items()}
            for i, row in ROWS[table].items()
        }
    return out


@dataclass
class Checker:
    role: str
    perm: dict[str, frozenset[int]]  # permitted ids per table (from Postgres)
    context: str  # query text and session, for messages
    view: dict[str, dict[int, dict[str, Any]]] = field(default_factory=lambda: ROWS)

    def fail(self, path: str, message: str, *, leak: bool = False) -> None:
        kind = Leak if leak else AssertionError
        raise kind(f"{message}\n  at {path}\n  role {self.role}: {self.context}")

    # -- where --------------------------------------------------------------------------
    def holds(self, table: str, w: Any, row: dict[str, Any]) -> bool | None:
        if w is None or w[0] == "empty":
            return True
        kind = w[0]
        if kind == "and":
            return _and3([self.holds(table, x, row) for x in w[1]])
        if kind == "or":
            return _or3([self.holds(table, x, row) for x in w[1]])
        if kind == "not":
            v = self.holds(table, w[1], row)
            return None if v is None else not v
        if kind == "rel":
            target = RELS[table][w[1]].target
            return any(
                t in self.perm[target] and self.holds(target, w[2], self.view[target][t]) is True
                for t in related(table, w[1], row)
            )
        return _and3([compare(op, row[w[1]], operand) for op, operand, _ in w[2]])

    def matching(self, table: str, args: dict[str, Any], candidates: list[int]) -> list[int]:
        where = args.get("where")
        return [
            i
            for i in candidates
            if i in self.perm[table] and self.holds(table, where, self.view[table][i]) is True
        ]

    # -- answers ------------------------------------------------------------------------
    def root(self, alias: str, root: Any, got: Any) -> None:
        kind, table = root[0], root[1]
        if kind == "pk":
            key = root[2]
            if key not in self.perm[table]:
                if got is not None:
                    self.fail(alias, f"{table}_by_pk({key}) answered a hidden row", leak=True)
                return
            if got is None:
                self.fail(alias, f"{table}_by_pk({key}) missed a permitted row")
            self.obj(alias, table, root[3], got, key)
        elif kind == "list":
            self.rows(alias, table, root[2], root[3], got, list(self.view[table]))
        else:
            self.agg(alias, table, root[2], root[3], got, list(self.view[table]))

    def ids_in(
        self, path: str, table: str, args: dict[str, Any], got: list[Any], candidates: list[int]
    ) -> tuple[list[int], list[int]]:
        """Check membership and size of a list; returns (expected ids, returned ids)."""
        if not isinstance(got, list):
            self.fail(path, f"expected a list, got {got!r}")
        ids = [r["id"] for r in got]
        hidden = [i for i in ids if i not in self.perm[table]]
        if hidden:
            self.fail(path, f"{table} rows outside the role's filter: {hidden}", leak=True)
        candidate_set = set(candidates)
        foreign = [i for i in ids if i not in candidate_set]
        if foreign:
            self.fail(path, f"{table} rows not related to the parent: {foreign}", leak=True)
        expected = self.matching(table, args, candidates)
        extra = sorted(set(ids) - set(expected))
        if extra:
            self.fail(path, f"{table} rows the where does not select: {extra}")
        if len(set(ids)) != len(ids):
            self.fail(path, f"duplicate {table} rows: {ids}")
        cap = PERMS[self.role][table].limit
        distinct = args.get("distinct_on")
        if distinct:
            keys = [tuple(self.view[table][i][c] for c in distinct) for i in ids]
            if len(set(keys)) != len(keys):
                self.fail(path, f"distinct_on {distinct} repeated a key: {keys}")
            groups = {tuple(self.view[table][i][c] for c in distinct) for i in expected}
            n = len(groups)
        else:
            groups, n = set(), len(expected)
        if len(ids) != window(n, args, cap):
            self.fail(path, f"{len(ids)} {table} rows, expected {window(n, args, cap)}")
        windowed = "limit" in args or "offset" in args or (cap is not None and n > cap)
        if not windowed:
            if distinct and set(keys) != groups:
                self.fail(path, f"distinct_on {distinct}: keys {keys} are not {groups}")
            if not distinct and set(ids) != set(expected):
                self.fail(path, f"{table} rows {sorted(ids)} are not {sorted(expected)}")
        self.order(path, table, args, ids)
        return expected, ids

    def order(self, path: str, table: str, args: dict[str, Any], ids: list[int]) -> None:
        """The first order key, when it is a numeric or boolean column, is monotonic."""
        order = args.get("order_by")
        if not order or order[0][0] != "col" or _kind(table, order[0][1]) == "text":
            return
        _, column, direction = order[0]
        descending, nulls_first = ORDER[direction]

        def rank(i: int) -> tuple[int, int]:
            v = self.view[table][i][column]
            if v is None:
                return (0, 0) if nulls_first else (2, 0)
            return (1, -int(v) if descending else int(v))

        ranks = [rank(i) for i in ids]
        if ranks != sorted(ranks):
            self.fail(path, f"not ordered by {column} {direction}: {ids}")

    def rows(
        self,
        path: str,
        table: str,
        args: dict[str, Any],
        sel: tuple[Any, ...],
        got: Any,
        candidates: list[int],
    ) -> None:
        _, ids = self.ids_in(path, table, args, got, candidates)
        for i, (row_id, obj) in enumerate(zip(ids, got, strict=True)):
            self.obj(f"{path}[{i}]", table, sel, obj, row_id)

    def obj(self, path: str, table: str, sel: tuple[Any, ...], got: Any, row_id: int) -> None:
        row = self.view[table][row_id]
        raw = ROWS[table][row_id]  # join keys are read unredacted, as svc and the reference do
        keys = {f[1] + ("_aggregate" if f[0] == "arragg" else "") for f in sel}
        if not isinstance(got, dict) or set(got) != keys:
            extra = set(got) - keys if isinstance(got, dict) else got
            self.fail(path, f"{table} object has keys {got!r}, not {keys} ({extra})", leak=True)
        for f in sel:
            kind, name = f[0], f[1]
            sub = f"{path}.{name}"
            if kind == "col":
                if name not in PERMS[self.role][table].columns:
                    self.fail(sub, f"column {table}.{name} is not the role's", leak=True)
                if got[name] != row[name]:
                    self.fail(
                        sub, f"{table}.{name} of {row_id} is {got[name]!r}, not {row[name]!r}"
                    )
                continue
            target = RELS[table][name].target
            reached = related(table, name, raw)
            if kind == "obj":
                visible = [t for t in reached if t in self.perm[target]]
                value = got[name]
                if value is not None and (not isinstance(value, dict) or "id" not in value):
                    self.fail(sub, f"object relationship answered {value!r}")
                if value is not None and value["id"] not in self.perm[target]:
                    self.fail(sub, f"hidden {target} {value['id']} through {name}", leak=True)
                if not visible:
                    if value is not None:
                        self.fail(sub, f"{name} should be null, got {value!r}")
                    continue
                if value is None or value["id"] != visible[0]:
                    self.fail(sub, f"{name} should be {target} {visible[0]}, got {value!r}")
                self.obj(sub, target, f[2], value, visible[0])
            elif kind == "arr":
                self.rows(sub, target, f[2], f[3], got[name], reached)
            else:
                sub += "_aggregate"
                self.agg(sub, target, f[2], f[3], got[name + "_aggregate"], reached)

    def agg(
        self,
        path: str,
        table: str,
        args: dict[str, Any],
        items: tuple[Any, ...],
        got: Any,
        candidates: list[int],
    ) -> None:
        wanted = {"aggregate" if i[0] != "nodes" else "nodes" for i in items}
        if not isinstance(got, dict) or set(got) != wanted:
            self.fail(path, f"aggregate answered keys {got!r}, not {wanted}", leak=True)
        expected = self.matching(table, args, candidates)
        cap = PERMS[self.role][table].limit
        window_known = not ("limit" in args or "offset" in args or "distinct_on" in args)
        in_window: list[int] | None = expected if window_known else None
        for item in items:
            if item[0] == "nodes":
                _, in_window = self.ids_in(f"{path}.nodes", table, args, got["nodes"], candidates)
                for i, (row_id, obj) in enumerate(zip(in_window, got["nodes"], strict=True)):
                    self.obj(f"{path}.nodes[{i}]", table, item[1], obj, row_id)
                if cap is not None and len(in_window) >= cap:  # nodes cut, aggregate not
                    in_window = expected if window_known else None
        if "aggregate" not in got:
            return
        # The reference computes the aggregate over every permitted row in the request's
        # window; the permission's limit cuts `nodes` only (`mkPermissionLimitSubQuery`).
        cap = None
        aggregate = got["aggregate"]
        names = {i[1] if i[0] == "op" else "count" for i in items if i[0] != "nodes"}
        if not isinstance(aggregate, dict) or set(aggregate) != names:
            self.fail(path, f"aggregate fields {aggregate!r}, not {names}", leak=True)
        if "distinct_on" in args:
            size = window(
                len({tuple(self.view[table][i][c] for c in args["distinct_on"]) for i in expected}),
                args,
                cap,
            )
        else:
            size = window(len(expected), args, cap)
        for item in items:
            if item[0] == "count":
                self.count(
                    f"{path}.aggregate.count", table, item, aggregate["count"], in_window, size
                )
            elif item[0] == "op":
                op = item[1]
                value = aggregate[op]
                if not isinstance(value, dict) or set(value) != set(item[2]):
                    self.fail(f"{path}.aggregate.{op}", f"answered {value!r}", leak=True)
                for column in item[2]:
                    self.op(
                        f"{path}.aggregate.{op}.{column}",
                        table,
                        op,
                        column,
                        value[column],
                        in_window,
                        expected,
                    )

    def count(
        self, path: str, table: str, item: Any, got: Any, rows: list[int] | None, size: int
    ) -> None:
        _, column, distinct = item
        if rows is None:
            ok = got == size if column is None else 0 <= got <= size
            if not ok:
                self.fail(path, f"count {got}, expected {'' if column is None else '<= '}{size}")
            return
        if column is None:
            want = len(rows)
        else:
            values = [
                self.view[table][i][column] for i in rows if self.view[table][i][column] is not None
            ]
            hashable = [tuple(v) if isinstance(v, list) else v for v in values]
            want = len(set(hashable)) if distinct else len(values)
        if got != want:
            self.fail(
                path, f"count {got}, expected {want} over {table} {sorted(rows)}", leak=got > want
            )

    def op(
        self,
        path: str,
        table: str,
        op: str,
        column: str,
        got: Any,
        rows: list[int] | None,
        expected: list[int],
    ) -> None:
        if rows is not None:
            values = [
                self.view[table][i][column] for i in rows if self.view[table][i][column] is not None
            ]
            if not values:
                if got is not None:
                    self.fail(path, f"{op} over no values is {got!r}, not null")
                return
            if op == "sum":
                ok = got == sum(values)
            elif op == "avg":
                ok = got is not None and abs(got - sum(values) / len(values)) < 1e-6
            elif _kind(table, column) == "text":
                ok = got in values  # the order of text depends on the collation
            else:
                ok = got == (max(values) if op == "max" else min(values))
            if not ok:
                self.fail(path, f"{op}({column}) = {got!r} over {table} {sorted(rows)}", leak=True)
            return
        # A window without nodes: only bounds over the permitted, matching rows.
        values = [
            self.view[table][i][column] for i in expected if self.view[table][i][column] is not None
        ]
        if got is None:
            return
        if op in ("max", "min"):
            ok = got in values
        elif op == "sum":
            ok = 0 <= got <= sum(values)
        else:
            ok = bool(values) and min(values) - 1e-6 <= got <= max(values) + 1e-6
        if not ok:
            self.fail(path, f"{op}({column}) = {got!r} is not over permitted rows", leak=True)


def check_answer(env: Env, role: str, roots: tuple[Any, ...], session: dict[str, str]) -> None:
    query, variables = Renderer().document(roots)
    answer = env.graphql(query, variables, role=role, session=session)
    context = f"{query}\n  variables {json.dumps(variables)}\n  session {session}"
    if "errors" in answer or "data" not in answer:
        raise AssertionError(f"unexpected error {answer}\n  {context}")
    checker = Checker(role, env.permitted(role, session), context, role_rows(env, role, session))
    data = answer["data"]
    if set(data) != {f"r{i}" for i in range(len(roots))}:
        raise AssertionError(f"root keys {set(data)}\n  {context}")
    for i, root in enumerate(roots):
        checker.root(f"r{i}", root, data[f"r{i}"])


# -- the property -------------------------------------------------------------------------

PROPERTY = settings(
    max_examples=1000,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
    ],
)


@PROPERTY
@given(req=request("user"))
def test_user_sees_only_permitted_rows_and_columns(env: Env, req: Any) -> None:
    roots, session = req
    check_answer(env, "user", roots, session)


@PROPERTY
@given(req=request("anonymous"))
def test_anonymous_sees_only_permitted_rows_and_columns(env: Env, req: Any) -> None:
    roots, session = req
    check_answer(env, "anonymous", roots, session)


@settings(PROPERTY, max_examples=400)
@given(req=request("member"))
def test_inherited_role_sees_the_union_with_cells_redacted(env: Env, req: Any) -> None:
    """`member` (= user + editor): the union of its parents' rows and columns, and in
    each row a column one parent grants (`user`: `karma`, `body`, `rating`…; `editor`:
    `secret_note`, `internal_score`) shown only where that parent sees the row — and
    read as null there by `where`, `order_by`, `distinct_on` and aggregates too (the
    reference's `ColumnRedactionSpec`)."""
    roots, session = req
    check_answer(env, "member", roots, session)


# -- what each role's schema exposes --------------------------------------------------------


def _expected_fields(role: str, table: str) -> set[str]:
    out = set(visible_columns(role, table))
    for name, rel in visible_rels(role, table).items():
        out.add(name)
        if rel.kind == "array" and aggregations(role, rel.target):
            out.add(f"{name}_aggregate")
    return out


def _expected_order_by(role: str, table: str) -> set[str]:
    out = set(visible_columns(role, table))
    for name, rel in visible_rels(role, table).items():
        out.add(name if rel.kind == "object" else f"{name}_aggregate")
    return out


@pytest.mark.parametrize("role", sorted(PERMS))
def test_role_schema_is_exactly_the_permitted_fields(env: Env, role: str) -> None:
    types = " ".join(
        f"{t}: __type(name: {json.dumps(t)}) {{ fields {{ name }} }} "
        f"{t}_bool_exp: __type(name: {json.dumps(t + '_bool_exp')}) {{ inputFields {{ name }} }} "
        f"{t}_order_by: __type(name: {json.dumps(t + '_order_by')}) {{ inputFields {{ name }} }} "
        f"{t}_select_column: __type(name: {json.dumps(t + '_select_column')}) "
        "{ enumValues { name } }"
        for t in COLUMN_KINDS
    )
    answer = env.graphql(
        f"{{ __schema {{ queryType {{ fields {{ name }} }} }} {types} }}",
        role=role,
        session={"x-svc-user-id": "1"},
    )
    data = answer["data"]
    roots = {f["name"] for f in data["__schema"]["queryType"]["fields"]}
    expected_roots = set()
    for table in PERMS[role]:
        expected_roots |= {table, f"{table}_by_pk"}
        if aggregations(role, table):
            expected_roots.add(f"{table}_aggregate")
    assert roots == expected_roots
    for table in COLUMN_KINDS:
        if table not in PERMS[role]:
            assert data[table] is None, f"{role} sees the type {table}"
            continue
        assert {f["name"] for f in data[table]["fields"]} == _expected_fields(role, table)
        bool_exp = {f["name"] for f in data[f"{table}_bool_exp"]["inputFields"]}
        expected_bool = set(visible_columns(role, table)) | set(visible_rels(role, table))
        # the reference's `<rel>_aggregate: <target>_aggregate_bool_exp` on array
        # relationships whose target the role may aggregate
        expected_bool |= {
            f"{name}_aggregate"
            for name, rel in visible_rels(role, table).items()
            if rel.kind == "array" and aggregations(role, rel.target)
        }
        assert bool_exp == expected_bool | {"_and", "_or", "_not"}
        order_by = {f["name"] for f in data[f"{table}_order_by"]["inputFields"]}
        assert order_by == _expected_order_by(role, table)
        enum = {v["name"] for v in data[f"{table}_select_column"]["enumValues"]}
        assert enum == set(visible_columns(role, table))


def _hidden_queries(role: str) -> Iterator[str]:
    """Queries that name something the role may not see, one thing each."""
    perms = PERMS[role]
    for table, kinds in COLUMN_KINDS.items():
        if table not in perms:
            yield f"{{ {table} {{ id }} }}"
            yield f"{{ {table}_by_pk(id: 1) {{ id }} }}"
            yield f"{{ {table}_aggregate {{ aggregate {{ count }} }} }}"
            continue
        if not aggregations(role, table):
            yield f"{{ {table}_aggregate {{ aggregate {{ count }} }} }}"
        # Relationships from visible tables onto this one, to reach it nested.
        reach = [
            (src, name, rel)
            for src in perms
            for name, rel in visible_rels(role, src).items()
            if rel.target == table
        ]
        for src, name, rel in reach:
            if rel.kind == "array" and not aggregations(role, table):
                yield f"{{ {src} {{ id {name}_aggregate {{ aggregate {{ count }} }} }} }}"
        for column in kinds:
            if column in perms[table].columns:
                continue
            yield f"{{ {table} {{ id {column} }} }}"
            yield f"{{ {table} {{ id x: {column} }} }}"
            yield f"{{ {table} {{ ...f }} }} fragment f on {table} {{ {column} }}"
            yield f"{{ {table} {{ ... on {table} {{ {column} }} }} }}"
            yield f"{{ {table}_by_pk(id: 1) {{ {column} }} }}"
            yield f"{{ {table}(where: {{{column}: {{_is_null: true}}}}) {{ id }} }}"
            yield f"{{ {table}(where: {{_not: {{{column}: {{_is_null: true}}}}}}) {{ id }} }}"
            yield f"{{ {table}(order_by: {{{column}: asc}}) {{ id }} }}"
            yield f"{{ {table}(distinct_on: [{column}]) {{ id }} }}"
            if aggregations(role, table):
                agg = f"{table}_aggregate"
                yield f"{{ {agg} {{ aggregate {{ count(columns: [{column}]) }} }} }}"
                yield f"{{ {agg} {{ aggregate {{ max {{ {column} }} }} }} }}"
                yield f"{{ {agg} {{ nodes {{ id {column} }} }} }}"
            for src, name, rel in reach:
                yield f"{{ {src} {{ id {name} {{ {column} }} }} }}"
                yield f"{{ {src}(where: {{{name}: {{{column}: {{_is_null: false}}}}}}) {{ id }} }}"
                if rel.kind == "object":
                    yield f"{{ {src}(order_by: {{{name}: {{{column}: asc}}}}) {{ id }} }}"
        for name, rel in RELS[table].items():
            if rel.target in perms:
                continue
            yield f"{{ {table} {{ id {name} {{ id }} }} }}"
            yield f"{{ {table}(where: {{{name}: {{}}}}) {{ id }} }}"
            if rel.kind == "array":
                yield f"{{ {table} {{ id {name}_aggregate {{ aggregate {{ count }} }} }} }}"
                yield f"{{ {table}(order_by: {{{name}_aggregate: {{count: asc}}}}) {{ id }} }}"
            else:
                yield f"{{ {table}(order_by: {{{name}: {{id: asc}}}}) {{ id }} }}"


@pytest.mark.parametrize("role", sorted(PERMS))
def test_fields_outside_the_role_fail_validation(env: Env, role: str) -> None:
    queries = list(_hidden_queries(role))
    assert len(queries) >= 10
    session = {"x-svc-user-id": "1", "x-svc-author-name": "Ada", "x-svc-allowed-ids": "{1}"}
    for query in queries:
        answer = env.graphql(query, role=role, session=session)
        assert "data" not in answer, (query, answer)
        codes = [e["extensions"]["code"] for e in answer["errors"]]
        assert codes == ["validation-failed"], (query, answer)


# -- ordering through relationships ---------------------------------------------------------
#
# svc bug: order keys through an object relationship or an array-relationship aggregate
# read the target table without the role's permission filter (svc/sql/render.py
# `_path_expr`; the planner builds `Hop`/`AggLeaf` without a filter). The reference ANDs
# the target's select filter into these order keys (`AOCObjectRelation`/
# `AOCArrayAggregation` carry it), so hidden rows cannot influence the order. The rows
# returned stay within the filter (the property above holds); their *order* leaks hidden
# values.

ORDER_LEAKS = [
    pytest.param(
        "anonymous",
        {},
        "author",
        "{ author(order_by: [{articles_aggregate: {max: {rating: desc_nulls_last}}}, "
        "{id: asc}]) { id } }",
        ("agg", "articles", "max", "rating", "desc_nulls_last"),
        id="array-aggregate-max-counts-unpublished-ratings",
    ),
    pytest.param(
        "anonymous",
        {},
        "author",
        "{ author(order_by: [{articles_aggregate: {count: desc}}, {id: asc}]) { id } }",
        ("agg", "articles", "count", None, "desc"),
        id="array-aggregate-count-counts-unpublished-articles",
    ),
    pytest.param(
        "user",
        {"x-svc-user-id": "1"},
        "comment",
        "{ comment(where: {author_id: {_eq: 1}}, "
        "order_by: [{article: {rating: desc_nulls_last}}, {id: asc}]) { id } }",
        ("obj", "article", ("col", "rating", "desc_nulls_last")),
        id="object-relationship-reads-a-hidden-article",
    ),
]


def order_value(perm: dict[str, frozenset[int]], table: str, key: Any, row_id: int) -> Any:
    """The value an order key has for a row when only permitted rows exist."""
    row = ROWS[table][row_id]
    if key[0] == "col":
        return row[key[1]]
    target = RELS[table][key[1]].target
    reached = [t for t in related(table, key[1], row) if t in perm[target]]
    if key[0] == "obj":
        return order_value(perm, target, key[2], reached[0]) if reached else None
    _, _, op, column, _ = key
    if op == "count":
        return len(reached)
    values = [ROWS[target][t][column] for t in reached if ROWS[target][t][column] is not None]
    if not values:
        return None
    return {"max": max, "min": min, "sum": sum}[op](values)


@pytest.mark.parametrize(("role", "session", "table", "query", "key"), ORDER_LEAKS)
def test_order_through_relationships_sees_only_permitted_rows(
    env: Env, role: str, session: dict[str, str], table: str, query: str, key: Any
) -> None:
    answer = env.graphql(query, role=role, session=session)
    assert "data" in answer, answer
    ids = [r["id"] for r in answer["data"][table]]
    perm = env.permitted(role, session)
    direction = key[-1] if key[0] != "obj" else key[2][2]
    descending, nulls_first = ORDER[direction]

    def rank(i: int) -> tuple[int, Any, int]:
        v = order_value(perm, table, key, i)
        if v is None:
            return (0 if nulls_first else 2, 0, i)
        return (1, -v if descending else v, i)

    assert ids == sorted(ids, key=rank)


# -- SQL injection ----------------------------------------------------------------------------

INJECTIONS = [
    "' OR 1=1 --",
    "' OR '1'='1",
    "') or ('1'='1",
    "1 OR 1=1",
    "1) OR (1=1",
    "1; DROP TABLE article; --",
    "1'; DROP TABLE author; --",
    "'; DELETE FROM comment; --",
    "1 UNION SELECT id FROM author",
    "0 UNION ALL SELECT NULL --",
    "'; SELECT pg_sleep(5); --",
    "$$",
    "$$; DROP TABLE article; $$",
    "$1",
    ")::int; --",
    "1::int",
    "1/*",
    "*/ OR 1=1 /*",
    "-- ",
    "\x00",
    "1\x00",
    "\\x00",
    "E'\\x41'",
    "%",
    "_",
    "%%",
    "\\",
    "\\\\",
    "\\%",
    "'",
    "''",
    '"',
    '"; DROP TABLE author; --',
    "{1,2}",
    "{1,2}) OR (1=1",
    '{"1"}',
    "{}",
    "NULL",
    "null",
    "",
    " 1 ",
    "1",
    "-1",
    "99999999999999999999",
    "1e3",
    "0x1F",
    "x-svc-user-id",
    "X-Svc-Role",
    "O'Brien",
    "Zoë",
    "日本語",
    "😀",
    "\u202e1",
    "\n",
    "1\r\nX-Svc-Role: admin",
    ".*",
    "[",
    "(",
    "a" * 10000,
    "'" * 5000,
]

# The longest regular expression a role other than admin may send (the server's default).
PATTERN_LIMIT = Config().max_pattern_length

# Every table of the role in one statement: an unreadable session value fails it whole.
SESSION_QUERY = "{ author { id } article { id } comment { id } }"
NAMED_QUERY = "{ author { id } }"


def _assert_session_answer(
    env: Env, role: str, session: dict[str, str], answer: Any, what: str
) -> None:
    try:
        expected = env.permitted(role, session)
    except asyncpg.PostgresError as exc:
        # Postgres cannot read the value as the column's type: an error, never rows.
        assert "data" not in answer, (what, answer)
        codes = [e["extensions"]["code"] for e in answer["errors"]]
        assert codes == ["data-exception"], (what, exc, answer)
        assert all("internal" not in e["extensions"] for e in answer["errors"]), answer
        return
    assert "errors" not in answer, (what, answer)
    for table, rows in answer["data"].items():
        got = [r["id"] for r in rows]
        assert len(got) == len(set(got)) and set(got) == expected[table], (what, table)


def _unchanged(env: Env) -> None:
    """Every fixture table still exists with the same rows; the metadata is untouched."""
    assert env.database_fingerprint() == env.fingerprint
    assert env.engine.state.version == env.metadata_version


@pytest.mark.parametrize("value", INJECTIONS, ids=range(len(INJECTIONS)))
def test_injection_through_session_variables(env: Env, value: str) -> None:
    session = {"x-svc-user-id": value}
    answer = env.graphql(SESSION_QUERY, role="user", session=session)
    _assert_session_answer(env, "user", session, answer, f"user id {value!r}")
    for session in (
        {"x-svc-author-name": value, "x-svc-allowed-ids": "{}"},
        {"x-svc-author-name": "nobody", "x-svc-allowed-ids": value},
    ):
        answer = env.graphql(NAMED_QUERY, role="named", session=session)
        _assert_session_answer(env, "named", session, answer, f"named {session!r}")
    _unchanged(env)


def test_a_missing_session_variable_is_an_error_not_rows(env: Env) -> None:
    answer = env.graphql(SESSION_QUERY, role="user", session={})
    assert "data" not in answer and answer["errors"], answer


def _header_safe(value: str) -> bool:
    return value.isascii() and value.isprintable() and value == value.strip() and value != ""


def test_injection_through_http_headers(env: Env, http: ServerProcess) -> None:
    sent = 0
    for value in filter(_header_safe, INJECTIONS):
        headers = {"X-Svc-Role": "user", "X-Svc-User-Id": value}
        answer = http.graphql(SESSION_QUERY, headers=headers)
        _assert_session_answer(env, "user", {"x-svc-user-id": value}, answer, repr(value))
        headers = {"X-Svc-Role": "named", "X-Svc-Author-Name": value, "X-Svc-Allowed-Ids": "{}"}
        answer = http.graphql(NAMED_QUERY, headers=headers)
        session = {"x-svc-author-name": value, "x-svc-allowed-ids": "{}"}
        _assert_session_answer(env, "named", session, answer, repr(value))
        # As a role name: a role without permissions sees no table at all.
        answer = http.graphql(SESSION_QUERY, headers={"X-Svc-Role": value})
        assert "data" not in answer, (value, answer)
        assert answer["errors"][0]["extensions"]["code"] == "validation-failed", answer
        sent += 1
    assert sent >= 30
    _unchanged(env)


# Text operators of `article.title` and the SQL the oracle runs for each (`$2` the value).
TEXT_OPERATORS = {
    "_eq": "t.title = $2",
    "_neq": "t.title <> $2",
    "_like": "t.title like $2",
    "_nlike": "t.title not like $2",
    "_ilike": "t.title ilike $2",
    "_similar": "t.title similar to $2",
    "_regex": "t.title ~ $2",
    "_iregex": "t.title ~* $2",
    "_in": "t.title = any($2::text[])",
    "_nin": "t.title <> all($2::text[])",
}


@pytest.mark.parametrize("value", INJECTIONS, ids=range(len(INJECTIONS)))
def test_injection_through_arguments(env: Env, value: str) -> None:
    session = {"x-svc-user-id": "3"}
    perm = PERMS["user"]["article"].sql
    for op, condition in TEXT_OPERATORS.items():
        operand: Any = [value, "Hello 1"] if op in ("_in", "_nin") else value
        gql_type = "[String!]!" if op in ("_in", "_nin") else "String!"
        try:
            rows = env.run(
                env.conn.fetch(
                    f"select t.id from article t where ({perm}) and {condition}", "3", operand
                )
            )
            expected: frozenset[int] | None = frozenset(r["id"] for r in rows)
        except asyncpg.PostgresError:
            expected = None
        for query, variables in (
            (f"{{ article(where: {{title: {{{op}: {literal(operand)}}}}}) {{ id }} }}", None),
            (
                f"query q($v: {gql_type}) {{ article(where: {{title: {{{op}: $v}}}}) {{ id }} }}",
                {"v": operand},
            ),
        ):
            answer = env.graphql(query, variables, role="user", session=session)
            what = (op, value[:40], variables is not None, answer)
            if OPERATORS[op].pattern and len(value) > PATTERN_LIMIT:  # refused, no SQL
                [error] = answer["errors"]
                assert error["extensions"]["code"] == "validation-failed", what
                assert "SVC_GRAPHQL_MAX_PATTERN_LENGTH" in error["message"], what
            elif expected is None:
                assert "data" not in answer, what
                codes = {e["extensions"]["code"] for e in answer["errors"]}
                assert codes <= {"data-exception", "bad-request"}, what
            else:
                assert "errors" not in answer, what
                got = [r["id"] for r in answer["data"]["article"]]
                assert len(got) == len(set(got)) and set(got) == expected, what
    # Where a number is expected, a string is not a number: rejected before any SQL.
    for query, variables in (
        ("query q($v: Int!) { article_by_pk(id: $v) { id } }", {"v": value}),
        ("query q($v: Int) { article(where: {id: {_eq: $v}}) { id } }", {"v": value}),
        ("query q($v: Int) { article(limit: $v) { id } }", {"v": value}),
        (f"{{ article(where: {{id: {{_eq: {literal(value)}}}}}) {{ id }} }}", None),
    ):
        answer = env.graphql(query, variables, role="user", session=session)
        assert "data" not in answer, (query, value[:40], answer)
        assert answer["errors"][0]["extensions"]["code"] == "validation-failed", answer
    _unchanged(env)


def test_a_non_ascii_session_variable_header_is_read_as_utf8(env: Env, http: ServerProcess) -> None:
    name = "Zoë"
    headers = [
        (b"X-Svc-Role", b"named"),
        (b"X-Svc-Author-Name", name.encode()),
        (b"X-Svc-Allowed-Ids", b"{}"),
    ]
    answer = http.client.post("/v1/graphql", json={"query": NAMED_QUERY}, headers=headers).json()
    expected = [r["id"] for r in DATA["author"] if r["name"] == name]
    assert expected and "data" in answer, answer
    assert [r["id"] for r in answer["data"]["author"]] == expected


def test_after_the_corpus_everything_is_as_before(env: Env) -> None:
    _unchanged(env)
    counts = env.graphql(
        "{ author_aggregate { aggregate { count } } article_aggregate { aggregate { count } } "
        "comment_aggregate { aggregate { count } } }"
    )["data"]
    assert {k: v["aggregate"]["count"] for k, v in counts.items()} == {
        f"{t}_aggregate": len(rows) for t, rows in DATA.items()
    }


# -- aggregates learn nothing about hidden rows -------------------------------------------


def _published(author_id: int | None = None) -> list[dict[str, Any]]:
    return [
        r
        for r in DATA["article"]
        if r["is_published"] and (author_id is None or r["author_id"] == author_id)
    ]


def test_aggregates_see_only_permitted_rows(env: Env) -> None:
    """`capped` sees published articles (a limit of 3): `_aggregate` count/sum/max/min,
    `count(columns, distinct)` and a relationship's aggregate are computed over exactly
    those rows (the reference ANDs the select filter into the aggregate's base select and
    lets the limit cut `nodes` only), so an unpublished rating (1000 + id) never shows."""
    rows = _published()
    ratings = [r["rating"] for r in rows if r["rating"] is not None]
    got = env.graphql(
        "{ article_aggregate { aggregate { count c: count(columns: [author_id], "
        "distinct: true) sum { rating } max { rating } min { rating } } nodes { id } } }",
        role="capped",
    )["data"]["article_aggregate"]
    assert got["aggregate"] == {
        "count": len(rows),
        "c": len({r["author_id"] for r in rows}),
        "sum": {"rating": sum(ratings)},
        "max": {"rating": max(ratings)},
        "min": {"rating": min(ratings)},
    }
    assert len(got["nodes"]) == 3
    assert {n["id"] for n in got["nodes"]} <= {r["id"] for r in rows}
    authors = env.graphql(
        "{ author(order_by: {id: asc}) { id articles_aggregate { aggregate { count "
        "max { rating } } } } }",
        role="capped",
    )["data"]["author"]
    for a in authors:
        mine = [r["rating"] for r in _published(a["id"]) if r["rating"] is not None]
        agg = a["articles_aggregate"]["aggregate"]
        assert agg["count"] == len(_published(a["id"])), a
        assert agg["max"]["rating"] == (max(mine) if mine else None), a


@pytest.mark.parametrize("n", [0, 1, 2, 4])
def test_aggregate_filters_see_only_permitted_rows(env: Env, n: int) -> None:
    """`where: {articles_aggregate: {count: {predicate, filter, arguments, distinct}}}`
    counts the target rows the role's filter lets through (the reference's
    `AggregationPredicatesImplementation` carries the target's row permission): the
    authors answered are exactly those whose published articles satisfy the predicate."""
    answer = env.graphql(
        "query q($n: Int!) { a: author(where: {articles_aggregate: {count: "
        "{predicate: {_gt: $n}}}}) { id } b: author(where: {articles_aggregate: {count: "
        "{arguments: [rating], distinct: true, filter: {rating: {_gte: 0}}, "
        "predicate: {_gt: $n}}}}) { id } }",
        {"n": n},
        role="capped",
    )["data"]
    every = [a["id"] for a in DATA["author"]]
    want_a = {i for i in every if len(_published(i)) > n}
    distinct_ratings = {
        i: {r["rating"] for r in _published(i) if r["rating"] is not None} for i in every
    }
    want_b = {i for i in every if len(distinct_ratings[i]) > n}
    assert {r["id"] for r in answer["a"]} == want_a
    assert {r["id"] for r in answer["b"]} == want_b
