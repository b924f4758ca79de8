"""Server configuration: options and `SVC_GRAPHQL_*` environment variables (design brief 5).

This is the one module that reads or writes the process environment
(`tests/test_config_only.py`): the server's settings through `Config.from_env`; the few
values wanted where no `Config` is at hand through the functions below (the environment
the outbound `{{NAME}}` templates resolve in, a child process's environment, the pid of
`svc serve`); and `export`, by which `svc serve` hands its options and shared files to
the Granian workers it forks (their app factory reads them back with `Config.from_env`:
the environment is the one channel Granian passes to a worker's factory).
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Mapping
from dataclasses import dataclass, field

ALL_APIS = frozenset({"graphql", "metadata", "config", "pgdump"})


def _bool(value: str | None, default: bool = False) -> bool:
    if value is None or value == "":
        return default
    return value.strip().lower() in ("1", "true", "yes", "on")


def _admin_secrets(env: dict[str, str]) -> tuple[str, ...]:
    """`SVC_GRAPHQL_ADMIN_SECRET` plus the JSON list `SVC_GRAPHQL_ADMIN_SECRETS` (rotation).

    Raises ValueError when the list is not a JSON array of strings.
    """
    secrets: list[str] = []
    one = env.get("SVC_GRAPHQL_ADMIN_SECRET")
    if one:
        secrets.append(one)
    many = env.get("SVC_GRAPHQL_ADMIN_SECRETS")
    if many:
        parsed = json.loads(many)
        if not isinstance(parsed, list) or not all(isinstance(x, str) for x in parsed):
            raise ValueError("SVC_GRAPHQL_ADMIN_SECRETS must be a JSON list of strings")
        secrets.extend(x for x in parsed if x and x not in secrets)
    return tuple(secrets)


def _seconds(env: dict[str, str], name: str, default: float) -> float:
    """A duration in seconds (a non-negative decimal) from `env[name]`; unset or empty:
    `default`. Raises ValueError naming the variable otherwise."""
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name} must be a number of seconds, not {raw!r}") from None
    if not value >= 0 or value == float("inf"):
        raise ValueError(f"{name} must be a finite number of seconds >= 0, not {raw!r}")
    return value


def _positive(env: dict[str, str], name: str, default: int) -> int:
    """A positive integer from `env[name]`; unset or empty: `default`. Raises ValueError
    naming the variable otherwise."""
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name} must be a positive integer, not {raw!r}") from None
    if value < 1:
        raise ValueError(f"{name} must be a positive integer, not {raw!r}")
    return value


#: The reference's experimental feature keys (Hasura `server/src-lib/Hasura/Server/Types.hs`,
#: `experimentalFeatureKey`), in its order. `streaming_subscriptions` is still accepted
#: but changes nothing: streaming fields are offered by default since v2.11 (they hide
#: with `hide_stream_fields`, `svc.schema.stream.streaming_enabled`).
EXPERIMENTAL_FEATURES = (
    "inherited_roles",
    "optimize_permission_filters",
    "naming_convention",
    "streaming_subscriptions",
    "apollo_federation",
    "hide_update_many_fields",
    "bigquery_string_numeric_input",
    "hide_aggregation_predicates",
    "hide_stream_fields",
    "group_by_aggregations",
    "disable_postgres_arrays",
    "no_null_unbound_variable_default",
    "remove_empty_subscription_responses",
)


def experimental_features(env: dict[str, str] | None = None) -> tuple[str, ...]:
    """The experimental features `SVC_GRAPHQL_EXPERIMENTAL_FEATURES` (comma-separated;
    `env`, else the process environment) names, as the reference reads
    `HASURA_GRAPHQL_EXPERIMENTAL_FEATURES` (`Hasura.Server.Init.Env`, `FromEnv (HashSet
    ExperimentalFeature)`): entries stripped and lower-cased, each known key once in the
    order given. An entry the reference does not know is left out (the reference refuses
    to start; svc does not refuse its configuration here)."""
    raw = (os.environ if env is None else env).get("SVC_GRAPHQL_EXPERIMENTAL_FEATURES", "")
    named = [part.strip().lower() for part in raw.split(",")]
    return tuple(dict.fromkeys(f for f in named if f in EXPERIMENTAL_FEATURES))


#: The experimental feature that keeps Postgres array columns scalars named after their
#: Postgres type (`_text`) instead of GraphQL lists (`[String!]`): the reference's
#: `disable_postgres_arrays` (`Hasura.Server.Types`, `EFDisablePostgresArrays` →
#: `Options.DontUsePostgresArrays`).
DISABLE_POSTGRES_ARRAYS = "disable_postgres_arrays"


def postgres_arrays_as_lists(env: dict[str, str] | None = None) -> bool:
    """True unless `SVC_GRAPHQL_EXPERIMENTAL_FEATURES` (`env`, else the process
    environment) names `disable_postgres_arrays`: array columns are GraphQL lists by
    default, as in the reference (`Hasura.Backends.Postgres.Instances.Schema.columnParser`,
    `Options.UsePostgresArrays` unless the feature is on)."""
    return DISABLE_POSTGRES_ARRAYS not in experimental_features(env)


#: The experimental feature under which a source's `customization.naming_convention` and
#: `SVC_GRAPHQL_DEFAULT_NAMING_CONVENTION` apply (`svc.naming`).
NAMING_CONVENTION = "naming_convention"
#: The naming conventions (the reference's `Hasura.RQL.Types.NamingCase`: `HasuraCase`,
#: `GraphqlCase`).
NAMING_CONVENTIONS = ("hasura-default", "graphql-default")


def default_naming_convention(env: dict[str, str] | None = None) -> str | None:
    """The naming convention of a source whose customization names none:
    `SVC_GRAPHQL_DEFAULT_NAMING_CONVENTION` (`env`, else the process environment) when
    the experimental feature `naming_convention` is on (the reference's
    `HASURA_GRAPHQL_DEFAULT_NAMING_CONVENTION`, read by `getNamingConvention`); None when
    unset, empty or the feature is off. Raises ValueError naming the variable for a value
    other than `hasura-default` / `graphql-default` (the reference's
    `parseNamingConventionFromText` refuses to start)."""
    raw = (os.environ if env is None else env).get("SVC_GRAPHQL_DEFAULT_NAMING_CONVENTION", "")
    raw = raw.strip()
    if not raw:
        return None
    if raw not in NAMING_CONVENTIONS:
        raise ValueError(
            "SVC_GRAPHQL_DEFAULT_NAMING_CONVENTION: naming_convention can either be "
            f'"hasura-default" or "graphql-default", not {raw!r}'
        )
    return raw if NAMING_CONVENTION in experimental_features(env) else None


def process_environment() -> Mapping[str, str]:
    """The process environment as it is now (read-only use): outbound URL templates and
    `value_from_env` headers resolve the names metadata gives in it when a call is made
    (`svc.outbound.templates`)."""
    return os.environ


def env_value(name: str) -> str | None:
    """The value of variable `name`, None when unset: the CLI's argument defaults
    (`SVC_GRAPHQL_ENDPOINT`, `SVC_GRAPHQL_DATABASE_URL`, ...) and the C library's tuning
    (`MALLOC_MMAP_THRESHOLD_`), read before a `Config` exists."""
    return os.environ.get(name)


def child_environment(drop_prefix: str = "") -> dict[str, str]:
    """A copy of the process environment for a child process (pg_dump, the embedded
    Postgres's binaries), without the variables starting with `drop_prefix` (if given)."""
    return {k: v for k, v in os.environ.items() if not drop_prefix or not k.startswith(drop_prefix)}


def export(name: str, value: str, *, default_only: bool = False) -> None:
    """Set variable `name` for this process and the workers it starts (`svc serve`);
    `default_only`: only when it is unset (a value the operator gave wins)."""
    if default_only:
        os.environ.setdefault(name, value)
    else:
        os.environ[name] = value


SERVE_PID_ENV = "SVC_GRAPHQL_SERVE_PID"


def serve_pid() -> int | None:
    """The pid of the `svc serve` this process is (or was) a worker of, from
    `SVC_GRAPHQL_SERVE_PID`, which `svc serve` exports before Granian forks; None
    elsewhere (`svc.server.lifecycle`)."""
    value = os.environ.get(SERVE_PID_ENV, "")
    return int(value) if value.isdigit() else None


REMOTE_SCHEMA_PERMISSIONS_ENV = "SVC_GRAPHQL_ENABLE_REMOTE_SCHEMA_PERMISSIONS"


def remote_schema_permissions() -> bool:
    """Whether remote schema permissions apply (`SVC_GRAPHQL_ENABLE_REMOTE_SCHEMA_PERMISSIONS`
    true), read when a schema is built or a remote call is made
    (`svc.schema.remote_merge.permissions_enabled`)."""
    return os.environ.get(REMOTE_SCHEMA_PERMISSIONS_ENV, "").lower() in ("true", "1", "yes")


REMOTE_CONCURRENCY_ENV = "SVC_GRAPHQL_REMOTE_SCHEMA_CONCURRENCY"
REMOTE_BREAKER_THRESHOLD_ENV = "SVC_GRAPHQL_REMOTE_SCHEMA_BREAKER_THRESHOLD"
REMOTE_BREAKER_SECONDS_ENV = "SVC_GRAPHQL_REMOTE_SCHEMA_BREAKER_SECONDS"


@dataclass(frozen=True, slots=True)
class RemoteGuardConfig:
    """How calls to one remote schema are bounded in one worker process (svc extension,
    `svc.api.remote_guard`): at most `concurrency` in flight; after `threshold` failed
    calls in a row (0: never) calls fail at once for `cooldown` seconds."""

    concurrency: int = 100
    threshold: int = 5
    cooldown: float = 10.0


def remote_guard_config(env: Mapping[str, str] | None = None) -> RemoteGuardConfig:
    """`SVC_GRAPHQL_REMOTE_SCHEMA_CONCURRENCY` (default 100),
    `SVC_GRAPHQL_REMOTE_SCHEMA_BREAKER_THRESHOLD` (5; `0` turns the breaker off) and
    `SVC_GRAPHQL_REMOTE_SCHEMA_BREAKER_SECONDS` (10) from `env` (else the process
    environment). Raises ValueError naming a variable that is not a number."""
    values = dict(os.environ if env is None else env)
    off = values.get(REMOTE_BREAKER_THRESHOLD_ENV, "").strip() == "0"
    return RemoteGuardConfig(
        _positive(values, REMOTE_CONCURRENCY_ENV, 100),
        0 if off else _positive(values, REMOTE_BREAKER_THRESHOLD_ENV, 5),
        _seconds(values, REMOTE_BREAKER_SECONDS_ENV, 10.0),
    )


ASYNC_ACTIONS_LOCK_TIMEOUT_ENV = "SVC_GRAPHQL_ASYNC_ACTIONS_LOCK_TIMEOUT"


def async_actions_lock_timeout(default: float) -> float:
    """Seconds before an async-action call's lock, not renewed, is stale
    (`SVC_GRAPHQL_ASYNC_ACTIONS_LOCK_TIMEOUT`; unset or empty: `default`); read when the
    worker spec is built (`svc.api.actions.async_calls`)."""
    return float(os.environ.get(ASYNC_ACTIONS_LOCK_TIMEOUT_ENV) or default)


OUTBOUND_CLIENT_ENV = "SVC_GRAPHQL_OUTBOUND_CLIENT"
OUTBOUND_CLIENTS = ("aiohttp", "httpx")


def outbound_client(env: Mapping[str, str] | None = None) -> str:
    """The HTTP client library behind `svc.outbound` (`SVC_GRAPHQL_OUTBOUND_CLIENT`:
    `aiohttp`, the default, or `httpx`; `env`, else the process environment). aiohttp is
    the default because it delivered ~8x the requests per second of httpx in the same run
    (`bench.events`, README "Performance"); httpx stays selectable. Raises ValueError
    naming the variable for another value."""
    raw = (os.environ if env is None else env).get(OUTBOUND_CLIENT_ENV, "").strip().lower()
    if not raw:
        return OUTBOUND_CLIENTS[0]
    if raw not in OUTBOUND_CLIENTS:
        raise ValueError(f"{OUTBOUND_CLIENT_ENV} must be one of aiohttp, httpx, not {raw!r}")
    return raw


HASURA_COMPAT_ENV = "SVC_GRAPHQL_HASURA_COMPAT"


def hasura_compat(env: Mapping[str, str] | None = None) -> bool:
    """Whether the Hasura names compatibility switch is on (`SVC_GRAPHQL_HASURA_COMPAT`
    true; `env`, else the process environment): session variables, svc's request headers
    and JWT claims are spelled `x-hasura-*` instead of `x-svc-*` (`svc.session_vars`)."""
    return _bool((os.environ if env is None else env).get(HASURA_COMPAT_ENV))


MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"


def multiprocess_dir() -> str | None:
    """`PROMETHEUS_MULTIPROC_DIR` (prometheus-client's multiprocess folder), None when
    unset or empty (`svc.server.metrics`, `svc.server.metrics_folder`)."""
    return os.environ.get(MULTIPROC_ENV) or None


LOG_LEVELS = ("debug", "info", "warn", "error")


def _log_level(raw: str | None) -> str:
    """`SVC_GRAPHQL_LOG_LEVEL`: one of `LOG_LEVELS` (`warning` reads as `warn`), `info`
    when unset. Raises ValueError otherwise."""
    level = (raw or "info").strip().lower()
    level = "warn" if level == "warning" else level
    if level not in LOG_LEVELS:
        raise ValueError(f"SVC_GRAPHQL_LOG_LEVEL must be one of {', '.join(LOG_LEVELS)}")
    return level


#: The signal `svc serve` sends its workers when the graceful-shutdown period is over:
#: they cancel what is still running (svc/cli/shutdown.py, svc/server/app.py).
SHUTDOWN_CANCEL_SIGNAL = signal.SIGUSR1


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
    auth_hook: str | None = None
    auth_hook_mode: str = "GET"
    jwt_secret: str | None = None
    enable_allowlist: bool = False
    infer_function_permissions: bool = True
    # Metadata sync (ARCHITECTURE.md "Sync"): seconds between version reads on the LISTEN
    # connection, the fallback when a notification is missed (other instances
    # converge within 1 s); and the version counter file `svc serve` shares with its
    # workers (`svc.api.shared_version`), "" when the app runs under another server.
    metadata_poll_seconds: float = 0.5
    shared_version_file: str = ""
    pool_size: int = 10
    log_requests: bool = True
    # Seconds in-flight requests get after SIGTERM or Ctrl-C before they are cancelled
    # (`--graceful-shutdown-timeout`; svc/cli/shutdown.py).
    graceful_shutdown_timeout: float = 30.0
    # Time limit of a GraphQL statement, seconds (`--statement-timeout`; 0: none), unless
    # the role's `time_limit` says otherwise; Postgres stops the statement.
    statement_timeout: float = 60.0
    # Bytes of plans and repeated-request answers each worker keeps (`--plan-cache-bytes`),
    # least recently used evicted first (`svc.api.state.PlanCache`).
    plan_cache_bytes: int = 64 * 1024 * 1024
    # API limits when metadata sets none (`svc.api.limits`; 0 disables): the deepest
    # nesting of fields with selections and the most such fields in one operation. The
    # conformance corpus reaches depth 12 (the introspection query) and 59 nodes.
    default_depth_limit: int = 20
    default_node_limit: int = 500
    # The most list items one request's variables may hold (0: none): coercing a list
    # costs ~14x its bytes (a 32 MiB body of ids grew a worker by ~450 MB).
    max_list_items: int = 100_000
    # The longest regular expression operand a role other than admin may send (0: any):
    # Postgres compiles each one per statement (100,000 characters held a connection
    # for seconds).
    max_pattern_length: int = 1000
    # The answer bounds of a role other than admin (0: none; `svc.api.answer_limits`):
    # rows estimated before a query runs, bytes of what Postgres answered.
    max_answer_rows: int = 100_000
    max_response_bytes: int = 64 * 1024 * 1024
    # Read-path connections requests without credentials may use at once (the
    # unauthorized role's share; 0: no own share, -1: half of `pool_size`).
    anonymous_connections: int = -1
    # The rate-limit counter file `svc serve` shares with its workers ("" : per process).
    rate_limit_file: str = ""
    # Largest request body accepted, in bytes (`--max-body-size`); larger: 413. 32 MiB is
    # ten times the largest legitimate body known (Chinook's 2.6 MB SQL script).
    max_body_size: int = 32 * 1024 * 1024
    # Live queries (`svc.api.live`): milliseconds between two polls of a live
    # query (`--live-queries-multiplexed-refetch-interval`) and cohorts per statement
    # (`--live-queries-multiplexed-batch-size`); the reference's defaults.
    live_queries_refetch_interval: int = 1000
    live_queries_batch_size: int = 100
    # Streaming subscriptions (`x_stream`; `svc.api.live.stream`): the same two settings
    # for streams (`--streaming-queries-multiplexed-*`), the reference's defaults.
    streaming_queries_refetch_interval: int = 1000
    streaming_queries_batch_size: int = 100
    # `SVC_GRAPHQL_EXPERIMENTAL_FEATURES` (`experimental_features`), as `/v1alpha1/config`
    # reports them; the schema reads the variable itself when it is built.
    experimental_features: tuple[str, ...] = ()
    live_queries_skip_idle: str = "off"  # off | mutations | triggers (svc/api/live/watch.py)
    # The schema pgcrypto is created in when svc first initialises its catalog (the
    # reference's `HASURA_GRAPHQL_METADATA_DATABASE_EXTENSIONS_SCHEMA`, default `public`).
    extensions_schema: str = "public"
    # Operating (svc/server/metrics.py, console.py): the bearer secret of `/v1/metrics`,
    # the lowest level of log lines written, and whether `/console` serves GraphiQL.
    metrics_secret: str = ""
    log_level: str = "info"
    enable_console: bool = False
    # Websockets (`svc.server.ws_session.WsSettings`): seconds between keep-alive
    # messages, seconds graphql-transport-ws waits for `connection_init` (the reference's
    # defaults) and operations running at once per connection.
    websocket_keepalive: float = 5.0
    websocket_init_timeout: float = 3.0
    websocket_max_operations: int = 1000
    # Granian's interface `svc serve` starts (`asgi`, or `rsgi` for HTTP-only serving).
    server_interface: str = "asgi"
    # Event delivery (svc/workers/events.py): seconds between claims once the
    # queue is drained, events claimed at once, deliveries in flight, seconds before a
    # lock not renewed is stale (its process died) and the event is claimed again.
    events_fetch_interval: float = 1.0
    events_fetch_batch_size: int = 100
    events_http_pool_size: int = 100
    events_lock_timeout: float = 60.0
    # Delivered, errored and archived events older than this many seconds are deleted
    # by the delivery worker once an hour (`--events-retention`; 0: kept forever).
    events_retention: float = 0.0
    # The Hasura names compatibility switch (`--hasura-compat`, `hasura_compat`): the
    # process reads and writes `x-hasura-*` session variables, headers and JWT claims
    # (`svc.session_vars.names_for`; applied by the `App`, ARCHITECTURE.md "Session
    # variables").
    hasura_compat: bool = False

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None, **overrides: object) -> Config:
        """Read `SVC_GRAPHQL_*` variables; keyword overrides (from options) win."""
        e = dict(os.environ if env is None else env)
        outbound_client(e)  # a bad library name stops the server at start, not at a call
        default_naming_convention(e)  # a bad value stops the server at start (ValueError)
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
            "auth_hook": e.get("SVC_GRAPHQL_AUTH_HOOK") or None,
            "auth_hook_mode": (e.get("SVC_GRAPHQL_AUTH_HOOK_MODE") or "GET").upper(),
            "jwt_secret": e.get("SVC_GRAPHQL_JWT_SECRET") or None,
            "enable_allowlist": _bool(e.get("SVC_GRAPHQL_ENABLE_ALLOWLIST")),
            "infer_function_permissions": _bool(
                e.get("SVC_GRAPHQL_INFER_FUNCTION_PERMISSIONS"), True
            ),
            "admin_secrets": _admin_secrets(e),
            "graceful_shutdown_timeout": _seconds(e, "SVC_GRAPHQL_GRACEFUL_SHUTDOWN_TIMEOUT", 30.0),
            "statement_timeout": float(e.get("SVC_GRAPHQL_STATEMENT_TIMEOUT") or 60.0),
            "plan_cache_bytes": int(e.get("SVC_GRAPHQL_PLAN_CACHE_BYTES") or 64 * 1024 * 1024),
            "default_depth_limit": int(e.get("SVC_GRAPHQL_DEFAULT_DEPTH_LIMIT") or 20),
            "default_node_limit": int(e.get("SVC_GRAPHQL_DEFAULT_NODE_LIMIT") or 500),
            "max_list_items": int(e.get("SVC_GRAPHQL_MAX_LIST_ITEMS") or 100_000),
            "max_pattern_length": int(e.get("SVC_GRAPHQL_MAX_PATTERN_LENGTH") or 1000),
            "max_answer_rows": int(e.get("SVC_GRAPHQL_MAX_ANSWER_ROWS") or 100_000),
            "max_response_bytes": int(e.get("SVC_GRAPHQL_MAX_RESPONSE_BYTES") or 64 * 1024 * 1024),
            "anonymous_connections": int(e.get("SVC_GRAPHQL_ANONYMOUS_CONNECTIONS") or -1),
            "rate_limit_file": e.get("SVC_GRAPHQL_RATE_LIMIT_FILE", ""),
            "metadata_poll_seconds": float(e.get("SVC_GRAPHQL_METADATA_POLL_SECONDS") or 0.5),
            "shared_version_file": e.get("SVC_GRAPHQL_SHARED_VERSION_FILE", ""),
            "max_body_size": int(e.get("SVC_GRAPHQL_MAX_BODY_SIZE") or 32 * 1024 * 1024),
            "live_queries_refetch_interval": _positive(
                e, "SVC_GRAPHQL_LIVE_QUERIES_MULTIPLEXED_REFETCH_INTERVAL", 1000
            ),
            "live_queries_batch_size": _positive(
                e, "SVC_GRAPHQL_LIVE_QUERIES_MULTIPLEXED_BATCH_SIZE", 100
            ),
            "streaming_queries_refetch_interval": _positive(
                e, "SVC_GRAPHQL_STREAMING_QUERIES_MULTIPLEXED_REFETCH_INTERVAL", 1000
            ),
            "streaming_queries_batch_size": _positive(
                e, "SVC_GRAPHQL_STREAMING_QUERIES_MULTIPLEXED_BATCH_SIZE", 100
            ),
            "experimental_features": experimental_features(e),
            "live_queries_skip_idle": e.get("SVC_GRAPHQL_LIVE_QUERIES_SKIP_IDLE") or "off",
            "extensions_schema": e.get("SVC_GRAPHQL_METADATA_DATABASE_EXTENSIONS_SCHEMA")
            or "public",
            "metrics_secret": e.get("SVC_GRAPHQL_METRICS_SECRET", ""),
            "log_level": _log_level(e.get("SVC_GRAPHQL_LOG_LEVEL")),
            "enable_console": _bool(e.get("SVC_GRAPHQL_ENABLE_CONSOLE")),
            "events_fetch_interval": _seconds(e, "SVC_GRAPHQL_EVENTS_FETCH_INTERVAL", 1.0),
            "events_fetch_batch_size": _positive(e, "SVC_GRAPHQL_EVENTS_FETCH_BATCH_SIZE", 100),
            "events_http_pool_size": _positive(e, "SVC_GRAPHQL_EVENTS_HTTP_POOL_SIZE", 100),
            "events_lock_timeout": _seconds(e, "SVC_GRAPHQL_EVENTS_LOCK_TIMEOUT", 60.0),
            "events_retention": _seconds(e, "SVC_GRAPHQL_EVENTS_RETENTION", 0.0),
            "websocket_keepalive": float(e.get("SVC_GRAPHQL_WEBSOCKET_KEEPALIVE") or 5.0),
            "websocket_init_timeout": float(
                e.get("SVC_GRAPHQL_WEBSOCKET_CONNECTION_INIT_TIMEOUT") or 3.0
            ),
            "websocket_max_operations": int(e.get("SVC_GRAPHQL_WEBSOCKET_MAX_OPERATIONS") or 1000),
            "server_interface": e.get("SVC_GRAPHQL_SERVER_INTERFACE", "asgi").lower(),
            "hasura_compat": hasura_compat(e),
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)  # type: ignore[arg-type]
