"""pgcrypto is created when svc first initialises its catalog, as the reference does
(Hasura `Backends/Postgres/Connection/MonadTx.hs` `enablePgcryptoExtension`, called by
`Hasura.Server.Migrate` when `hdb_catalog` is new: `CREATE EXTENSION IF NOT EXISTS pgcrypto
SCHEMA <extensions schema>`, default `public`; 500 `postgres-error` with its permissions
message on 42501). Hasura projects' migrations call its functions (`crypt`, `digest`)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import asyncpg
import pytest

from svc.catalog.storage import PGCRYPTO_PERMISSION
from svc.errors import SvcError
from svc.execute.db import Database
from tests.support import create_database


def run(coro: Any) -> Any:
    return asyncio.run(coro)


async def pgcrypto_schema(url: str) -> str | None:
    conn = await asyncpg.connect(url)
    try:
        found = await conn.fetchval(
            "SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'pgcrypto'"
        )
        return None if found is None else str(found)
    finally:
        await conn.close()


async def init(url: str, schema: str = "public") -> bool:
    db = await Database.connect(url)
    try:
        return await db.init_catalog(schema)
    finally:
        await db.close()


async def sql(url: str, text: str) -> None:
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(text)
    finally:
        await conn.close()


def test_a_new_catalog_creates_pgcrypto_in_public(pg_url: str) -> None:
    url = create_database(pg_url)
    assert run(pgcrypto_schema(url)) is None
    assert run(init(url)) is True
    assert run(pgcrypto_schema(url)) == "public"
    run(sql(url, "SELECT crypt('secret', gen_salt('bf'))"))  # as Hasura projects' migrations do


def test_the_extensions_schema_setting(pg_url: str) -> None:
    url = create_database(pg_url)
    run(sql(url, "CREATE SCHEMA extensions"))
    assert run(init(url, "extensions")) is True
    assert run(pgcrypto_schema(url)) == "extensions"


def test_an_existing_catalog_is_left_alone(pg_url: str) -> None:
    """Only a new catalog creates the extension (the reference's `initialize` branch): a
    user who dropped it after the first start does not get it back."""
    url = create_database(pg_url)
    run(init(url))
    run(sql(url, "DROP EXTENSION pgcrypto"))
    assert run(init(url)) is True
    assert run(pgcrypto_schema(url)) is None


def test_a_role_that_may_not_create_it_gets_the_reference_error(pg_url: str) -> None:
    url = create_database(pg_url)
    role = f"r_{uuid.uuid4().hex[:8]}"
    run(sql(url, f"CREATE ROLE {role} LOGIN"))  # may connect, may not create in the database
    limited = url.replace("postgres@", f"{role}@", 1)
    assert limited != url
    with pytest.raises(SvcError) as raised:
        run(init(limited))
    assert raised.value.status == 500
    assert raised.value.code == "postgres-error"
    assert raised.value.message == PGCRYPTO_PERMISSION
    assert run(pgcrypto_schema(url)) is None
