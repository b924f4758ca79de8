"""Which live queries may skip a poll: the tables they read and the writes svc hears of
("Beyond the reference: an idle database costs nothing"; ARCHITECTURE.md "Idle
live queries").

`SVC_GRAPHQL_LIVE_QUERIES_SKIP_IDLE` picks what svc trusts to hear every write:

- `off` (the default, the reference): every cohort is fetched every interval;
- `mutations`: svc's own GraphQL mutations are the only writers (every worker and
  instance on the database must run with `mutations` or `triggers`): each one's
  transaction notifies the tables it wrote (`svc.sql.live_watch.NOTIFY_WRITES_SQL`);
- `triggers`: svc puts a statement trigger notifying the channel on every table a live
  query reads, so any writer is heard (psql, other applications, `run_sql`).

A live query then skips a poll when all of these hold; otherwise it polls (when in
doubt, poll): the process's listener connection is up (notifications cannot be missed
unseen: each (re)connection marks everything changed); the statement calls no function
(computed fields, tracked functions: their reads are unknown); every relation it names is
a plain table without row-level security (views, materialized views, partitioned and
foreign tables change without a write to themselves); in `triggers` mode, each has its
trigger; and no notification named one of its tables since its last poll. A cohort whose
variables or session name a time-relative date (`now`, `today`, …) or whose last poll
failed is fetched every interval regardless.
"""

from __future__ import annotations

import re
from typing import Any, Protocol

import msgspec

from svc.execute.db import Database
from svc.metadata.model import QualifiedName
from svc.sql.live_watch import (
    FUNCTION_SQL,
    HAS_FUNCTION_SQL,
    HAS_TRIGGER_SQL,
    INSTALL_LOCK_SQL,
    RESOLVE_SQL,
    install_trigger_sql,
)
from svc.sql.render import qualified

MODES = ("off", "mutations", "triggers")
Tables = frozenset[tuple[str, str]]

_IDENT = r'"((?:[^"]|"")*)"'
# `"schema"."name"` as svc.sql.render.qualified writes it; followed by `(` it is a call.
_QUALIFIED = re.compile(_IDENT + r"\." + _IDENT + r"(\()?")
# Postgres's time-relative date/time inputs: a value that reads them changes with time.
_TIME_WORDS = re.compile(r"(?i)\b(now|today|tomorrow|yesterday)\b")


class Listening(Protocol):
    """The process's listener connection (`svc.execute.listener.VersionListener`)."""

    connected: bool


class WriteWatch:
    """What this process hears of writes: `mode` (one of `MODES`) and the listener whose
    `LISTEN svc_live` delivers the notifications (None: not listening)."""

    def __init__(self, mode: str, listener: Listening | None = None) -> None:
        if mode not in MODES:
            raise ValueError(f"live queries skip-idle mode must be one of {MODES}: {mode!r}")
        self.mode = mode
        self.listener = listener

    @property
    def active(self) -> bool:
        """Whether idle polls may be skipped now (a mode on, the listener connected)."""
        return self.mode != "off" and self.listener is not None and self.listener.connected


def parse_payload(text: str) -> Tables | None:
    """The tables a `svc_live` notification names; None for "anything" (`"*"`, or a
    payload svc did not write)."""
    try:
        value = msgspec.json.decode(text)
    except msgspec.DecodeError:
        return None
    if not isinstance(value, list):
        return None
    out: set[tuple[str, str]] = set()
    for pair in value:
        if not (
            isinstance(pair, list) and len(pair) == 2 and all(isinstance(p, str) for p in pair)
        ):
            return None
        out.add((pair[0], pair[1]))
    return frozenset(out)


def named_relations(sql: str) -> Tables | None:
    """Every `"schema"."name"` pair `sql` names (a superset of the relations it reads:
    `alias."column"` pairs come too, and match no relation); None when it calls a
    schema-qualified function, whose reads are unknown."""
    out: set[tuple[str, str]] = set()
    for m in _QUALIFIED.finditer(sql):
        if m.group(3):
            return None
        out.add((m.group(1).replace('""', '"'), m.group(2).replace('""', '"')))
    return frozenset(out)


def time_relative(vars_text: str) -> bool:
    """Whether a cohort's variables text may read the clock (`'now'::timestamptz`)."""
    return _TIME_WORDS.search(vars_text) is not None


async def watched_tables(db: Database, sql: str, mode: str) -> Tables | None:
    """The tables of the live statement `sql` whose writes are heard in `mode`, when
    every relation it reads is such a table (see the module docstring); else None. In
    `triggers` mode missing triggers are installed first. Raises what Postgres raised
    (`SvcError` 500 `postgres-error` when unreachable; no privilege to create a trigger):
    the caller polls and asks again later."""
    names = named_relations(sql)
    if names is None or mode == "off":
        return None
    rows = await _lookup(db, names)
    if not all(row["plain"] for row in rows):
        return None
    tables = frozenset((row["nspname"], row["relname"]) for row in rows)
    if mode == "triggers" and not all(row["watched"] for row in rows):
        await install_triggers(db, [QualifiedName(t[1], t[0]) for t in sorted(tables)])
        if not all(row["watched"] for row in await _lookup(db, tables)):
            return None  # a disabled trigger stays off: poll
    return tables


async def _lookup(db: Database, names: Tables) -> list[Any]:
    pairs = sorted(names)
    async with db.transaction(read_only=True) as conn:
        rows: list[Any] = await conn.fetch(
            RESOLVE_SQL, [p[0] for p in pairs], [p[1] for p in pairs]
        )
    return rows


async def install_triggers(db: Database, tables: list[QualifiedName]) -> None:
    """Put `svc_live_notify` on each of `tables` (and its function in `hdb_catalog`), in
    one transaction under an advisory lock (processes racing install once). Raises the
    Postgres error (e.g. `must be owner of table`)."""
    async with db.transaction() as conn:
        await conn.execute(INSTALL_LOCK_SQL)
        if not await conn.fetchval(HAS_FUNCTION_SQL):
            await conn.execute(FUNCTION_SQL)
        for table in tables:
            if not await conn.fetchval(HAS_TRIGGER_SQL, qualified(table)):
                await conn.execute(install_trigger_sql(table))
