"""Server configuration: options and `SVC_GRAPHQL_*` environment variables (design brief 5)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

ALL_APIS = frozenset({"graphql", "metadata", "config", "pgdump"})


def _bool(value: str | None, default: bool = False) -> bool:
    if value is None or value == "":
        return default
    return value.strip().lower() in ("1", "true", "yes", "on")


@dataclass(frozen=True, slots=True)
class Config:
    """Everything a running server needs to know; immutable once started."""

    database_url: str = ""
    host: str = "0.0.0.0"
    port: int = 8080
    workers: int = 1
    stringify_numeric_types: bool = False
    enabled_apis: frozenset[str] = field(default_factory=lambda: ALL_APIS)
    admin_secrets: tuple[str, ...] = ()
    unauthorized_role: str | None = None
    metadata_poll_seconds: float = 5.0
    pool_size: int = 10
    log_requests: bool = True

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None, **overrides: object) -> Config:
        """Read `SVC_GRAPHQL_*` variables; keyword overrides (from options) win."""
        e = dict(os.environ if env is None else env)
        apis = e.get("SVC_GRAPHQL_ENABLED_APIS")
        values: dict[str, object] = {
            "database_url": e.get("SVC_GRAPHQL_DATABASE_URL", ""),
            "host": e.get("SVC_GRAPHQL_SERVER_HOST", "0.0.0.0"),
            "port": int(e.get("SVC_GRAPHQL_SERVER_PORT", "8080")),
            "workers": int(e.get("SVC_GRAPHQL_SERVER_WORKERS", "0") or 0) or (os.cpu_count() or 1),
            "stringify_numeric_types": _bool(e.get("SVC_GRAPHQL_STRINGIFY_NUMERIC_TYPES")),
            "enabled_apis": frozenset(a.strip() for a in apis.split(",") if a.strip())
            if apis
            else ALL_APIS,
            "unauthorized_role": e.get("SVC_GRAPHQL_UNAUTHORIZED_ROLE") or None,
            "pool_size": int(e.get("SVC_GRAPHQL_PG_CONNECTIONS", "10")),
            "log_requests": _bool(e.get("SVC_GRAPHQL_LOG_REQUESTS"), True),
        }
        secret = e.get("SVC_GRAPHQL_ADMIN_SECRET")
        if secret:
            values["admin_secrets"] = (secret,)
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)  # type: ignore[arg-type]
