"""A compiled `State` over a fresh database, for the golden-SQL modules (`tests/test_golden*.py`):
each creates its schema, builds the state from its metadata and compiles requests on it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

from svc.api.state import State
from svc.execute.db import Database
from svc.metadata.model import metadata_from_obj
from tests.support import create_database

Compiled = tuple[State, Database, asyncio.AbstractEventLoop]


def compiled_state(pg_url: str, schema_sql: str, metadata: Any) -> Iterator[Compiled]:
    """Yield (state, database, loop): `schema_sql` run in a new database, the `State` built
    from `metadata` (a v2/v3 document as a dict) and that database's catalog, the loop the
    database's connections live on. Asserts the metadata is consistent; closes all after."""
    url = create_database(pg_url)
    loop = asyncio.new_event_loop()

    async def setup() -> tuple[State, Database]:
        db = await Database.connect(url)
        async with db.transaction() as conn:
            await conn.execute(schema_sql)
            catalog = await db.introspect(conn)
        return State.build(1, metadata_from_obj(metadata), catalog), db

    state, db = loop.run_until_complete(setup())
    assert not state.ir.inconsistencies, state.ir.inconsistencies
    try:
        yield state, db, loop
    finally:
        loop.run_until_complete(db.close())
        loop.close()
