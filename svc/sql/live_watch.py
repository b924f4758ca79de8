"""SQL of write notifications for idle live queries ("an idle database costs nothing";
`svc.api.live.watch`, ARCHITECTURE.md "Idle live queries").

Every notification goes to one channel, `svc_live`, and its payload is a JSON array of
`[schema, table]` pairs (or `"*"`: anything may have changed). Two senders:

- a svc mutation's transaction (mode `mutations`) ends with `NOTIFY_WRITES_SQL`, which
  names every table the transaction wrote, as Postgres counted them (the counters of
  `pg_stat_xact_user_tables`): foreign-key cascades and user triggers' writes included;
- the statement trigger `svc_live_notify` (mode `triggers`) that `install_trigger_sql`
  puts on a table a live query reads, for writers other than svc.

Postgres delivers a notification only when its transaction commits.
"""

from __future__ import annotations

from svc.metadata.model import QualifiedName
from svc.sql.render import qualified

CHANNEL = "svc_live"
TRIGGER = "svc_live_notify"
# A NOTIFY payload must stay under 8000 bytes: longer lists say "anything" instead.
MAX_PAYLOAD = 7900

# The counters `pg_stat_xact_user_tables` shows, read directly: the view also groups
# every relation's index counts, which doubled the cost (1,000 tables: 6.7 → 3.9 ms).
NOTIFY_WRITES_SQL = f"""
SELECT pg_notify('{CHANNEL}', CASE WHEN octet_length(w.t) < {MAX_PAYLOAD} THEN w.t
  ELSE '"*"' END)
FROM (SELECT json_agg(json_build_array(n.nspname, c.relname))::text AS t
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE c.relkind IN ('r', 'p') AND n.nspname <> 'pg_catalog'
        AND pg_stat_get_xact_tuples_inserted(c.oid) + pg_stat_get_xact_tuples_updated(c.oid)
          + pg_stat_get_xact_tuples_deleted(c.oid) > 0) AS w
WHERE w.t IS NOT NULL
"""

# For candidate (schema, name) pairs: which are relations, whether each is a plain table
# without row-level security (the only kind whose reads change only with its own
# writes), and whether its `svc_live_notify` trigger is in place and enabled.
RESOLVE_SQL = f"""
SELECT n.nspname, c.relname, (c.relkind = 'r' AND NOT c.relrowsecurity) AS plain,
  EXISTS (SELECT 1 FROM pg_trigger t WHERE t.tgrelid = c.oid AND t.tgname = '{TRIGGER}'
          AND t.tgenabled <> 'D') AS watched
FROM unnest($1::text[], $2::text[]) AS w(s, r)
JOIN pg_namespace n ON n.nspname = w.s
JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = w.r
"""

# Trigger installs from several processes at once serialise on this lock; a table lock
# held by a long transaction fails the install after 2 s (the live query polls meanwhile)
# rather than stalling its poller.
INSTALL_LOCK_SQL = (
    "SELECT set_config('lock_timeout', '2000', true), pg_advisory_xact_lock(4242424243)"
)

FUNCTION_SQL = f"""
CREATE OR REPLACE FUNCTION hdb_catalog.{TRIGGER}() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('{CHANNEL}',
    json_build_array(json_build_array(TG_TABLE_SCHEMA, TG_TABLE_NAME))::text);
  RETURN NULL;
END $$
"""

HAS_FUNCTION_SQL = f"SELECT to_regprocedure('hdb_catalog.{TRIGGER}()') IS NOT NULL"

HAS_TRIGGER_SQL = f"""
SELECT EXISTS (SELECT 1 FROM pg_trigger
  WHERE tgrelid = to_regclass($1) AND tgname = '{TRIGGER}')
"""


def install_trigger_sql(table: QualifiedName) -> str:
    """`CREATE TRIGGER svc_live_notify` on `table` (identifiers quoted): after every
    INSERT, UPDATE, DELETE or TRUNCATE statement, one notification naming the table."""
    return (
        f"CREATE TRIGGER {TRIGGER} AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE "
        f"ON {qualified(table)} FOR EACH STATEMENT "
        f"EXECUTE FUNCTION hdb_catalog.{TRIGGER}()"
    )
