"""`svc events cleanup`: delete delivered, errored and archived events (and their
invocation logs) older than a retention, from `hdb_catalog.event_log` (svc extension;
the server can do it hourly with `--events-retention`). Prints the number
deleted. Exit status 0, or 1 when Postgres cannot be reached."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from svc.config import env_value

DAY = 86400.0


def add_parser(sub: Any) -> None:
    """Declare `svc events cleanup` on the `svc` sub-command parser `sub`."""
    p = sub.add_parser("events", help="event-trigger maintenance")
    commands = p.add_subparsers(dest="events_command", required=True)
    c = commands.add_parser("cleanup", help="delete delivered and errored events")
    c.add_argument(
        "--database-url",
        default=env_value("SVC_GRAPHQL_DATABASE_URL"),
        required=env_value("SVC_GRAPHQL_DATABASE_URL") is None,
        help="Postgres URL (SVC_GRAPHQL_DATABASE_URL)",
    )
    c.add_argument(
        "--older-than-days", type=float, default=7.0, help="retention in days (default 7)"
    )


def run(args: argparse.Namespace) -> int:
    """Run `svc events cleanup`; returns the exit status."""
    from svc.errors import SvcError
    from svc.execute.db import Database
    from svc.workers.events import cleanup

    async def go() -> int:
        db = await Database.connect(args.database_url, min_size=1, max_size=1)
        try:
            return await cleanup(db, args.older_than_days * DAY)
        finally:
            await db.close()

    try:
        count = asyncio.run(go())
    except SvcError as exc:
        print(f"svc events cleanup: {exc.message}", file=sys.stderr)
        return 1
    print(f"deleted {count} events")
    return 0
