"""The capture side of event triggers: per event trigger and operation, a plpgsql
function and an `AFTER … FOR EACH ROW` trigger that write `hdb_catalog.event_log` in the
writing transaction (Hasura `src-rsr/trigger.sql.shakespeare`, `DDL/EventTrigger.hs`;
reference-notes §"Event triggers").

The logged payload is `{op, data: {old, new}, session_variables}`:
- rows are the operation's `payload` columns (all by default), as `row_to_json` gives
  them; PostGIS values as GeoJSON (what the API returns);
- `session_variables` is the transaction-local setting `svc.user` (JSON text that
  mutations and the legacy data operations set, `svc.api.mutation`), null for writes made
  by other clients;
- an UPDATE logs only when one of the listened `columns` changed (compared as text, so
  json columns, which have no equality, compare too).

Names: function and trigger `notify_svc_<trigger>_<OP>` (function in `hdb_catalog`).
DDL cannot take parameters, so the names written into the function body (schema, table,
trigger) are dollar-quoted literals with a tag that does not occur in them; identifiers
are quoted with `ident`.
"""

from __future__ import annotations

from dataclasses import dataclass

from svc.metadata.qualified import QualifiedName
from svc.sql.render import ident, qualified

PREFIX = "notify_svc_"
OP_NAMES = {"insert": "INSERT", "update": "UPDATE", "delete": "DELETE"}
GEO_TYPES = frozenset({"geometry", "geography"})


@dataclass(frozen=True, slots=True)
class CaptureColumn:
    """A column of the table as the capture needs it: `name`, `type_name` (Postgres's
    internal name: `int4`, `geography`)."""

    name: str
    type_name: str


@dataclass(frozen=True, slots=True)
class Capture:
    """One operation of one trigger: `trigger` (name), `table`, `op` ("insert" |
    "update" | "delete"), `listened` (UPDATE's compared columns) and `payload` (columns
    sent; `None` = the whole row) as resolved column lists."""

    trigger: str
    table: QualifiedName
    op: str
    listened: tuple[CaptureColumn, ...]
    payload: tuple[CaptureColumn, ...] | None

    @property
    def name(self) -> str:
        """The function's and the trigger's name."""
        return f"{PREFIX}{self.trigger}_{OP_NAMES[self.op]}"


def dollar(text: str) -> str:
    """`text` as a dollar-quoted SQL string literal whose tag does not occur in it."""
    n = 0
    while f"$l{n}$" in text:
        n += 1
    return f"$l{n}${text}$l{n}$"


def _row(record: str, columns: tuple[CaptureColumn, ...] | None) -> str:
    if columns is None:
        return f"row_to_json({record})"
    items = []
    for c in columns:
        value = f"{record}.{ident(c.name)}"
        if c.type_name in GEO_TYPES:
            value = f"ST_AsGeoJSON({value})::json"
        items.append(f"{value} AS {ident(c.name)}")
    return f"(SELECT row_to_json(_r) FROM (SELECT {', '.join(items)}) AS _r)"


def function_body(c: Capture) -> str:
    """The plpgsql body of `c`'s function."""
    old = "NULL" if c.op == "insert" else _row("OLD", c.payload)
    new = "NULL" if c.op == "delete" else _row("NEW", c.payload)
    guard = ""
    if c.op == "update":
        olds = ", ".join(f"OLD.{ident(x.name)}::text" for x in c.listened) or "NULL"
        news = ", ".join(f"NEW.{ident(x.name)}::text" for x in c.listened) or "NULL"
        guard = f"IF ROW({olds}, 0) IS NOT DISTINCT FROM ROW({news}, 0) THEN RETURN NULL; END IF;\n"
    session = "NULLIF(current_setting('svc.user', true), '')::json"
    payload = (
        f"json_build_object('op', '{OP_NAMES[c.op]}', 'data', "
        f"json_build_object('old', {old}, 'new', {new}), 'session_variables', {session})"
    )
    return (
        f"BEGIN\n{guard}"
        "INSERT INTO hdb_catalog.event_log (schema_name, table_name, trigger_name, payload)\n"
        f"VALUES ({dollar(c.table.schema)}, {dollar(c.table.name)}, {dollar(c.trigger)}, "
        f"{payload});\nRETURN NULL;\nEND;"
    )


def create_sql(c: Capture) -> str:
    """Create (or replace) `c`'s function and (re)create its trigger on the table."""
    body = function_body(c)
    tag = "$svc$"
    n = 0
    while tag in body:
        n += 1
        tag = f"$svc{n}$"
    fn = f"hdb_catalog.{ident(c.name)}"
    return (
        f"CREATE OR REPLACE FUNCTION {fn}() RETURNS trigger LANGUAGE plpgsql AS "
        f"{tag}\n{body}\n{tag};\n"
        f"DROP TRIGGER IF EXISTS {ident(c.name)} ON {qualified(c.table)};\n"
        f"CREATE TRIGGER {ident(c.name)} AFTER {OP_NAMES[c.op]} ON {qualified(c.table)} "
        f"FOR EACH ROW EXECUTE FUNCTION {fn}();"
    )


def drop_sql(function_name: str) -> str:
    """Drop a capture function and, with it, its trigger (`CASCADE`)."""
    return f"DROP FUNCTION IF EXISTS hdb_catalog.{ident(function_name)}() CASCADE;"


#: The capture functions present in the database (names).
EXISTING_SQL = (
    "SELECT p.proname::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
    "WHERE n.nspname = 'hdb_catalog' AND starts_with(p.proname::text, 'notify_svc_')"
)
