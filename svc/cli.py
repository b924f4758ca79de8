"""The `svc` command: `serve`, `version`.

`svc serve` without a database URL starts a private Postgres (`svc.execute.embedded`) whose
data lives in `./.svc/pgdata`, reused on the next start and stopped on exit.
"""

from __future__ import annotations

import argparse
import os
import sys

from svc.version import VERSION


def _serve_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("serve", help="run the GraphQL server")
    p.add_argument(
        "--database-url",
        help="Postgres URL (SVC_GRAPHQL_DATABASE_URL); omitted: an embedded Postgres",
    )
    p.add_argument("--server-host", help="address to bind (SVC_GRAPHQL_SERVER_HOST, 0.0.0.0)")
    p.add_argument("--server-port", type=int, help="port (SVC_GRAPHQL_SERVER_PORT, 8080)")
    p.add_argument(
        "--workers",
        type=int,
        help="worker processes (SVC_GRAPHQL_SERVER_WORKERS, default: CPU count)",
    )
    p.add_argument("--admin-secret", help="admin secret (SVC_GRAPHQL_ADMIN_SECRET)")
    p.add_argument(
        "--admin-secrets",
        help="JSON list of admin secrets, for rotation (SVC_GRAPHQL_ADMIN_SECRETS)",
    )
    p.add_argument("--unauthorized-role", help="role for requests without credentials")
    p.add_argument("--auth-hook", help="auth webhook URL (SVC_GRAPHQL_AUTH_HOOK)")
    p.add_argument(
        "--auth-hook-mode",
        choices=["GET", "POST"],
        help="auth webhook method (SVC_GRAPHQL_AUTH_HOOK_MODE, GET)",
    )
    p.add_argument("--jwt-secret", help="JWT configuration, JSON (SVC_GRAPHQL_JWT_SECRET)")
    p.add_argument(
        "--enable-allowlist",
        action="store_true",
        default=None,
        help="non-admin GraphQL requests must be allow-listed (SVC_GRAPHQL_ENABLE_ALLOWLIST)",
    )
    p.add_argument("--enabled-apis", help="comma-separated: graphql,metadata,config,pgdump")
    p.add_argument(
        "--stringify-numeric-types",
        action="store_true",
        default=None,
        help="return bigint, numeric and double precision values as strings",
    )
    p.add_argument("--data-dir", help="embedded Postgres data folder (default ./.svc/pgdata)")


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `svc` script; returns the exit status."""
    parser = argparse.ArgumentParser(prog="svc", description="GraphQL engine over Postgres")
    sub = parser.add_subparsers(dest="command", required=True)
    _serve_parser(sub)
    sub.add_parser("version", help="print the version")
    args = parser.parse_args(argv)
    if args.command == "version":
        print(VERSION)
        return 0
    return serve(args)


def _export_options(args: argparse.Namespace) -> None:
    """Options become `SVC_GRAPHQL_*` variables, which every Granian worker reads."""
    mapping = {
        "database_url": "SVC_GRAPHQL_DATABASE_URL",
        "server_host": "SVC_GRAPHQL_SERVER_HOST",
        "server_port": "SVC_GRAPHQL_SERVER_PORT",
        "workers": "SVC_GRAPHQL_SERVER_WORKERS",
        "admin_secret": "SVC_GRAPHQL_ADMIN_SECRET",
        "admin_secrets": "SVC_GRAPHQL_ADMIN_SECRETS",
        "unauthorized_role": "SVC_GRAPHQL_UNAUTHORIZED_ROLE",
        "auth_hook": "SVC_GRAPHQL_AUTH_HOOK",
        "auth_hook_mode": "SVC_GRAPHQL_AUTH_HOOK_MODE",
        "jwt_secret": "SVC_GRAPHQL_JWT_SECRET",
        "enable_allowlist": "SVC_GRAPHQL_ENABLE_ALLOWLIST",
        "enabled_apis": "SVC_GRAPHQL_ENABLED_APIS",
        "stringify_numeric_types": "SVC_GRAPHQL_STRINGIFY_NUMERIC_TYPES",
    }
    for attr, var in mapping.items():
        value = getattr(args, attr, None)
        if value is not None:
            os.environ[var] = str(value).lower() if isinstance(value, bool) else str(value)


def serve(args: argparse.Namespace) -> int:
    """Run Granian with the ASGI app; start and stop an embedded Postgres if needed."""
    from pathlib import Path

    from granian import Granian
    from granian.constants import Interfaces

    from svc.config import Config
    from svc.execute.embedded import EmbeddedPostgres, default_data_dir

    _export_options(args)
    config = Config.from_env()
    embedded = None
    if not config.database_url:
        data_dir = Path(args.data_dir) if args.data_dir else default_data_dir()
        print(f"svc: no database URL given; embedded Postgres data in {data_dir}", flush=True)
        embedded = EmbeddedPostgres(data_dir, log=lambda m: print(f"svc: {m}", flush=True))
        os.environ["SVC_GRAPHQL_DATABASE_URL"] = embedded.start()
        print(f"svc: embedded Postgres at {embedded.url}", flush=True)
    try:
        print(f"svc: serving on http://{config.host}:{config.port}", flush=True)
        Granian(
            "svc.server.app:create_app",
            address=config.host,
            port=config.port,
            interface=Interfaces.ASGI,
            workers=config.workers,
            factory=True,
            log_access=False,
        ).serve()
    finally:
        if embedded is not None:
            embedded.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
