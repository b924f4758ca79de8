"""The statements of a work queue table (`svc.workers`): claim due rows, keep claims
fresh, release them.

A queue is a table with a key column and a lock column (`timestamptz`, NULL when no
process holds the row; the reference's `event_log.locked`). A claim sets the lock to the
claiming transaction's `now()`, which is also the claim's *stamp*: a process touches or
releases only rows whose lock still equals its stamp, so a row reclaimed by another
process after it went stale is never released by the first. The claim's shape is the
reference's event fetch (Hasura `fetchEvents`: `UPDATE … WHERE id IN (SELECT … FOR
UPDATE SKIP LOCKED LIMIT n) RETURNING …`), so concurrent claimers never wait for, nor
take, one another's rows.

Parameters travel as text and are cast in SQL (ARCHITECTURE "Parameters"): claim `$1`
row limit, `$2` stale bound in seconds; touch/release `$1` keys, `$2` stamps (text arrays
of equal length).
"""

from __future__ import annotations

from dataclasses import dataclass

from svc.sql.render import ident


@dataclass(frozen=True, slots=True)
class QueueTable:
    """Where a worker's rows live and when one is due.

    `schema`, `table`, `key` (unique column), `locked` (timestamptz) are identifiers,
    quoted when rendered. `key_type` (the key's SQL type, e.g. `bigint`, `text`, `uuid`)
    and `due` (a predicate over the table's own columns, unqualified, e.g. `NOT delivered
    AND NOT error`) are SQL text written in svc's code, never user input. `order`: the
    columns giving claim order among due rows (oldest first), after never-locked rows.
    """

    schema: str
    table: str
    key: str = "id"
    key_type: str = "text"
    locked: str = "locked"
    due: str = "true"
    order: tuple[str, ...] = ()


def _name(q: QueueTable) -> str:
    return f"{ident(q.schema)}.{ident(q.table)}"


def claim_sql(q: QueueTable) -> str:
    """Claim up to `$1` due rows that are free or whose lock is older than `$2` seconds.

    Returns rows `(key::text, stamp::text, row_to_json(row))`: the key, the claim's stamp
    (the new lock value) and the whole row as claimed (json)."""
    key, locked = ident(q.key), ident(q.locked)
    order = ", ".join([f"c.{locked} NULLS FIRST", *(f"c.{ident(c)}" for c in q.order)])
    return (
        f"UPDATE {_name(q)} AS q SET {locked} = now() "
        f"WHERE q.{key} IN (SELECT c.{key} FROM {_name(q)} AS c "
        f"WHERE ({q.due}) AND (c.{locked} IS NULL "
        f"OR c.{locked} < now() - make_interval(secs => $2::text::float8)) "
        f"ORDER BY {order} LIMIT $1::text::integer FOR UPDATE SKIP LOCKED) "
        f"RETURNING q.{key}::text, q.{locked}::text, row_to_json(q)"
    )


def _by_stamp(q: QueueTable, value: str, returning: str) -> str:
    # The rows are locked in key order first (`ORDER BY … FOR UPDATE`): every multi-row
    # statement on a queue locks that way, so a process's renewal and its batched result
    # write (`svc.catalog.event_log.RECORD_ATTEMPTS_SQL`) never deadlock (they did, in
    # hash-join order: the write's batch failed and its delivered events were sent again).
    key, locked = ident(q.key), ident(q.locked)
    return (
        f"WITH l AS MATERIALIZED (SELECT c.{key} FROM {_name(q)} AS c "
        f"JOIN unnest($1::text[], $2::text[]) AS h(k, stamp) "
        f"ON c.{key} = h.k::{q.key_type} AND c.{locked} = h.stamp::timestamptz "
        f"ORDER BY c.{key} FOR UPDATE OF c) "
        f"UPDATE {_name(q)} AS q SET {locked} = {value} FROM l WHERE q.{key} = l.{key} "
        f"RETURNING {returning}"
    )


def touch_sql(q: QueueTable) -> str:
    """Renew the claims on keys `$1` held with stamps `$2` (lock := now()); returns
    `(key::text, new stamp::text)` of each row still held (a missing key was reclaimed
    or finished)."""
    return _by_stamp(q, "now()", f"q.{ident(q.key)}::text, q.{ident(q.locked)}::text")


def release_sql(q: QueueTable) -> str:
    """Unlock keys `$1` held with stamps `$2` (lock := NULL, so any process may claim
    them again); returns the keys released."""
    return _by_stamp(q, "NULL", f"q.{ident(q.key)}::text")
