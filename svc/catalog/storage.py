"""The `hdb_catalog` schema: version row and the metadata document.

Shapes follow the reference (`hdb_catalog.hdb_metadata(id, metadata json,
resource_version)`), so tools that read it work unchanged. Creation is idempotent.
"""

from __future__ import annotations

from svc.catalog.action_log import ACTION_LOG_DDL
from svc.catalog.scheduled import SCHEDULED_DDL

CATALOG_VERSION = "48"
NOTIFY_CHANNEL = "svc_metadata"

INIT_SQL = f"""
CREATE SCHEMA IF NOT EXISTS hdb_catalog;
CREATE TABLE IF NOT EXISTS hdb_catalog.hdb_version (
  hasura_uuid uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  version text NOT NULL,
  upgraded_on timestamptz NOT NULL,
  cli_state jsonb NOT NULL DEFAULT '{{}}'::jsonb,
  console_state jsonb NOT NULL DEFAULT '{{}}'::jsonb
);
CREATE UNIQUE INDEX IF NOT EXISTS hdb_version_one_row
  ON hdb_catalog.hdb_version((version IS NOT NULL));
INSERT INTO hdb_catalog.hdb_version (version, upgraded_on)
  VALUES ('{CATALOG_VERSION}', now()) ON CONFLICT DO NOTHING;
CREATE TABLE IF NOT EXISTS hdb_catalog.hdb_metadata (
  id integer PRIMARY KEY,
  metadata json NOT NULL,
  resource_version integer NOT NULL DEFAULT 1 UNIQUE
);
INSERT INTO hdb_catalog.hdb_metadata (id, metadata, resource_version)
  VALUES (1, '{{"version": 2, "tables": []}}', 1) ON CONFLICT DO NOTHING;
"""
INIT_SQL += ACTION_LOG_DDL  # async actions' calls
# Cron and one-off scheduled events; created with the rest, before a worker's first
# introspection, so that its catalog fingerprint (`svc_catalog_cache`) stays true.
INIT_SQL += SCHEDULED_DDL
# svc's own: the catalog introspection's last answer under the system catalogs'
# fingerprint (`svc.execute.db.Database.introspection_text`); one row, replaced whole.
INIT_SQL += """
CREATE TABLE IF NOT EXISTS hdb_catalog.svc_catalog_cache (
  id integer PRIMARY KEY,
  key text NOT NULL,
  catalog text NOT NULL
);
INSERT INTO hdb_catalog.svc_catalog_cache (id, key, catalog) VALUES (1, '', '')
  ON CONFLICT DO NOTHING;
"""
# The key also names the role reading the catalogs (what it may see could differ).
READ_CATALOG_CACHE_SQL = (
    "SELECT catalog FROM hdb_catalog.svc_catalog_cache "
    "WHERE id = 1 AND key = $1 || '/' || current_user"
)
# Written unless another transaction is writing it (no wait: that one's answer will do).
WRITE_CATALOG_CACHE_SQL = (
    "UPDATE hdb_catalog.svc_catalog_cache SET key = $1 || '/' || current_user, catalog = $2 "
    "WHERE id = (SELECT id FROM hdb_catalog.svc_catalog_cache WHERE id = 1 "
    "FOR UPDATE SKIP LOCKED)"
)

# Serialises catalog creation across processes starting at once.
INIT_LOCK_SQL = "SELECT pg_advisory_xact_lock(4242424242)"

# Whether svc's catalog exists yet (the reference creates pgcrypto only when it first
# initialises its catalog: `Hasura.Server.Migrate`, `enablePgcryptoExtension`).
CATALOG_EXISTS_SQL = "SELECT to_regclass('hdb_catalog.hdb_version') IS NOT NULL"
# Whether this server can create pgcrypto (the reference's `isExtensionAvailable`).
PGCRYPTO_AVAILABLE_SQL = (
    "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_available_extensions WHERE name = 'pgcrypto')"
)
#: The reference's message when the role may not create pgcrypto (500 `postgres-error`).
PGCRYPTO_PERMISSION = (
    "pgcrypto extension is required, but the current user doesn't have permission to "
    "create it. Please grant superuser permission, or setup the initial schema via "
    "https://hasura.io/docs/latest/graphql/core/deployment/postgres-permissions.html"
)

READ_METADATA_SQL = (
    "SELECT metadata::text, resource_version FROM hdb_catalog.hdb_metadata WHERE id = 1"
)
LOCK_METADATA_SQL = "SELECT resource_version FROM hdb_catalog.hdb_metadata WHERE id = 1 FOR UPDATE"
READ_VERSION_SQL = "SELECT resource_version FROM hdb_catalog.hdb_metadata WHERE id = 1"
WRITE_METADATA_SQL = (
    "UPDATE hdb_catalog.hdb_metadata SET metadata = $1::text::json, "
    "resource_version = resource_version + 1 WHERE id = 1 RETURNING resource_version"
)
BUMP_VERSION_SQL = (
    "UPDATE hdb_catalog.hdb_metadata SET resource_version = resource_version + 1 "
    "WHERE id = 1 RETURNING resource_version"
)
NOTIFY_SQL = "SELECT pg_notify($1, $2)"
