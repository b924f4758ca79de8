"""Which migrations are applied, recorded where the Hasura CLI records them.

The store svc writes is the one the Hasura v2 CLI uses against a v2 server for config v2
and v3 projects (`cli/migrate/database/hasuradb/migration_state_catalog_state.go`): the
`cli_state` jsonb of the one `hdb_catalog.hdb_version` row, which the server's
`set_catalog_state` (type `cli`) replaces whole and `get_catalog_state` returns
(`server/src-lib/Hasura/App.hs`, `setCatalogStateTx`):

    {"migrations": {"<database name>": {"<version>": <dirty>}},
     "settings": {"migration_mode": "true"}}

A version is its decimal text (Go's `%d`), `dirty` false once applied; a rolled-back
version's key is deleted. `settings.migration_mode` is the CLI's default setting
(`cli/migrate/database/settings.go`), written when missing.

The older store, `hdb_catalog.schema_migrations (version bigint primary key, dirty
boolean)` with `hdb_catalog.migration_settings (setting, value)` (CLI before v1.4, or
config v1), is read too: the CLI copies it into `cli_state` under `default` once, then
marks both tables as moved (`cli/internal/client/client.go`,
`MarkCLIStateTablesAsMovedToCatalogState`: a `-5` version row and a
`migrated_settings_to_catalog_state` setting). It does so only when both tables exist and
neither mark does (`CheckIfMigrationStateStoreWasMovedToCatalogState`,
`CheckIfSettingsStateWasMovedToCatalogState`); svc follows the same rule (`legacy_pending`)
and makes the same move before it first writes, so a Hasura CLI run afterwards does not
copy the old table over what svc recorded.

The statements are constants; the pure functions below turn one `cli_state` document into
the next. `svc.cli.migrate` runs them inside the transaction of each migration.
"""

from __future__ import annotations

import copy
import json
from typing import Any

#: The database name of a config v2 project (the CLI's `DefaultDatasourceName`).
DEFAULT_DATABASE = "default"
#: Settings the CLI writes when missing (`settings.go`: `migration_mode` = "true").
DEFAULT_SETTINGS = {"migration_mode": "true"}
#: The version row the CLI inserts into `schema_migrations` once it copied it.
LEGACY_MOVED_VERSION = -5
LEGACY_MOVED_SETTING = "migrated_settings_to_catalog_state"

READ_CLI_STATE_SQL = "SELECT cli_state::text FROM hdb_catalog.hdb_version"
# The row lock serialises concurrent `svc migrate apply` runs (and Hasura's own writes).
LOCK_CLI_STATE_SQL = "SELECT cli_state::text FROM hdb_catalog.hdb_version FOR UPDATE"
WRITE_CLI_STATE_SQL = "UPDATE hdb_catalog.hdb_version SET cli_state = $1::text::jsonb"
CATALOG_STATE_EXISTS_SQL = "SELECT to_regclass('hdb_catalog.hdb_version') IS NOT NULL"
LEGACY_TABLES_SQL = (
    "SELECT to_regclass('hdb_catalog.schema_migrations') IS NOT NULL,"
    " to_regclass('hdb_catalog.migration_settings') IS NOT NULL"
)
LEGACY_VERSIONS_SQL = "SELECT version, dirty FROM hdb_catalog.schema_migrations ORDER BY version"
LEGACY_VERSION_MARKED_SQL = (
    "SELECT EXISTS (SELECT 1 FROM hdb_catalog.schema_migrations WHERE version = $1::bigint)"
)
LEGACY_SETTING_MARKED_SQL = (
    "SELECT EXISTS (SELECT 1 FROM hdb_catalog.migration_settings WHERE setting = $1::text)"
)
MARK_LEGACY_VERSIONS_SQL = (
    "INSERT INTO hdb_catalog.schema_migrations (version, dirty) VALUES ($1::bigint, false)"
    " ON CONFLICT DO NOTHING"
)
MARK_LEGACY_SETTINGS_SQL = (
    "INSERT INTO hdb_catalog.migration_settings (setting, value) VALUES ($1::text, 'true')"
    " ON CONFLICT DO NOTHING"
)


class CliStateError(ValueError):
    """`cli_state` holds something that is not the CLI's shape (a version that is not a
    number, `migrations` not an object); the message names it."""


def decode_cli_state(text: str | None) -> dict[str, Any]:
    """The `cli_state` document from its JSON text (`{}` for NULL); raises
    `CliStateError` when it is not a JSON object."""
    if text is None:
        return {}
    state = json.loads(text)
    if not isinstance(state, dict):
        raise CliStateError("hdb_catalog.hdb_version.cli_state is not a JSON object")
    return state


def encode_cli_state(state: dict[str, Any]) -> str:
    """The JSON text to store (key order is jsonb's own once stored)."""
    return json.dumps(state, separators=(",", ":"), ensure_ascii=False)


def applied_versions(state: dict[str, Any], database: str) -> dict[int, bool]:
    """`{version: dirty}` recorded for `database`; raises `CliStateError` for a key
    that is not a non-negative integer (the CLI fails the same way, "parsing migration
    version") or a dirty flag that is not a boolean."""
    migrations = state.get("migrations") or {}
    if not isinstance(migrations, dict):
        raise CliStateError("cli_state.migrations is not an object")
    recorded = migrations.get(database) or {}
    if not isinstance(recorded, dict):
        raise CliStateError(f"cli_state.migrations.{database} is not an object")
    out: dict[int, bool] = {}
    for key, dirty in recorded.items():
        if not (isinstance(key, str) and key.isascii() and key.isdigit()) or not isinstance(
            dirty, bool
        ):
            raise CliStateError(f"cli_state.migrations.{database}: bad entry {key!r}: {dirty!r}")
        out[int(key)] = dirty
    return out


def migration_mode(state: dict[str, Any]) -> str:
    """The CLI's `migration_mode` setting ("true" when unset: its default)."""
    settings = state.get("settings")
    value = settings.get("migration_mode") if isinstance(settings, dict) else None
    return value if isinstance(value, str) and value else DEFAULT_SETTINGS["migration_mode"]


def _with_defaults(state: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of `state` with `migrations` an object and the default settings set
    where missing or empty (the CLI's `setDefaults`)."""
    out = copy.deepcopy(state)
    if not isinstance(out.get("migrations"), dict):
        out["migrations"] = {}
    settings = out.get("settings")
    if not isinstance(settings, dict):
        settings = out["settings"] = {}
    for name, value in DEFAULT_SETTINGS.items():
        if not settings.get(name):
            settings[name] = value
    return out


def with_version(state: dict[str, Any], database: str, version: int) -> dict[str, Any]:
    """`state` with `version` recorded as applied (not dirty) for `database`."""
    out = _with_defaults(state)
    out["migrations"].setdefault(database, {})[str(version)] = False
    return out


def without_version(state: dict[str, Any], database: str, version: int) -> dict[str, Any]:
    """`state` with `version` no longer recorded for `database` (the CLI's
    `RemoveVersion`: the key is deleted; the database's object stays, maybe empty)."""
    out = _with_defaults(state)
    out["migrations"].setdefault(database, {}).pop(str(version), None)
    return out


def with_legacy(state: dict[str, Any], legacy: dict[int, bool]) -> dict[str, Any]:
    """`state` with the versions of `schema_migrations` added under `default` (the CLI's
    `MoveMigrationsAndSettingsToCatalogState`; it replaces `cli_state` whole, svc keeps
    what `cli_state` already holds and adds the old versions with their dirty flags)."""
    out = _with_defaults(state)
    recorded = out["migrations"].setdefault(DEFAULT_DATABASE, {})
    for version, dirty in legacy.items():
        if version >= 0:
            recorded.setdefault(str(version), dirty)
    return out
