"""The options of `svc serve`: one entry each gives the command-line flag, the
`SVC_GRAPHQL_*` variable it becomes (every Granian worker reads the environment through
`svc.config.Config.from_env`), its type and its help. Add an option here and read it in
`svc/config.py`; nothing else declares it.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from svc.config import export
from svc.session_vars import HASURA_NAMES


@dataclass(frozen=True, slots=True)
class Option:
    """One `svc serve` option: `flag` (`--name`), `env` (the variable it is exported as;
    None: read by the CLI itself), `help`, `kind` (the value's type: str, int or float),
    `default` (the value the server uses when the option is unset, shown in `--help`),
    `choices`, `switch` (a flag without a value that sets the variable to `true`)."""

    flag: str
    env: str | None
    help: str
    default: str | None = None
    kind: type = str
    choices: tuple[str, ...] | None = None
    switch: bool = False

    @property
    def dest(self) -> str:
        """The argparse attribute name (`--data-dir` → `data_dir`)."""
        return self.flag[2:].replace("-", "_")

    @property
    def full_help(self) -> str:
        """The help with its variable and default: `port (SVC_GRAPHQL_SERVER_PORT, 8080)`."""
        where = ", ".join(x for x in (self.env, self.default) if x)
        return f"{self.help} ({where})" if where else self.help


SERVE_OPTIONS: tuple[Option, ...] = (
    Option(
        "--database-url", "SVC_GRAPHQL_DATABASE_URL", "Postgres URL; omitted: an embedded Postgres"
    ),
    Option("--server-host", "SVC_GRAPHQL_SERVER_HOST", "address to bind", default="0.0.0.0"),
    Option("--server-port", "SVC_GRAPHQL_SERVER_PORT", "port", default="8080", kind=int),
    Option(
        "--workers",
        "SVC_GRAPHQL_SERVER_WORKERS",
        "worker processes",
        default="the CPU count",
        kind=int,
    ),
    Option("--admin-secret", "SVC_GRAPHQL_ADMIN_SECRET", "admin secret"),
    Option(
        "--admin-secrets", "SVC_GRAPHQL_ADMIN_SECRETS", "JSON list of admin secrets, for rotation"
    ),
    Option(
        "--unauthorized-role",
        "SVC_GRAPHQL_UNAUTHORIZED_ROLE",
        "role for requests without credentials",
    ),
    Option("--auth-hook", "SVC_GRAPHQL_AUTH_HOOK", "auth webhook URL"),
    Option(
        "--auth-hook-mode",
        "SVC_GRAPHQL_AUTH_HOOK_MODE",
        "auth webhook method",
        default="GET",
        choices=("GET", "POST"),
    ),
    Option("--jwt-secret", "SVC_GRAPHQL_JWT_SECRET", "JWT configuration, JSON"),
    Option(
        "--hasura-compat",
        "SVC_GRAPHQL_HASURA_COMPAT",
        f"Hasura's names instead of svc's: {HASURA_NAMES.prefix}* request headers and "
        "session variables (metadata too), JWT claims under "
        f"{HASURA_NAMES.claims_namespace}",
        switch=True,
    ),
    Option(
        "--enable-allowlist",
        "SVC_GRAPHQL_ENABLE_ALLOWLIST",
        "non-admin GraphQL requests must be allow-listed",
        switch=True,
    ),
    Option(
        "--enabled-apis",
        "SVC_GRAPHQL_ENABLED_APIS",
        "comma-separated: graphql,metadata,config,pgdump",
    ),
    Option(
        "--enable-remote-schema-permissions",
        "SVC_GRAPHQL_ENABLE_REMOTE_SCHEMA_PERMISSIONS",
        "roles see remote schemas only through their remote schema permissions",
        switch=True,
    ),
    Option(
        "--stringify-numeric-types",
        "SVC_GRAPHQL_STRINGIFY_NUMERIC_TYPES",
        "return bigint, numeric and double precision values as strings",
        switch=True,
    ),
    Option(
        "--experimental-features",
        "SVC_GRAPHQL_EXPERIMENTAL_FEATURES",
        "comma-separated experimental features of the reference (disable_postgres_arrays: "
        "array columns stay scalars named after their type, `_text`, not GraphQL lists; "
        "group_by_aggregations: grouped aggregates, `<table>_groups`)",
    ),
    Option(
        "--server-interface",
        "SVC_GRAPHQL_SERVER_INTERFACE",
        "Granian interface: asgi serves every client (websocket sub-protocols and close "
        "codes, non-ASCII header values, %%2F in REST path variables); rsgi is faster on "
        "small queries but HTTP-only for GraphQL clients (it refuses websockets that ask "
        "for a sub-protocol, drops non-ASCII header values, splits %%2F)",
        default="asgi",
        choices=("asgi", "rsgi"),
    ),
    Option(
        "--infer-function-permissions",
        "SVC_GRAPHQL_INFER_FUNCTION_PERMISSIONS",
        "a role may call a function whose table it may select",
        default="true",
        choices=("true", "false"),
    ),
    Option("--data-dir", None, "embedded Postgres data folder (default ./.svc/pgdata)"),
    Option(
        "--graceful-shutdown-timeout",
        "SVC_GRAPHQL_GRACEFUL_SHUTDOWN_TIMEOUT",
        "seconds in-flight requests get after SIGTERM or Ctrl-C before they are cancelled",
        default="30",
        kind=float,
    ),
    Option(
        "--default-depth-limit",
        "SVC_GRAPHQL_DEFAULT_DEPTH_LIMIT",
        "deepest nesting of fields with selections when metadata sets no depth_limit",
        default="20; 0: none",
        kind=int,
    ),
    Option(
        "--default-node-limit",
        "SVC_GRAPHQL_DEFAULT_NODE_LIMIT",
        "most fields with selections in one operation when metadata sets no node_limit",
        default="500; 0: none",
        kind=int,
    ),
    Option(
        "--statement-timeout",
        "SVC_GRAPHQL_STATEMENT_TIMEOUT",
        "seconds a GraphQL statement may run unless the role's time_limit says otherwise; "
        "0: no limit",
        default="60",
        kind=float,
    ),
    Option(
        "--plan-cache-bytes",
        "SVC_GRAPHQL_PLAN_CACHE_BYTES",
        "bytes of cached plans and answers per worker, least recently used evicted first",
        default="67108864 = 64 MiB",
        kind=int,
    ),
    Option(
        "--max-body-size",
        "SVC_GRAPHQL_MAX_BODY_SIZE",
        "largest request body in bytes; larger ones get 413",
        default="33554432 = 32 MiB",
        kind=int,
    ),
    Option(
        "--live-queries-multiplexed-refetch-interval",
        "SVC_GRAPHQL_LIVE_QUERIES_MULTIPLEXED_REFETCH_INTERVAL",
        "milliseconds between two polls of a live query",
        default="1000",
        kind=int,
    ),
    Option(
        "--live-queries-multiplexed-batch-size",
        "SVC_GRAPHQL_LIVE_QUERIES_MULTIPLEXED_BATCH_SIZE",
        "live-query cohorts answered by one statement",
        default="100",
        kind=int,
    ),
    Option(
        "--streaming-queries-multiplexed-refetch-interval",
        "SVC_GRAPHQL_STREAMING_QUERIES_MULTIPLEXED_REFETCH_INTERVAL",
        "milliseconds between two polls of a streaming subscription",
        default="1000",
        kind=int,
    ),
    Option(
        "--streaming-queries-multiplexed-batch-size",
        "SVC_GRAPHQL_STREAMING_QUERIES_MULTIPLEXED_BATCH_SIZE",
        "streaming cohorts answered by one statement",
        default="100",
        kind=int,
    ),
    Option(
        "--live-queries-skip-idle",
        "SVC_GRAPHQL_LIVE_QUERIES_SKIP_IDLE",
        "skip polls of live queries whose tables saw no write heard from svc's mutations "
        "or from triggers svc creates",
        default="off",
        choices=("off", "mutations", "triggers"),
    ),
    Option(
        "--metrics-secret",
        "SVC_GRAPHQL_METRICS_SECRET",
        "bearer secret GET /v1/metrics requires (Authorization: Bearer <secret>)",
        default="none: admin only when an admin secret is set, else open",
    ),
    Option(
        "--log-level",
        "SVC_GRAPHQL_LOG_LEVEL",
        "lowest level of JSON log lines written",
        default="info",
        choices=("debug", "info", "warn", "error"),
    ),
    Option(
        "--enable-console",
        "SVC_GRAPHQL_ENABLE_CONSOLE",
        "serve GraphiQL at /console (/ redirects there)",
        default="on with the embedded Postgres, else off",
        choices=("true", "false"),
    ),
    # Event delivery
    Option(
        "--events-fetch-interval",
        "SVC_GRAPHQL_EVENTS_FETCH_INTERVAL",
        "seconds between event claims once the queue is drained",
        default="1",
        kind=float,
    ),
    Option(
        "--events-fetch-batch-size",
        "SVC_GRAPHQL_EVENTS_FETCH_BATCH_SIZE",
        "events claimed at once per process",
        default="100",
        kind=int,
    ),
    Option(
        "--events-http-pool-size",
        "SVC_GRAPHQL_EVENTS_HTTP_POOL_SIZE",
        "event deliveries in flight at once per process",
        default="100",
        kind=int,
    ),
    Option(
        "--events-lock-timeout",
        "SVC_GRAPHQL_EVENTS_LOCK_TIMEOUT",
        "seconds after which a claimed event whose process died is claimed again",
        default="60",
        kind=float,
    ),
    Option(
        "--events-retention",
        "SVC_GRAPHQL_EVENTS_RETENTION",
        "seconds after which delivered and errored events are deleted (hourly)",
        default="0: kept",
        kind=float,
    ),
)


def add_serve_options(parser: argparse.ArgumentParser) -> None:
    """Declare every option of `SERVE_OPTIONS` on `parser` (values default to None:
    unset options leave the environment as it is)."""
    for opt in SERVE_OPTIONS:
        if opt.switch:
            parser.add_argument(opt.flag, action="store_true", default=None, help=opt.full_help)
        else:
            parser.add_argument(opt.flag, type=opt.kind, choices=opt.choices, help=opt.full_help)


def export_serve_options(args: argparse.Namespace) -> None:
    """Options given on the command line become their `SVC_GRAPHQL_*` variables
    (booleans as `true`), which every Granian worker reads."""
    for opt in SERVE_OPTIONS:
        value = getattr(args, opt.dest, None)
        if opt.env is not None and value is not None:
            export(opt.env, str(value).lower() if isinstance(value, bool) else str(value))
