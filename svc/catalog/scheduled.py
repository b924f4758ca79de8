"""`hdb_catalog` tables and fixed statements of cron triggers and one-off scheduled events
(shapes of the reference's `initialise.sql`, reference-notes-wave2 §3).

`hdb_cron_events` and `hdb_scheduled_events` have the reference's columns (`status` in
scheduled, locked, delivered, error, dead; `tries`; `next_retry_at`) plus `locked`, the
claim stamp of `svc.workers` (`svc.sql.claim`): a claimed row keeps status `scheduled`
while its lock is held. `(trigger_name, scheduled_time)` is unique over all rows (the
reference: only among `scheduled` ones), so no generator, in any process, can add a time
twice, even one already delivered. Invocation logs cascade with their events.

Parameters travel as text and are cast in SQL (ARCHITECTURE "Parameters").
"""

from __future__ import annotations

# Part of `svc.catalog.storage.INIT_SQL` (run under its lock when a process starts).
SCHEDULED_DDL = """
CREATE TABLE IF NOT EXISTS hdb_catalog.hdb_cron_events (
  id text PRIMARY KEY DEFAULT gen_random_uuid()::text,
  trigger_name text NOT NULL,
  scheduled_time timestamptz NOT NULL,
  status text NOT NULL DEFAULT 'scheduled',
  tries integer NOT NULL DEFAULT 0,
  created_at timestamptz DEFAULT now(),
  next_retry_at timestamptz,
  locked timestamptz,
  CONSTRAINT valid_status
    CHECK (status IN ('scheduled', 'locked', 'delivered', 'error', 'dead'))
);
CREATE UNIQUE INDEX IF NOT EXISTS hdb_cron_events_unique_scheduled
  ON hdb_catalog.hdb_cron_events (trigger_name, scheduled_time);
CREATE INDEX IF NOT EXISTS hdb_cron_event_status
  ON hdb_catalog.hdb_cron_events (status, scheduled_time);
CREATE TABLE IF NOT EXISTS hdb_catalog.hdb_cron_event_invocation_logs (
  id text PRIMARY KEY DEFAULT gen_random_uuid()::text,
  event_id text REFERENCES hdb_catalog.hdb_cron_events (id)
    ON UPDATE CASCADE ON DELETE CASCADE,
  status integer,
  request json,
  response json,
  created_at timestamptz DEFAULT now()
);
CREATE TABLE IF NOT EXISTS hdb_catalog.hdb_scheduled_events (
  id text PRIMARY KEY DEFAULT gen_random_uuid()::text,
  webhook_conf json NOT NULL,
  scheduled_time timestamptz NOT NULL,
  retry_conf json,
  payload json,
  header_conf json,
  status text NOT NULL DEFAULT 'scheduled',
  tries integer NOT NULL DEFAULT 0,
  created_at timestamptz DEFAULT now(),
  next_retry_at timestamptz,
  comment text,
  locked timestamptz,
  CONSTRAINT valid_status
    CHECK (status IN ('scheduled', 'locked', 'delivered', 'error', 'dead'))
);
CREATE INDEX IF NOT EXISTS hdb_scheduled_event_status
  ON hdb_catalog.hdb_scheduled_events (status, scheduled_time);
-- svc: a one-off event's transforms (the reference keeps them with the event too)
ALTER TABLE hdb_catalog.hdb_scheduled_events
  ADD COLUMN IF NOT EXISTS request_transform json,
  ADD COLUMN IF NOT EXISTS response_transform json;
CREATE TABLE IF NOT EXISTS hdb_catalog.hdb_scheduled_event_invocation_logs (
  id text PRIMARY KEY DEFAULT gen_random_uuid()::text,
  event_id text REFERENCES hdb_catalog.hdb_scheduled_events (id)
    ON UPDATE CASCADE ON DELETE CASCADE,
  status integer,
  request json,
  response json,
  created_at timestamptz DEFAULT now()
);
"""

# A row is due once its time (or its retry time) has come and it was not finished.
DUE = (
    "status = 'scheduled' AND scheduled_time <= now() "
    "AND (next_retry_at IS NULL OR next_retry_at <= now())"
)

# -- cron events: $1 trigger name -------------------------------------------------------
# `$2` times (text array of ISO timestamps); a time already stored is skipped.
INSERT_CRON_EVENTS_SQL = (
    "INSERT INTO hdb_catalog.hdb_cron_events (trigger_name, scheduled_time) "
    "SELECT $1::text, t::timestamptz FROM unnest($2::text[]) AS t "
    "ON CONFLICT (trigger_name, scheduled_time) DO NOTHING"
)
# The same, only while the stored metadata has the trigger (the delivery worker's top-up:
# a trigger deleted while one of its events was in flight gets no new events).
INSERT_CRON_EVENTS_IF_STORED_SQL = (
    "INSERT INTO hdb_catalog.hdb_cron_events (trigger_name, scheduled_time) "
    "SELECT $1::text, t::timestamptz FROM unnest($2::text[]) AS t "
    "WHERE EXISTS (SELECT 1 FROM hdb_catalog.hdb_metadata m, "
    "json_array_elements(coalesce(m.metadata->'cron_triggers', '[]')) AS c "
    "WHERE c->>'name' = $1::text) "
    "ON CONFLICT (trigger_name, scheduled_time) DO NOTHING"
)
# Undelivered future events (`count`) and the latest time stored (`max`, any status),
# from which the generator continues.
CRON_HORIZON_SQL = (
    "SELECT count(*) FILTER (WHERE status = 'scheduled' AND scheduled_time > now()), "
    "max(scheduled_time)::text FROM hdb_catalog.hdb_cron_events WHERE trigger_name = $1::text"
)
# Events not delivered yet and not held by a process: a deleted trigger's (all of them) or
# a changed trigger's future ones (`$2` true) are dropped.
DROP_CRON_EVENTS_SQL = (
    "DELETE FROM hdb_catalog.hdb_cron_events WHERE trigger_name = $1::text "
    "AND status = 'scheduled' AND locked IS NULL "
    "AND (NOT $2::text::boolean OR scheduled_time > now())"
)
# A held event of a trigger no longer in the stored metadata: deleted (`$1` id, `$2` name).
DROP_ORPHAN_CRON_EVENT_SQL = (
    "DELETE FROM hdb_catalog.hdb_cron_events WHERE id = $1::text AND NOT EXISTS ("
    "SELECT 1 FROM hdb_catalog.hdb_metadata m, "
    "json_array_elements(coalesce(m.metadata->'cron_triggers', '[]')) AS t "
    "WHERE t->>'name' = $2::text) RETURNING id"
)

# -- one-off events -----------------------------------------------------------------------
# $1 webhook_conf, $2 scheduled time, $3 retry_conf, $4 payload, $5 header_conf (json
# texts), $6 comment, $7 request_transform, $8 response_transform (json texts or NULL);
# returns the new id.
INSERT_SCHEDULED_EVENT_SQL = (
    "INSERT INTO hdb_catalog.hdb_scheduled_events "
    "(webhook_conf, scheduled_time, retry_conf, payload, header_conf, comment, "
    "request_transform, response_transform) "
    "VALUES ($1::text::json, $2::text::timestamptz, $3::text::json, $4::text::json, "
    "$5::text::json, $6::text, $7::text::json, $8::text::json) RETURNING id"
)


def finish_sql(table: str) -> str:
    """Record an attempt's outcome on event `$1` of `table` (`hdb_cron_events` or
    `hdb_scheduled_events`, svc's own names, never user input): status `$2`, tries `$3`,
    next retry in `$4` seconds (NULL: none); the lock is released."""
    return (
        f"UPDATE hdb_catalog.{table} SET status = $2::text, tries = $3::text::integer, "
        "next_retry_at = now() + make_interval(secs => $4::text::float8), locked = NULL "
        "WHERE id = $1::text"
    )


def dead_sql(table: str) -> str:
    """Mark event `$1` of `table` `dead` when its due time (retry time, else scheduled
    time) lies more than `$2` seconds in the past, by Postgres' clock; returns its id
    when it did (the webhook is then not called)."""
    return (
        f"UPDATE hdb_catalog.{table} SET status = 'dead', locked = NULL "
        "WHERE id = $1::text AND now() - coalesce(next_retry_at, scheduled_time) "
        "> make_interval(secs => $2::text::float8) RETURNING id"
    )


def log_sql(table: str) -> str:
    """Insert an invocation log into `<table>` (`hdb_cron_event_invocation_logs` or
    `hdb_scheduled_event_invocation_logs`): `$1` event id, `$2` HTTP status (NULL
    without an answer), `$3` request json, `$4` response json."""
    return (
        f"INSERT INTO hdb_catalog.{table} (event_id, status, request, response) "
        "VALUES ($1::text, $2::text::integer, $3::text::json, $4::text::json)"
    )


# -- reads of `get_scheduled_events` / `get_scheduled_event_invocations` ---------------------
# The columns each kind of event is listed with (Hasura `CronEvent`, `OneOffScheduledEvent`).
EVENT_COLUMNS = {
    "cron": "id, trigger_name, scheduled_time, status, tries, created_at, next_retry_at",
    "one_off": (
        "id, webhook_conf, scheduled_time, retry_conf, payload, header_conf, status, tries, "
        "created_at, next_retry_at, comment"
    ),
}
EVENT_TABLES = {"cron": "hdb_cron_events", "one_off": "hdb_scheduled_events"}
LOG_TABLES = {
    "cron": "hdb_cron_event_invocation_logs",
    "one_off": "hdb_scheduled_event_invocation_logs",
}
# `$1` trigger name (cron only; NULL: any), `$2` statuses (text array; NULL: any).
_EVENT_FILTER = "($1::text IS NULL OR {name}) AND ($2::text[] IS NULL OR status = ANY($2::text[]))"


def events_sql(kind: str) -> tuple[str, str]:
    """`(page, count)` statements over the events of `kind` (`cron` | `one_off`): the page
    is one json array text (ordered by time, `$3` limit, NULL: all; `$4` offset), the
    count an integer; both filtered by `$1` and `$2` (`_EVENT_FILTER`)."""
    table = f"hdb_catalog.{EVENT_TABLES[kind]}"
    name = "trigger_name = $1::text" if kind == "cron" else "true"
    where = _EVENT_FILTER.format(name=name)
    page = (
        "SELECT coalesce(json_agg(e), '[]')::text FROM ("
        f"SELECT {EVENT_COLUMNS[kind]} FROM {table} WHERE {where} "
        "ORDER BY scheduled_time, id LIMIT $3::text::bigint OFFSET $4::text::bigint) AS e"
    )
    return page, f"SELECT count(*) FROM {table} WHERE {where}"


def invocations_sql(kind: str) -> tuple[str, str]:
    """`(page, count)` statements over the invocation logs of `kind`: `$1` event id (NULL:
    any), `$2` trigger name (cron only; NULL: any); newest first, `$3` limit, `$4`
    offset; rows `{id, event_id, status, request, response, created_at}`."""
    logs, events = f"hdb_catalog.{LOG_TABLES[kind]}", f"hdb_catalog.{EVENT_TABLES[kind]}"
    name = "e.trigger_name = $2::text" if kind == "cron" else "true"
    where = (
        f"FROM {logs} AS l JOIN {events} AS e ON e.id = l.event_id "
        f"WHERE ($1::text IS NULL OR l.event_id = $1::text) AND ($2::text IS NULL OR {name})"
    )
    page = (
        "SELECT coalesce(json_agg(i), '[]')::text FROM ("
        "SELECT l.id, l.event_id, l.status, l.request, l.response, l.created_at "
        f"{where} ORDER BY l.created_at DESC, l.id LIMIT $3::text::bigint "
        "OFFSET $4::text::bigint) AS i"
    )
    return page, f"SELECT count(*) {where}"


def delete_event_sql(kind: str) -> str:
    """Delete event `$1` of `kind` (its logs cascade); returns its id when it existed."""
    return f"DELETE FROM hdb_catalog.{EVENT_TABLES[kind]} WHERE id = $1::text RETURNING id"
