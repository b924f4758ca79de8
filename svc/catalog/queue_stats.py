"""Fixed statements reading how much work the background queues hold, for `/v1/metrics`
: per queue table of `hdb_catalog` (created by the features that use them, so
each may be missing), the rows waiting to be delivered now and the rows that failed."""

from __future__ import annotations

# Which of the queue tables exist (one boolean per entry of `QUEUES`, in order).
EXISTING_SQL = """
SELECT to_regclass('hdb_catalog.event_log') IS NOT NULL,
       to_regclass('hdb_catalog.hdb_cron_events') IS NOT NULL,
       to_regclass('hdb_catalog.hdb_scheduled_events') IS NOT NULL,
       to_regclass('hdb_catalog.hdb_action_log') IS NOT NULL
"""

# kind -> statement answering (pending, failed)
QUEUES: dict[str, str] = {
    "event_trigger": """
SELECT count(*) FILTER (WHERE NOT delivered AND NOT error),
       count(*) FILTER (WHERE error)
FROM hdb_catalog.event_log WHERE NOT archived""",
    "cron": """
SELECT count(*) FILTER (WHERE status IN ('scheduled', 'locked') AND scheduled_time <= now()),
       count(*) FILTER (WHERE status IN ('error', 'dead'))
FROM hdb_catalog.hdb_cron_events""",
    "one_off": """
SELECT count(*) FILTER (WHERE status IN ('scheduled', 'locked') AND scheduled_time <= now()),
       count(*) FILTER (WHERE status IN ('error', 'dead'))
FROM hdb_catalog.hdb_scheduled_events""",
    "async_action": """
SELECT count(*) FILTER (WHERE status IN ('created', 'processing')),
       count(*) FILTER (WHERE status = 'error')
FROM hdb_catalog.hdb_action_log""",
}
