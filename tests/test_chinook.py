"""Chinook end to end (issue 2): load the data through `run_sql`, track it with one `bulk`,
run every benchmark query of `bench/queries/svc.graphql` and compare each answer with the
same data read by plain SQL."""

from __future__ import annotations

import asyncio
import json
import re
from collections import defaultdict
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from tests.support import SHARED, ServerProcess, create_database

CHINOOK = SHARED / "data" / "chinook" / "chinook_pg_serial_pk_proper_naming.sql"
QUERIES = SHARED / "bench" / "queries" / "svc.graphql"
TABLES = [
    "albums",
    "artists",
    "customers",
    "employees",
    "genres",
    "invoices",
    "invoice_lines",
    "media_types",
    "playlists",
    "playlist_track",
    "tracks",
]
# (table, name, kind, using)
RELATIONSHIPS = [
    ("albums", "artist", "object", {"foreign_key_constraint_on": "artist_id"}),
    (
        "albums",
        "tracks",
        "array",
        {"foreign_key_constraint_on": {"table": "tracks", "column": "album_id"}},
    ),
    (
        "artists",
        "albums",
        "array",
        {"foreign_key_constraint_on": {"table": "albums", "column": "artist_id"}},
    ),
    ("tracks", "album", "object", {"foreign_key_constraint_on": "album_id"}),
    ("tracks", "genre", "object", {"foreign_key_constraint_on": "genre_id"}),
    ("tracks", "media_type", "object", {"foreign_key_constraint_on": "media_type_id"}),
    (
        "genres",
        "tracks",
        "array",
        {"foreign_key_constraint_on": {"table": "tracks", "column": "genre_id"}},
    ),
    (
        "media_types",
        "tracks",
        "array",
        {"foreign_key_constraint_on": {"table": "tracks", "column": "media_type_id"}},
    ),
]

pytestmark = pytest.mark.skipif(
    not CHINOOK.exists(), reason="../shared/data/chinook not found (a user's clone)"
)


def track_bulk() -> dict[str, Any]:
    """One `bulk`: track the 11 tables and the benchmark's relationships."""
    steps: list[dict[str, Any]] = [
        {"type": "track_table", "args": {"schema": "public", "name": t}} for t in TABLES
    ]
    for table, name, kind, using in RELATIONSHIPS:
        steps.append(
            {
                "type": f"create_{kind}_relationship",
                "args": {"table": table, "name": name, "using": using},
            }
        )
    return {"type": "bulk", "args": steps}


def benchmark_queries() -> dict[str, str]:
    """`{operation name: document}` from the benchmark file."""
    text = QUERIES.read_text()
    parts = re.split(r"(?m)^query ", text)[1:]
    return {p.split()[0]: "query " + p.strip() for p in parts}


@pytest.fixture(scope="module")
def chinook(pg_url: str) -> Iterator[tuple[ServerProcess, str]]:
    url = create_database(pg_url)
    srv = ServerProcess(url)
    try:
        r = srv.query({"type": "run_sql", "args": {"sql": CHINOOK.read_text()}})
        assert r.status_code == 200, r.text[:2000]
        r = srv.query(track_bulk())
        assert r.status_code == 200, r.text[:2000]
        assert r.json() == [{"message": "success"}] * (len(TABLES) + len(RELATIONSHIPS))
        yield srv, url
    finally:
        srv.stop()


def fetch(url: str, sql: str, *args: Any) -> list[dict[str, Any]]:
    async def go() -> list[dict[str, Any]]:
        conn = await asyncpg.connect(url)
        try:
            return [dict(r) for r in await conn.fetch(sql, *args)]
        finally:
            await conn.close()

    return asyncio.run(go())


def by_id(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: r["id"])


def canon(value: Any) -> Any:
    """Order-insensitive form: lists of objects sorted by `id`, numbers as Decimal."""
    if isinstance(value, list):
        items = [canon(v) for v in value]
        if items and all(isinstance(i, dict) and "id" in i for i in items):
            return sorted(items, key=lambda i: i["id"])
        return items
    if isinstance(value, dict):
        return {k: canon(v) for k, v in value.items()}
    if isinstance(value, float | int | Decimal) and not isinstance(value, bool):
        return Decimal(str(value))
    return value


def expected(url: str, name: str) -> Any:
    """The answer of benchmark query `name`, from plain SQL and Python."""
    genres = {r["id"]: r["name"] for r in fetch(url, "select id, name from genres")}
    media = {r["id"]: r["name"] for r in fetch(url, "select id, name from media_types")}
    if name in ("albums_tracks_genre_all", "albums_tracks_genre_some"):
        where = "" if name.endswith("all") else "where artist_id = 127"
        albums = fetch(url, f"select id, title from albums {where}")
        tracks: dict[int, list[dict[str, Any]]] = defaultdict(list)
        for t in fetch(url, "select id, name, album_id, genre_id from tracks"):
            genre = {"name": genres[t["genre_id"]]} if t["genre_id"] is not None else None
            tracks[t["album_id"]].append({"id": t["id"], "name": t["name"], "genre": genre})
        return {"albums": [{**a, "tracks": tracks[a["id"]]} for a in albums]}
    if name == "tracks_media_all":
        rows = fetch(url, "select id, name, media_type_id from tracks")
        return {
            "tracks": [
                {
                    "id": r["id"],
                    "name": r["name"],
                    "media_type": {"name": media[r["media_type_id"]]},
                }
                for r in rows
            ]
        }
    if name == "tracks_media_some":
        rows = fetch(
            url,
            "select t.id, t.name, t.media_type_id, a.id as aid, a.title "
            "from tracks t join albums a on a.id = t.album_id "
            "where t.composer = 'Kurt Cobain'",
        )
        return {
            "tracks": [
                {
                    "id": r["id"],
                    "name": r["name"],
                    "album": {"id": r["aid"], "title": r["title"]},
                    "media_type": {"name": media[r["media_type_id"]]},
                }
                for r in rows
            ]
        }
    if name == "artist_by_pk":
        rows = fetch(url, "select id, name from artists where id = 3")
        return {"artists_by_pk": rows[0] if rows else None}
    if name == "search_albums_with_artist":
        rows = fetch(
            url,
            "select al.id, al.title, ar.id as arid, ar.name from albums al "
            "join artists ar on ar.id = al.artist_id where al.title like '%Rock%'",
        )
        return {
            "albums": [
                {"id": r["id"], "title": r["title"], "artist": {"id": r["arid"], "name": r["name"]}}
                for r in rows
            ]
        }
    if name == "artists_collaboration":
        rows = fetch(
            url,
            "select id, name from artists ar where exists (select 1 from albums al "
            "join tracks t on t.album_id = al.id where al.artist_id = ar.id "
            "and t.composer = 'Ludwig van Beethoven')",
        )
        return {"artists": rows}
    if name == "tracks_aggregate_by_genre":
        r = fetch(
            url,
            "select count(*) as count, avg(milliseconds) as avg, "
            "max(unit_price) as max from tracks where genre_id = 1",
        )[0]
        return {
            "tracks_aggregate": {
                "aggregate": {
                    "count": r["count"],
                    "avg": {"milliseconds": r["avg"]},
                    "max": {"unit_price": r["max"]},
                }
            }
        }
    raise AssertionError(f"no reference for {name}")


@pytest.mark.parametrize("name", list(benchmark_queries()) if QUERIES.exists() else [])
def test_benchmark_query_matches_plain_sql(chinook: tuple[ServerProcess, str], name: str) -> None:
    srv, url = chinook
    response = srv.client.post("/v1/graphql", json={"query": benchmark_queries()[name]})
    body = json.loads(response.text, parse_float=Decimal)  # exact numbers, as Postgres sent
    assert "errors" not in body, body
    want = expected(url, name)
    assert canon(body["data"]) == canon(want)
    if isinstance(want.get(next(iter(want))), list):
        assert len(next(iter(body["data"].values()))) > 0


def test_every_benchmark_query_has_a_reference() -> None:
    assert set(benchmark_queries()) == {
        "albums_tracks_genre_all",
        "albums_tracks_genre_some",
        "tracks_media_all",
        "tracks_media_some",
        "artist_by_pk",
        "search_albums_with_artist",
        "artists_collaboration",
        "tracks_aggregate_by_genre",
    }


def test_script_size() -> None:
    """The load exercises run_sql with a multi-megabyte script of many statements."""
    assert CHINOOK.stat().st_size > 2_000_000
    assert Path(CHINOOK).read_text().count(";") > 10_000


# Nested queries over whole tables; svc renders their relationships differently (object
# JSON inside the join, array relationships grouped once for all parents) from the same
# query with a root filter that keeps every row, so the two answers must be equal.
WHOLE_TABLE_QUERIES = [
    "artists(order_by: {id: asc}{w}) { id albums(order_by: {id: asc}) { id"
    " tracks(order_by: {id: desc}) { id genre { name } media_type { name } } } }",
    "genres(order_by: {id: asc}{w}) { name tracks(order_by: [{name: asc}, {id: asc}])"
    " { name album { title artist { name } } } }",
    "albums(order_by: {id: asc}{w}) { title"
    " tracks(order_by: [{genre: {name: desc}}, {id: asc}]) { name } }",
    "media_types(order_by: {id: asc}{w}) { name tracks(where: {milliseconds: {_gt: 300000}},"
    " order_by: {id: asc}) { id } }",
]


@pytest.mark.parametrize("template", WHOLE_TABLE_QUERIES)
def test_whole_table_shapes_match_filtered(
    chinook: tuple[ServerProcess, str], template: str
) -> None:
    srv, _ = chinook
    whole = srv.graphql("{ " + template.replace("{w}", "") + " }")
    kept = srv.graphql("{ " + template.replace("{w}", ", where: {id: {_is_null: false}}") + " }")
    assert "errors" not in whole, whole
    assert whole == kept
    rows = next(iter(whole["data"].values()))
    assert rows and any(next(v for v in r.values() if isinstance(v, list)) for r in rows)
