"""The event tables of `hdb_catalog` and their fixed statements (reference shapes,
reference-notes §"Catalog tables": `event_log`, `event_invocation_logs`).

Created when the first event trigger is created (`CREATE … IF NOT EXISTS`, idempotent)
and dropped by `clear_metadata` (as the reference drops a source's catalog). Timestamps
without time zone are UTC whatever the session's time zone (`timezone('utc', now())`),
so `created_at` means the same for events written by any client.
"""

from __future__ import annotations

EVENT_LOG_DDL = """
CREATE TABLE IF NOT EXISTS hdb_catalog.event_log (
  id text PRIMARY KEY DEFAULT gen_random_uuid()::text,
  schema_name text NOT NULL,
  table_name text NOT NULL,
  trigger_name text NOT NULL,
  payload jsonb NOT NULL,
  delivered boolean NOT NULL DEFAULT false,
  error boolean NOT NULL DEFAULT false,
  tries integer NOT NULL DEFAULT 0,
  created_at timestamp DEFAULT timezone('utc', now()),
  locked timestamptz,
  next_retry_at timestamp,
  archived boolean NOT NULL DEFAULT false
);
CREATE INDEX IF NOT EXISTS event_log_trigger_name_idx ON hdb_catalog.event_log (trigger_name);
CREATE INDEX IF NOT EXISTS event_log_fetch_events ON hdb_catalog.event_log
  (locked NULLS FIRST, next_retry_at NULLS FIRST, created_at)
  WHERE delivered = false AND error = false AND archived = false;
CREATE TABLE IF NOT EXISTS hdb_catalog.event_invocation_logs (
  id text PRIMARY KEY DEFAULT gen_random_uuid()::text,
  event_id text REFERENCES hdb_catalog.event_log (id) ON DELETE CASCADE,
  status integer,
  request json,
  response json,
  created_at timestamp DEFAULT timezone('utc', now())
);
CREATE INDEX IF NOT EXISTS event_invocation_logs_event_id_idx
  ON hdb_catalog.event_invocation_logs (event_id);
"""

DROP_EVENT_LOG_SQL = """
DROP TABLE IF EXISTS hdb_catalog.event_invocation_logs;
DROP TABLE IF EXISTS hdb_catalog.event_log;
"""

EVENT_LOG_EXISTS_SQL = "SELECT to_regclass('hdb_catalog.event_log') IS NOT NULL"

#: The worker's due predicate (over `event_log`'s own columns, `svc.sql.claim`).
DUE = (
    "NOT delivered AND NOT error AND NOT archived "
    "AND (next_retry_at IS NULL OR next_retry_at <= timezone('utc', now()))"
)

#: `invoke_event_trigger`: $1 schema, $2 table, $3 trigger, $4 payload (json text).
INSERT_EVENT_SQL = (
    "INSERT INTO hdb_catalog.event_log (schema_name, table_name, trigger_name, payload) "
    "VALUES ($1, $2, $3, $4::text::jsonb) RETURNING id"
)

#: `redeliver_event`: $1 event id; returns the id when the event exists.
REDELIVER_SQL = (
    "UPDATE hdb_catalog.event_log SET delivered = false, error = false, tries = 0, "
    "next_retry_at = NULL, locked = NULL, archived = false WHERE id = $1 RETURNING id"
)

#: `delete_event_trigger`: pending events of the trigger ($1) are archived, not sent.
ARCHIVE_SQL = (
    "UPDATE hdb_catalog.event_log SET archived = true "
    "WHERE trigger_name = $1 AND NOT delivered AND NOT error"
)

#: Attempts of many events, in one statement (atomic without a transaction; one commit
#: for a batch, `svc.workers.group_write`): their invocation logs and outcomes, locks
#: released. Parallel text arrays: $1 ids, $2 statuses (NULL: no answer), $3 requests,
#: $4 responses (json texts), $5 delivered, $6 error ('true'/'false'), $7 seconds to
#: the next attempt (NULL: none). An event unlocked meanwhile (`redeliver_event`) keeps
#: its new state. Rows are locked in id order first, as every multi-row queue statement
#: (`svc.sql.claim`), so this write and the worker's lock renewal cannot deadlock.
RECORD_ATTEMPTS_SQL = (
    "WITH r AS (SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], "
    "$5::text[], $6::text[], $7::text[]) "
    "AS r(id, status, request, response, delivered, error, retry_in)), "
    "l AS MATERIALIZED (SELECT e.id FROM hdb_catalog.event_log e JOIN r ON e.id = r.id "
    "WHERE e.locked IS NOT NULL ORDER BY e.id FOR UPDATE OF e), "
    "log AS (INSERT INTO hdb_catalog.event_invocation_logs "
    "(event_id, status, request, response) "
    "SELECT id, status::integer, request::json, response::json FROM r) "
    "UPDATE hdb_catalog.event_log e SET tries = e.tries + 1, "
    "delivered = r.delivered::boolean, error = r.error::boolean, locked = NULL, "
    "next_retry_at = CASE WHEN r.retry_in IS NULL THEN NULL "
    "ELSE timezone('utc', now()) + make_interval(secs => r.retry_in::float8) END "
    "FROM r JOIN l ON l.id = r.id WHERE e.id = r.id"
)

#: Put an event back without an attempt (its trigger is unknown here or paused): $1 id,
#: $2 seconds until it is due again.
POSTPONE_SQL = (
    "UPDATE hdb_catalog.event_log SET locked = NULL, "
    "next_retry_at = timezone('utc', now()) + make_interval(secs => $2::text::float8) "
    "WHERE id = $1"
)

#: `svc events cleanup` / automatic cleanup: delete delivered and errored events created
#: more than $1 seconds ago; returns the count.
CLEANUP_SQL = (
    "WITH gone AS (DELETE FROM hdb_catalog.event_log WHERE (delivered OR error OR archived) "
    "AND created_at < timezone('utc', now()) - make_interval(secs => $1::text::float8) "
    "RETURNING 1) SELECT count(*) FROM gone"
)
