"""Golden SQL of nested updates (`svc.sql.nested_update`): the statements a nested update
runs, in order, kept in `golden/nested_update_*.sql` as reviewed snapshots (syrupy),
modelled on `tests/test_golden.py`; refresh with
`uv run pytest tests/test_golden_nested.py --snapshot-update`.

A nested update's later statements take the rows of earlier ones as a parameter, so the
snapshot is taken from a real run: `MutationRunner` on a connection that records what it
is asked to run, in a transaction rolled back. Each statement is shown in sqlglot's
pretty form (`tests.sql_oracle.pretty`), followed by its parameters; the pretty forms are
run too (same parameters, same order) and must give the same answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from svc.api.graphql import prepare
from svc.api.mutation import SESSION_SQL, MutationRunner
from svc.api.state import State
from svc.execute.db import Database
from svc.plan.mutation import MutationRoot
from svc.plan.operation import PlanInput, plan_operation
from tests.compiled_state import compiled_state
from tests.sql_oracle import pretty
from tests.test_golden import GoldenSQL

SCHEMA = """
create table author (id int primary key, name text not null, rating int not null default 0);
create table article (id int primary key, title text not null,
  author_id int not null references author(id), views int not null default 0, editor text);
insert into author values (1, 'Ada', 1), (2, 'Bob', 2);
insert into article values (10, 'A1', 1, 5, null), (11, 'A2', 1, 0, null), (20, 'B1', 2, 3, null);
"""


def _table(name: str, **rels: Any) -> dict[str, Any]:
    return {"table": {"schema": "public", "name": name}, **rels}


def _perm(role: str, permission: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"role": role, "permission": permission}]


EVERY = {"columns": "*", "filter": {}}
METADATA = {
    "version": 2,
    "tables": [
        _table(
            "author",
            array_relationships=[
                {
                    "name": "articles",
                    "using": {
                        "foreign_key_constraint_on": {"table": "article", "column": "author_id"}
                    },
                }
            ],
            select_permissions=_perm("editor", EVERY),
            update_permissions=_perm(
                "editor",
                {"columns": ["name", "rating"], "filter": {}, "check": {"rating": {"_lte": 10}}},
            ),
        ),
        _table(
            "article",
            object_relationships=[
                {"name": "author", "using": {"foreign_key_constraint_on": "author_id"}}
            ],
            select_permissions=_perm("editor", EVERY),
            insert_permissions=_perm(
                "editor", {"columns": ["id", "title"], "check": {"title": {"_neq": "bad"}}}
            ),
            update_permissions=_perm(
                "editor",
                {
                    "columns": ["title", "views"],
                    "filter": {"author_id": {"_eq": "X-Svc-User-Id"}},
                    "check": {"views": {"_gte": 0}},
                    "set": {"editor": "x-svc-user-id"},
                },
            ),
            delete_permissions=_perm("editor", {"filter": {"views": {"_eq": 0}}}),
        ),
    ],
}
SESSION = {"x-svc-role": "editor", "x-svc-user-id": "1"}

MUTATIONS: dict[str, tuple[str, str]] = {
    "nested_update_array": (
        "admin",
        'mutation { update_author_by_pk(pk_columns: {id: 1}, _set: {name: "Ada L"}, '
        "_nested: {articles: {_update: [{where: {views: {_gt: 1}}, _inc: {views: 1}}]}}) "
        "{ name articles(order_by: {id: asc}) { id views } } }",
    ),
    "nested_update_object": (
        "admin",
        "mutation { update_article(where: {id: {_eq: 20}}, _set: {views: 9}, "
        '_nested: {author: {_set: {name: "Bobby"}}}) '
        "{ affected_rows returning { views author { name } } } }",
    ),
    "nested_update_only_nested": (
        "admin",
        "mutation { update_author_by_pk(pk_columns: {id: 2}, _nested: {articles: "
        '{_update: [{where: {}, _set: {title: "T"}}]}}) { id } }',
    ),
    "nested_update_role_rules": (
        "editor",
        'mutation { update_author_by_pk(pk_columns: {id: 1}, _set: {name: "E"}, '
        "_nested: {articles: {_delete: {id: {_eq: 11}}, "
        '_update: [{where: {id: {_eq: 10}}, _set: {title: "mine"}}], '
        '_insert: {data: [{id: 12, title: "new"}]}}}) '
        "{ articles(order_by: {id: asc}) { id title editor } } }",
    ),
}


class Recording:
    """A connection that records the statements it runs (and their arguments), and runs
    them on `conn`."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.statements: list[tuple[str, tuple[Any, ...], str]] = []

    def _note(self, kind: str, sql: str, args: tuple[Any, ...]) -> None:
        if sql != SESSION_SQL:
            self.statements.append((sql, args, kind))

    async def execute(self, sql: str, *args: Any) -> Any:
        self._note("execute", sql, args)
        return await self.conn.execute(sql, *args)

    async def fetchval(self, sql: str, *args: Any) -> Any:
        self._note("fetchval", sql, args)
        return await self.conn.fetchval(sql, *args)

    async def fetchrow(self, sql: str, *args: Any) -> Any:
        self._note("fetchrow", sql, args)
        return await self.conn.fetchrow(sql, *args)


@pytest.fixture(scope="module")
def env(pg_url: str) -> Iterator[tuple[State, Database, asyncio.AbstractEventLoop]]:
    yield from compiled_state(pg_url, SCHEMA, METADATA)


def _root(state: State, role: str, query: str) -> MutationRoot:
    schema = state.schema(role)
    prepared = prepare(schema, query, None)
    given = PlanInput(
        schema, state.ir.tables, prepared.operation, prepared.fragments, {}, False, role
    )
    roots = plan_operation(given).mutation.roots
    root = roots[0][1]
    assert isinstance(root, MutationRoot)
    return root


@pytest.mark.parametrize("case", sorted(MUTATIONS))
def test_golden_nested_update_sql(
    env: tuple[State, Database, asyncio.AbstractEventLoop], case: str, snapshot: Any
) -> None:
    state, db, loop = env
    role, query = MUTATIONS[case]
    root = _root(state, role, query)
    session = SESSION if role == "editor" else {"x-svc-role": "admin"}

    async def run() -> tuple[bytes, list[tuple[str, tuple[Any, ...], str]]]:
        async with db.pool.acquire() as conn:
            tx = conn.transaction()
            await tx.start()
            try:
                rec = Recording(conn)
                runner = MutationRunner(rec, state.ir.tables, {}, session)  # type: ignore[arg-type]
                answer = await runner.run([("r", root)])
                return answer, rec.statements
            finally:
                await tx.rollback()

    answer, statements = loop.run_until_complete(run())
    assert len(statements) >= 2  # a level, …, the answer
    parts = [f"-- {query}", f"-- role: {role}"]
    for sql, args, _ in statements:
        parts.append(f"{pretty(sql)};")
        parts.extend(f"-- ${n}: {a!r}" for n, a in enumerate(args, start=1))
    text = "\n".join(parts) + f"\n-- answer: {answer.decode()}\n"
    assert text == snapshot(extension_class=GoldenSQL)

    async def run_pretty() -> Any:
        async with db.pool.acquire() as conn:
            tx = conn.transaction()
            await tx.start()
            try:
                out = None
                for sql, args, kind in statements:
                    fetch = conn.fetchrow if kind == "fetchrow" else conn.fetchval
                    out = await fetch(pretty(sql), *args)
                return out
            finally:
                await tx.rollback()

    last = loop.run_until_complete(run_pretty())
    assert b'"r":' + (last if isinstance(last, bytes) else str(last).encode()) in answer


def test_compile_lists_each_level(env: tuple[State, Database, asyncio.AbstractEventLoop]) -> None:
    """`svc compile --print-sql` shows a nested update's update and delete statements in
    run order, the rows of a level above as a placeholder parameter."""
    from svc.cli.compile import format_statements, operation_sql
    from svc.sql.nested_update import PLACEHOLDER_ROWS

    state, _, _ = env
    query = MUTATIONS["nested_update_role_rules"][1]
    steps = operation_sql(state.schema("editor"), state.ir, query, role="editor")
    text = format_statements(steps)
    heads = [line.split()[3] for line in text.splitlines() if line.startswith("WITH")]
    assert heads == ["(UPDATE", "(DELETE", "(UPDATE"], text
    assert text.count(f'"{PLACEHOLDER_ROWS}" (json)') == 2, text
    assert "session variable x-svc-user-id" in text, text
