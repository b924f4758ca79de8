"""Golden steps: operations that are more than one SQL statement, planned into steps
(`svc.plan.steps`) and printed as `svc compile --print-sql` prints them (`golden/`,
reviewed snapshots; refresh with `uv run pytest tests/test_golden_steps.py
--snapshot-update`): an action whose output has a relationship to a table (the handler's
request, then one statement over its answers), and a query with a remote relationship
(the statement returning the join column, then the request to the remote schema)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from graphql import build_schema, introspection_from_schema

from svc.api.state import Resources, State
from svc.cli.compile import format_statements, operation_sql
from svc.metadata.model import metadata_from_obj
from svc.metadata.remote_schemas import remote_schemas
from svc.plan.steps import StepKind
from svc.schema import remote_registry
from tests.support import create_database
from tests.test_golden import GoldenSQL

SCHEMA = """
create table author (id serial primary key, name text not null);
"""

REMOTE_SDL = """
type Query { profile(id: Int!): Profile }
type Profile { id: Int! bio: String }
"""

METADATA: dict[str, Any] = {
    "version": 2,
    "tables": [
        {
            "table": {"schema": "public", "name": "author"},
            "remote_relationships": [
                {
                    "name": "profile",
                    "definition": {
                        "svc_fields": ["id"],
                        "remote_schema": "profiles",
                        "remote_field": {"profile": {"arguments": {"id": "$id"}}},
                    },
                }
            ],
        }
    ],
    "remote_schemas": [
        {
            "name": "profiles",
            "definition": {
                "url": "{{PROFILES_URL}}/graphql",
                "headers": [{"name": "X-Key", "value_from_env": "PROFILES_KEY"}],
            },
        }
    ],
    "actions": [
        {
            "name": "find_author",
            "definition": {
                "type": "query",
                "handler": "{{ACTION_BASE}}/find",
                "arguments": [{"name": "name", "type": "String!"}],
                "output_type": "Found",
                "headers": [{"name": "X-Secret", "value_from_env": "SECRET"}],
            },
        }
    ],
    "custom_types": {
        "objects": [
            {
                "name": "Found",
                "fields": [{"name": "author_id", "type": "Int!"}, {"name": "score", "type": "Int"}],
                "relationships": [
                    {
                        "name": "author",
                        "type": "object",
                        "remote_table": "author",
                        "field_mapping": {"author_id": "id"},
                    }
                ],
            }
        ]
    },
}

CASES: dict[str, tuple[str, dict[str, Any] | None]] = {
    "steps_action_with_table_relationship": (
        "query q($n: String!) { find_author(name: $n) { score author { id name } } }",
        {"n": "Ada"},
    ),
    "steps_remote_join": ("{ author(order_by: {id: asc}) { name profile { bio } } }", None),
    "steps_remote_root_field": (
        "query p($id: Int!) { author { id } p: profile(id: $id) { bio } }",
        {"id": 1},
    ),
}


@pytest.fixture(scope="module")
def state(pg_url: str) -> Iterator[State]:
    import asyncio

    from svc.execute.db import Database

    url = create_database(pg_url)

    async def setup() -> State:
        db = await Database.connect(url)
        try:
            async with db.transaction() as conn:
                await conn.execute(SCHEMA)
                catalog = await db.introspect(conn)
        finally:
            await db.close()
        md = metadata_from_obj(METADATA)
        found = introspection_from_schema(build_schema(REMOTE_SDL))
        resources = Resources()
        for entry in remote_schemas(md):
            resources.remotes.record(
                entry, remote_registry.Introspected({"__schema": found["__schema"]})
            )
        return State.build(1, md, catalog, resources=resources)

    built = asyncio.run(setup())
    assert not built.ir.inconsistencies
    yield built


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden_steps(state: State, case: str, snapshot: Any) -> None:
    query, variables = CASES[case]
    remotes = tuple(remote_schemas(state.metadata))
    steps = operation_sql(
        state.schema("admin"), state.ir, query, role="admin", variables=variables, remotes=remotes
    )
    text = f"-- {query}\n-- variables: {variables}\n{format_statements(steps)}"
    assert text == snapshot(extension_class=GoldenSQL)


def test_the_steps_are_statement_request_and_join(state: State) -> None:
    """What the snapshots show, as steps: a statement, a request, a join, in that order."""
    remotes = tuple(remote_schemas(state.metadata))
    for case, kinds in {
        "steps_action_with_table_relationship": [StepKind.ACTION, StepKind.ACTION_JOIN],
        "steps_remote_join": ["statement", StepKind.REMOTE_JOIN],
        "steps_remote_root_field": ["statement", StepKind.REMOTE_SCHEMA],
    }.items():
        query, variables = CASES[case]
        steps = operation_sql(
            state.schema("admin"),
            state.ir,
            query,
            role="admin",
            variables=variables,
            remotes=remotes,
        )
        assert [getattr(s, "kind", "statement") for _, s in steps] == kinds
