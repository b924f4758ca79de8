"""The read replicas of a source's configuration (the reference's
`read_replicas` in a Postgres source's `connection_info`,
`Hasura.Backends.Postgres.Connection.Settings`: each entry a `connection_info` of its own).
Served by `svc.execute.replicas`; an entry that cannot be used is an inconsistency of the
source (`svc.ir.sources`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from svc.config import env_value


@dataclass(frozen=True, slots=True)
class ReplicaConf:
    """One replica: its connection `url` and `size` (most query connections per worker)."""

    url: str
    size: int


def _entries(configuration: Any) -> list[Any]:
    """`configuration.connection_info.read_replicas`, [] when absent."""
    info = configuration.get("connection_info") if isinstance(configuration, dict) else None
    entries = info.get("read_replicas") if isinstance(info, dict) else None
    return entries if isinstance(entries, list) else []


def replica_confs(configuration: Any, default_size: int) -> tuple[ReplicaConf, ...]:
    """The usable replicas of a source's `configuration` (`connection_info.read_replicas`:
    each a `connection_info` with `database_url` as a string, `{from_env}` or
    `{connection_parameters}`, and `pool_settings.max_connections`, default
    `default_size`); the others are `replica_problems`."""
    confs: list[ReplicaConf] = []
    for entry in _entries(configuration):
        url = connection_url(entry.get("database_url") if isinstance(entry, dict) else None)
        if isinstance(url, UrlProblem):
            continue
        pool = entry.get("pool_settings") if isinstance(entry, dict) else None
        size = pool.get("max_connections") if isinstance(pool, dict) else None
        confs.append(ReplicaConf(url, size if isinstance(size, int) and size > 0 else default_size))
    return tuple(confs)


def replica_problems(configuration: Any) -> list[tuple[int, str]]:
    """`(index, reason)` of each replica of `configuration` that cannot be used: an
    environment variable not set, a `database_url` of another shape."""
    out = []
    for i, entry in enumerate(_entries(configuration)):
        url = connection_url(entry.get("database_url") if isinstance(entry, dict) else None)
        if isinstance(url, UrlProblem):
            out.append((i, url.reason))
    return out


def without_replica(source: Any, index: int) -> Any:
    """The served source's attributes (`Metadata.default_source`) without read replica
    `index` (`drop_inconsistent_metadata`); unchanged when there is none."""
    configuration = source.get("configuration") if isinstance(source, dict) else None
    entries = _entries(configuration)
    if not 0 <= index < len(entries):
        return source
    assert isinstance(source, dict) and isinstance(configuration, dict)
    info = {**configuration["connection_info"]}
    info["read_replicas"] = [e for i, e in enumerate(entries) if i != index]
    return {**source, "configuration": {**configuration, "connection_info": info}}


@dataclass(frozen=True, slots=True)
class UrlProblem:
    """Why a `database_url` gives no URL (`reason`, said in the inconsistency)."""

    reason: str


def connection_url(value: Any) -> str | UrlProblem:
    """The URL of a `connection_info.database_url`: a string, `{from_env}` (the variable's
    value) or `{connection_parameters}` (host, port, username, password, database), the
    reference's `UrlConf`; a `UrlProblem` when it gives none."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("from_env"), str):
        found = env_value(value["from_env"])
        if not found:
            return UrlProblem(f'environment variable "{value["from_env"]}" is not set')
        return found
    params = value.get("connection_parameters") if isinstance(value, dict) else None
    if isinstance(params, dict) and isinstance(params.get("host"), str):
        user = quote(str(params.get("username", "postgres")), safe="")
        password = params.get("password")
        auth = user + (f":{quote(str(password), safe='')}" if password else "")
        port = params.get("port", 5432)
        database = quote(str(params.get("database", "postgres")), safe="")
        return f"postgresql://{auth}@{params['host']}:{port}/{database}"
    return UrlProblem("database_url is not a string, {from_env} or {connection_parameters}")
