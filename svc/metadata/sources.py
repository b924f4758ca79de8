"""The Postgres sources svc serves besides `default` (the reference's `pg_add_source`).

A version 3 document's sources other than the served `default` are kept whole, as JSON,
in `Metadata.other_sources` (`svc.metadata.model`). Those of kind `postgres` (or no kind)
with a name of their own are *served*: their tables and functions are read with the same
rules as `default`'s (`source_view`), built into the one IR under source-qualified names
(`svc.ir.source_tables`), and run on their own connections (`svc.execute.db.Sources`).
A metadata operation with `"source": "<name>"` runs on `source_view(md, name)` and its
outcome is written back with `with_source` (`svc.api.source_focus`).

Everything else in `other_sources` (another kind, a second source of one name) stays
kept-not-served and is reported (`svc.ir.sources`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

from svc.errors import ErrorCode, SvcError
from svc.metadata.model import DEFAULT_SOURCE, JSON, SERVED_KIND, Metadata, plain
from svc.metadata.read_replicas import connection_url, replica_problems


def served_sources(md: Metadata) -> dict[str, JSON]:
    """The sources of `md` served besides `default`, by name, in document order: each a
    `postgres` source (or one without `kind`) whose name is neither `default` nor an
    earlier source's."""
    out: dict[str, JSON] = {}
    for source in md.other_sources:
        name = source.get("name") if isinstance(source, dict) else None
        if (
            isinstance(name, str)
            and name != DEFAULT_SOURCE
            and name not in out
            and source.get("kind", SERVED_KIND) == SERVED_KIND
        ):
            out[name] = source
    return out


def is_served(md: Metadata, name: str) -> bool:
    """Whether `name` is `default` or a served source of `md`."""
    return name == DEFAULT_SOURCE or name in served_sources(md)


def require_source(md: Metadata, name: str, path: str = "$.args.source") -> None:
    """Raise the reference's 400 `not-exists` `source with name "<name>" does not exist`
    at `path` unless `name` is a source `md` serves."""
    if not is_served(md, name):
        raise SvcError(ErrorCode.NOT_EXISTS, f'source with name "{name}" does not exist', path=path)


def source_view(md: Metadata, name: str, path: str = "$.args") -> Metadata:
    """`md` as an operation on source `name` sees it: that source's tables and functions
    in the places of `default`'s (typed and checked as `default`'s are:
    `metadata_from_obj`, errors at `path`), with the document's inherited roles and
    remote schemas (which every source's permissions and relationships may name), its
    name and customization as `default_source` (`view_source`), and nothing else. `md`
    itself for `default`. Raises `SvcError` for a table entry that does
    not read, and `not-exists` for a source `md` does not serve."""
    if name == DEFAULT_SOURCE:
        return md
    require_source(md, name)
    raw = served_sources(md)[name]
    return _typed(
        msgspec.json.encode(
            {"tables": raw.get("tables") or [], "functions": raw.get("functions") or []}
        ),
        path,
        md,
        {"name": name, **{k: raw[k] for k in ("customization",) if k in raw}},
    )


def view_source(md: Metadata) -> str:
    """The source `md` is the view of (`source_view`): `default` for a whole document."""
    own = md.default_source
    name = own.get("name") if isinstance(own, dict) else None
    return name if isinstance(name, str) and not md.other_sources else DEFAULT_SOURCE


def _typed(tables: bytes, path: str, md: Metadata, own: JSON) -> Metadata:
    from svc.metadata.model import metadata_from_obj  # the reader of `default`'s too

    obj = msgspec.json.decode(tables)
    view = metadata_from_obj({"version": 2, **obj}, path)
    return msgspec.structs.replace(
        view,
        inherited_roles=md.inherited_roles,
        remote_schemas=md.remote_schemas,
        default_source=own,  # its name: what its tables are stamped with (`build_ir`)
    )


def with_source(md: Metadata, name: str, view: Metadata) -> Metadata:
    """`md` with source `name`'s tables and functions taken from `view` (the outcome of an
    operation on `source_view(md, name)`); `view` itself for `default`."""
    if name == DEFAULT_SOURCE:
        return view
    tables, functions = plain(view.tables), plain(view.functions)
    return replace_source(md, name, lambda raw: _listing(raw, tables, functions))


def _listing(raw: JSON, tables: list[Any], functions: list[Any]) -> JSON:
    out = {**raw, "tables": tables}
    if functions:
        out["functions"] = functions
    else:
        out.pop("functions", None)
    return out


def replace_source(md: Metadata, name: str, change: Any) -> Metadata:
    """`md` with served source `name`'s JSON replaced by `change(raw)` (None drops it)."""
    kept: list[JSON] = []
    for source in md.other_sources:
        if isinstance(source, dict) and source.get("name") == name:
            changed = change(source)
            if changed is not None:
                kept.append(changed)
        else:
            kept.append(source)
    return msgspec.structs.replace(md, other_sources=tuple(kept))


@dataclass(frozen=True, slots=True)
class SourceConnection:
    """Where and how to connect to a served source's database: `url`, or why there is
    none (`problem`); `size` (most connections per worker, `pool_settings.max_connections`),
    `settings` (Postgres settings of every connection: `isolation_level` as
    `default_transaction_isolation`) and `idle_timeout` (seconds,
    `pool_settings.idle_timeout`). `key` changes whenever any of them does."""

    url: str | None
    problem: str | None
    size: int
    settings: tuple[tuple[str, str], ...] = ()
    idle_timeout: float = 180.0

    @property
    def key(self) -> str:
        """The settings as one string, to tell when a source must be connected again."""
        return repr((self.url, self.size, self.settings, self.idle_timeout))


# `isolation_level` values (the reference's `PGTxnIsolation` JSON names) → Postgres's.
ISOLATION_LEVELS = {
    "read-committed": "read committed",
    "repeatable-read": "repeatable read",
    "serializable": "serializable",
}
# `connection_info` keys svc applies, or that change nothing it does: `database_url`,
# `pool_settings`, `isolation_level`, `use_prepared_statements` (svc prepares every
# statement: a `false` only costs the reference a plan per request), `read_replicas`
# (`default`'s: `svc.execute.replicas`).
APPLIED_KEYS = frozenset(
    {"database_url", "pool_settings", "isolation_level", "use_prepared_statements", "read_replicas"}
)
# Of `pool_settings`, svc applies `max_connections` and `idle_timeout`; the others
# (`connection_lifetime`, `retries`, `pool_timeout`, `total_max_connections`) tune a pool
# svc does not have and change no answer (README "Many databases").


def source_connection(raw: JSON, default_size: int) -> SourceConnection:
    """The connection settings of served source `raw` (its `configuration.connection_info`:
    `database_url` a string, `{from_env}` or `{connection_parameters}`, the reference's
    `PostgresSourceConnInfo`). A key svc does not apply (`ssl_configuration`, an unknown
    `isolation_level`, …) is a `problem`: the source is then not served and is reported,
    rather than connected differently from what its configuration says."""
    configuration = raw.get("configuration")
    info = configuration.get("connection_info") if isinstance(configuration, dict) else None
    if not isinstance(info, dict):
        return SourceConnection(None, "configuration.connection_info is missing", default_size)
    unknown = sorted(k for k in info if k not in APPLIED_KEYS)
    if unknown:
        return SourceConnection(
            None, f'svc does not apply "{unknown[0]}" of connection_info', default_size
        )
    url = connection_url(info.get("database_url"))
    given = info.get("pool_settings")
    pool: dict[str, Any] = given if isinstance(given, dict) else {}
    size = pool.get("max_connections")
    size = size if isinstance(size, int) and 0 < size < default_size else default_size
    idle = pool.get("idle_timeout", 180)
    level = info.get("isolation_level", "read-committed")
    if level not in ISOLATION_LEVELS:
        return SourceConnection(None, f"unknown isolation_level {level!r}", size)
    if not isinstance(idle, int | float) or isinstance(idle, bool) or idle < 0:
        return SourceConnection(None, "pool_settings.idle_timeout must be seconds", size)
    for index, reason in replica_problems(configuration):
        return SourceConnection(None, f"read replica {index} cannot be used: {reason}", size)
    if isinstance(url, str):
        settings = (("default_transaction_isolation", ISOLATION_LEVELS[level]),)
        return SourceConnection(url, None, size, settings, float(idle))
    return SourceConnection(None, url.reason, size)
