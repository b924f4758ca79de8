"""The `svc` command: `serve`, `version`, `metadata export|apply|diff`, `compile`, `migrate`.

`svc serve` without a database URL starts a private Postgres (`svc.embedded`) whose
data lives in `./.svc/pgdata`, reused on the next start and stopped on exit. The options of
every command are declared here; `svc metadata …` runs `svc.cli.metadata`, `svc compile`
runs `svc.cli.compile`, imported only then, so `svc serve` and `svc version` load no more
than before.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from svc import logs
from svc.cli import events as events_command
from svc.cli import migrate as migrate_command
from svc.cli.serve_options import add_serve_options, export_serve_options
from svc.config import HASURA_COMPAT_ENV, SERVE_PID_ENV, env_value, export, hasura_compat
from svc.session_vars import ADMIN_ROLE, HASURA_COMPAT_FLAG, names_for, use_names
from svc.version import VERSION


def _serve_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    add_serve_options(sub.add_parser("serve", help="run the GraphQL server"))


def _metadata_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("metadata", help="export, apply or diff a metadata directory")
    commands = p.add_subparsers(dest="metadata_command", required=True)
    helps = {
        "export": "write the server's metadata into DIR (config v2, or v3 when DIR is v3)",
        "apply": "replace the server's metadata with the contents of DIR (config v2 or v3)",
        "diff": "show what apply would change (unified diff, server -> DIR)",
    }
    for name, text in helps.items():
        c = commands.add_parser(name, help=text)
        c.add_argument(
            "--endpoint",
            default=env_value("SVC_GRAPHQL_ENDPOINT"),
            required=env_value("SVC_GRAPHQL_ENDPOINT") is None,
            help="server base URL, e.g. http://localhost:8080 (SVC_GRAPHQL_ENDPOINT)",
        )
        c.add_argument(
            "--dir",
            type=Path,
            help="the metadata directory (default: the project's, as the Hasura CLI finds "
            "it: config.yaml's metadata_directory, else metadata)",
        )
        c.add_argument(
            "--project",
            type=Path,
            default=Path("."),
            help="the Hasura CLI project holding config.yaml (default .); used without --dir",
        )
        c.add_argument(
            "--admin-secret",
            default=env_value("SVC_GRAPHQL_ADMIN_SECRET"),
            help="admin secret (SVC_GRAPHQL_ADMIN_SECRET)",
        )
        _hasura_compat_argument(c, "the server runs with --hasura-compat")
        if name == "export":
            c.add_argument(
                "--config-version",
                type=int,
                choices=(2, 3),
                help="directory format to write: 2 (tables.yaml, …) or 3 (databases/…); "
                "default: DIR's version.yaml, else 2",
            )


def _compile_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("compile", help="check a metadata directory against a database")
    p.add_argument(
        "--dir", required=True, type=Path, help="the metadata directory (config v2 or v3)"
    )
    p.add_argument(
        "--database-url",
        default=env_value("SVC_GRAPHQL_DATABASE_URL"),
        required=env_value("SVC_GRAPHQL_DATABASE_URL") is None,
        help="Postgres URL to introspect (SVC_GRAPHQL_DATABASE_URL)",
    )
    p.add_argument("--print-schema", metavar="ROLE", help="print the GraphQL SDL of ROLE")
    p.add_argument(
        "--print-sql", metavar="FILE", type=Path, help="print the SQL of the operation in FILE"
    )
    p.add_argument("--role", default=ADMIN_ROLE, help="role of --print-sql (default admin)")
    p.add_argument("--variables", help="JSON object of variables for --print-sql")
    p.add_argument("--operation-name", help="operation of --print-sql when FILE has several")
    p.add_argument(
        "--stringify-numeric-types",
        action="store_true",
        help="the SQL a server started with --stringify-numeric-types runs",
    )
    _hasura_compat_argument(p, "check as a server started with --hasura-compat reads")


def _hasura_compat_argument(parser: argparse.ArgumentParser, meaning: str) -> None:
    """`--hasura-compat` of `svc compile` and `svc metadata`: Hasura's session names
    (`svc.session_vars`), as `svc serve --hasura-compat` has them."""
    parser.add_argument(
        HASURA_COMPAT_FLAG,
        action="store_true",
        default=None,
        help=f"Hasura's session variable and header names: {meaning} ({HASURA_COMPAT_ENV})",
    )


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `svc` script; returns the exit status."""
    parser = argparse.ArgumentParser(prog="svc", description="GraphQL engine over Postgres")
    sub = parser.add_subparsers(dest="command", required=True)
    _serve_parser(sub)
    sub.add_parser("version", help="print the version")
    _metadata_parser(sub)
    _compile_parser(sub)
    events_command.add_parser(sub)  # svc events cleanup
    migrate_command.add_parser(sub)  # svc migrate apply|status|create
    args = parser.parse_args(argv)
    logs.setup()
    # The session names of this process (`svc serve`'s workers choose theirs in the app):
    # metadata read here is checked as the server with the same setting reads it.
    use_names(names_for(bool(getattr(args, "hasura_compat", None)) or hasura_compat()))
    if args.command == "version":
        print(VERSION)
        return 0
    if args.command == "metadata":
        from svc.cli import metadata

        return metadata.run(args)
    if args.command == "events":
        return events_command.run(args)
    if args.command == "migrate":
        return migrate_command.run(args)
    if args.command == "compile":
        from svc.cli import compile as compile_command

        return compile_command.run(args)
    return serve(args)


def _fixed_mmap_threshold() -> None:
    """glibc: allocations of 128 KiB and more get their own mapping, returned to the system
    when freed (`mallopt(M_MMAP_THRESHOLD)`, inherited by the forked workers). By default
    glibc raises that threshold to the largest block freed so far, after which freed 1 MB
    request texts stay in the heap: 300 requests with distinct 1 MB literals left each
    worker ~30 MB larger than with the threshold fixed (ARCHITECTURE.md "Serving"). Not
    glibc, or `MALLOC_MMAP_THRESHOLD_` set: nothing."""
    if env_value("MALLOC_MMAP_THRESHOLD_") or not sys.platform.startswith("linux"):
        return
    import contextlib
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").mallopt(-3, 128 * 1024)  # M_MMAP_THRESHOLD


def _database_problem(url: str) -> str | None:
    """Why Postgres at `url` cannot be reached (None when it can): checked once before
    the workers start, so a wrong URL fails at once with one line, not after each worker
    waited for it (`svc.api.engine.STARTUP_WAIT_S`)."""
    import asyncio

    from svc.errors import SvcError
    from svc.execute.db import Database

    async def probe() -> None:
        db = await Database.connect(url, min_size=1, max_size=1)
        await db.close()

    try:
        asyncio.run(probe())
    except SvcError as exc:
        internal = exc.internal if isinstance(exc.internal, dict) else {}
        return str(internal.get("message") or exc.message)
    return None


def serve(args: argparse.Namespace) -> int:
    """Run Granian with the ASGI app; start and stop an embedded Postgres if needed. The
    workers share a metadata version counter file (`svc.api.shared_version`, read-your-
    writes across workers), created here and removed on exit.

    Shutdown (`svc/cli/shutdown.py`): on SIGINT/SIGTERM in-flight requests get
    `--graceful-shutdown-timeout` seconds, then are cancelled; Granian kills a worker still
    alive `CANCEL_WINDOW_S` later. The embedded Postgres is stopped whatever happened
    (`finally`, signals ignored meanwhile). Returns 0, or 130 when a second signal
    interrupted the start; Granian exits 1 itself when a worker died unexpectedly."""
    from svc.api import shared_version
    from svc.api.limits import create_rate_file
    from svc.cli.shutdown import ShutdownSignals, granian_worker_pids
    from svc.config import Config
    from svc.server import metrics_folder

    export_serve_options(args)
    _fixed_mmap_threshold()
    config = Config.from_env()
    # Workers recognise their parent by this (svc.server.lifecycle): only workers of
    # `svc serve` take part in its bounded shutdown.
    export(SERVE_PID_ENV, str(os.getpid()))
    server: Any = None
    signals = ShutdownSignals(
        config.graceful_shutdown_timeout,
        lambda: granian_worker_pids(server),
        lambda m: print(f"svc: {m}", flush=True),
    )
    signals.defer()  # until Granian's handlers are in place (svc/cli/shutdown.py)
    embedded = None
    version_file: Path | None = None
    rate_file: str | None = None
    metrics_dir: Path | None = None
    try:
        if not config.database_url:
            embedded = _start_embedded(args)
        if signals.early:  # SIGINT/SIGTERM while the embedded Postgres started
            return 0
        problem = _database_problem(env_value("SVC_GRAPHQL_DATABASE_URL") or "")
        if problem:
            print(f"svc: cannot connect to Postgres: {problem}", file=sys.stderr, flush=True)
            return 1
        version_file = shared_version.create()
        export(shared_version.ENV_VAR, str(version_file))
        # Rate-limit counters every worker maps (svc.api.limits), removed on exit.
        rate_file = create_rate_file()
        export("SVC_GRAPHQL_RATE_LIMIT_FILE", rate_file)
        metrics_dir = metrics_folder.create()  # /v1/metrics across workers
        for line in _banner(config):
            print(f"svc: {line}", flush=True)
        server = _granian(config)
        server.on_startup(lambda: signals.install(server.signal_handler_interrupt))
        _serve_forever(server)
    except KeyboardInterrupt:  # a second signal before Granian took over
        print("svc: interrupted", flush=True)
        return 130
    finally:
        signals.close()  # from here on SIGINT/SIGTERM cannot interrupt the cleanup
        try:
            if version_file is not None:
                shared_version.remove(version_file)
            if rate_file is not None:
                Path(rate_file).unlink(missing_ok=True)
            metrics_folder.remove(metrics_dir)
        finally:
            if embedded is not None:
                embedded.stop()
    return 0


def _banner(config: Any) -> list[str]:
    """What `svc serve` says at start: where it serves, with which interface, and the
    console's URL (or how to turn the console on)."""
    shown = "localhost" if config.host in ("0.0.0.0", "::", "") else config.host
    base = f"http://{shown}:{config.port}"
    interface = config.server_interface
    lines = [
        f"serving on http://{config.host}:{config.port} ({interface} interface, "
        f"{config.workers} worker{'s' if config.workers != 1 else ''}); "
        f"GraphQL at {base}/v1/graphql",
    ]
    if interface == "rsgi":
        lines.append(
            "rsgi serves HTTP only for GraphQL clients: websockets asking for a "
            "sub-protocol are refused (serve with --server-interface asgi for subscriptions)"
        )
    if config.enable_console:
        lines.append(f"console at {base}/console")
    else:
        lines.append("console off (--enable-console to serve it at /console)")
    return lines


def _start_embedded(args: argparse.Namespace) -> Any:
    """Start the embedded Postgres (`--data-dir`, default `./.svc/pgdata`) and export its
    URL as `SVC_GRAPHQL_DATABASE_URL`; returns the running `EmbeddedPostgres`."""
    from svc.embedded import EmbeddedPostgres, default_data_dir

    data_dir = Path(args.data_dir) if args.data_dir else default_data_dir()
    print(f"svc: no database URL given; embedded Postgres data in {data_dir}", flush=True)
    embedded = EmbeddedPostgres(data_dir, log=lambda m: print(f"svc: {m}", flush=True))
    export("SVC_GRAPHQL_DATABASE_URL", embedded.start())
    export("SVC_GRAPHQL_ENABLE_CONSOLE", "true", default_only=True)  # zero setup
    print(f"svc: embedded Postgres at {embedded.url}", flush=True)
    return embedded


def _granian(config: Any) -> Any:
    """The Granian server for `config` (interface from `SVC_GRAPHQL_SERVER_INTERFACE`)."""
    from granian import Granian
    from granian.constants import Interfaces, Loops

    from svc.cli.shutdown import kill_timeout

    asgi = config.server_interface != "rsgi"
    return Granian(
        # ASGI by default: the interface that serves every client (ARCHITECTURE.md
        # "Serving"); RSGI is an explicit choice for HTTP-only deployments.
        f"svc.server.{'app' if asgi else 'rsgi'}:create_app",
        address=config.host,
        port=config.port,
        interface=Interfaces.ASGI if asgi else Interfaces.RSGI,
        loop=Loops.uvloop,
        workers=config.workers,
        factory=True,
        log_access=False,
        # A worker still alive this long after SIGTERM is killed: nothing can hang
        # the shutdown (in-flight requests are cancelled at `grace`).
        workers_kill_timeout=kill_timeout(config.graceful_shutdown_timeout),
    )


def _serve_forever(server: Any) -> None:
    """Serve until Granian stops (its workers' signals guarded: svc/cli/shutdown.py)."""
    from svc.cli.shutdown import guard_granian_worker_signals

    guard_granian_worker_signals()
    server.serve()


if __name__ == "__main__":
    sys.exit(main())
