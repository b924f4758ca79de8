"""`svc migrate apply|status|create`: a Hasura CLI project's migrations, run on svc.

Reads the Hasura CLI's layout (`cli/migrate/source/file/file.go`, `source/parse.go`):
config v3 keeps `migrations/<database>/<version>_<name>/{up,down}.sql`, config v2
`migrations/<version>_<name>/{up,down}.sql` (flat `<version>_<name>.up.sql` files are read
too). `config.yaml`'s `version` and `migrations_directory` choose the layout; without it,
a directory whose subdirectories look like versions is v2, else v3. Like the CLI for config
v2 and v3 (`Parsev2`), only `.sql` files count: `up.yaml`/`down.yaml` (config v1's run_sql
and metadata steps) are ignored, with a warning here; an empty file is no migration of that
direction (`IsEmptyFile`). Config v1 projects are refused.

Versions are recorded as the CLI records them (`svc.catalog.migrations`). Each migration
runs in its own transaction on `--database-url` (through `svc.execute`'s pool and its
`run_sql` script runner): the recorded versions are locked, the file runs, its version is
recorded or removed, and all commit together, so a failing file leaves neither its changes
nor its version behind; earlier migrations of the same run stay applied (the CLI sends a
run's files as one bulk request instead). A file whose first line is
`-- hasura:no-transaction` runs statement by statement outside a transaction, as the CLI
does, and is recorded afterwards.

The choice of migrations follows `cli/migrate/migrate.go` (`readUp`, `readDown`, `read`,
`GotoVersion`) and `cli/commands/migrate_apply.go` (one of `--up`, `--down`, `--version`,
`--goto`; `--skip-execution` records without running, not with `--goto`; `--dry-run` prints
what would run). Exit status: 0 applied or nothing to apply, 1 a migration or the request
failed, 2 the project or the database could not be read.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from svc.catalog.migrations import DEFAULT_DATABASE
from svc.cli.progress import Steps
from svc.config import env_value

#: The CLI's file pattern for config v2 and v3 (`source.Regexv2`): version, name, direction.
FILE_PATTERN = re.compile(r"^([0-9]+)_(.*)\.(down|up)\.(sql)$")
#: The marker of a migration that runs outside a transaction (`detectNoTransactionComment`).
NO_TRANSACTION = "-- hasura:no-transaction"
MAX_VERSION = 2**63 - 1  # versions are bigint where the older store keeps them


class MigrateError(Exception):
    """A refused request or a failed migration; `status` is the exit status."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


class NoChange(Exception):
    """Nothing to apply (the CLI's `ErrNoChange`): exit 0 with a message."""


# -- options ------------------------------------------------------------------------------


def add_parser(sub: Any) -> None:
    """Declare `svc migrate apply|status|create` on the `svc` sub-command parser `sub`."""
    p = sub.add_parser("migrate", help="apply a Hasura project's migrations")
    commands = p.add_subparsers(dest="migrate_command", required=True)
    apply = commands.add_parser("apply", help="apply migrations on the database")
    status = commands.add_parser("status", help="show which migrations are applied")
    create = commands.add_parser("create", help="create the files of a new migration")
    for c in (apply, status, create):
        c.add_argument(
            "--project", type=Path, default=Path("."), help="the Hasura project (default .)"
        )
        c.add_argument(
            "--database-name",
            default=DEFAULT_DATABASE,
            help="database whose migrations to use (config v3; default default)",
        )
    for c in (apply, status):
        c.add_argument(
            "--database-url",
            default=env_value("SVC_GRAPHQL_DATABASE_URL"),
            required=env_value("SVC_GRAPHQL_DATABASE_URL") is None,
            help="Postgres URL (SVC_GRAPHQL_DATABASE_URL)",
        )
    apply.add_argument("--up", metavar="N|all", help="apply all or N up migrations")
    apply.add_argument("--down", metavar="N|all", help="roll back all or N applied migrations")
    apply.add_argument("--version", metavar="V", help="apply (or roll back) only version V")
    apply.add_argument(
        "--type", choices=("up", "down"), default="up", help="direction of --version"
    )
    apply.add_argument("--goto", metavar="V", help="apply or roll back the chain up to V")
    apply.add_argument(
        "--skip-execution",
        action="store_true",
        help="record migrations as applied (or rolled back) without running them",
    )
    apply.add_argument("--dry-run", action="store_true", help="print the migrations that would run")
    create.add_argument("name", help="the migration's name")
    create.add_argument("--up-sql", help="the SQL of up.sql")
    create.add_argument("--down-sql", help="the SQL of down.sql")
    create.add_argument("--sql-from-file", type=Path, help="a file whose SQL becomes up.sql")


def run(args: argparse.Namespace) -> int:
    """Run one `svc migrate` command; returns the exit status."""
    command = f"svc migrate {args.migrate_command}"
    try:
        layout = read_layout(args.project, args.database_name)
        if args.migrate_command == "create":
            return create(layout, args)
        import asyncio

        return asyncio.run(_run_on_database(layout, args))
    except NoChange as exc:
        print(f"{command}: {exc}", file=sys.stderr)
        return 0
    except MigrateError as exc:
        print(f"{command}: {exc}", file=sys.stderr)
        return exc.status


# -- the project's files ------------------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    """Where one database's migrations are: `directory`, shown as `label` (relative to
    the project), of a config `config_version` project; `database` is the name the
    versions are recorded under."""

    config_version: int
    directory: Path
    label: str
    database: str


@dataclass(frozen=True)
class Migration:
    """One version found in the project: its name and its non-empty files."""

    version: int
    name: str
    up: Path | None = None
    down: Path | None = None


@dataclass
class Source:
    """The migrations of a `Layout` by version, and what was ignored (warnings)."""

    migrations: dict[int, Migration] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def read_layout(project: Path, database: str) -> Layout:
    """The `Layout` of `database` in `project` (config v2: always `default`).
    `config.yaml` gives `version` (a config
    without one is v1, as for the CLI) and `migrations_directory` (default `migrations`);
    without `config.yaml` the layout is guessed (`_guess_version`). Raises `MigrateError`
    (status 2) for an unreadable config, config v1 or another version."""
    config: dict[str, Any] = {}
    config_file = project / "config.yaml"
    if config_file.is_file():
        import yaml

        try:
            loaded = yaml.safe_load(config_file.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            raise MigrateError(f"{config_file}: {exc}", 2) from None
        config = loaded if isinstance(loaded, dict) else {}
        version = config.get("version", 1)
    elif not project.is_dir():
        raise MigrateError(f"{project}: not a directory", 2)
    else:
        version = None
    folder = str(config.get("migrations_directory") or "migrations")
    root = project / folder
    if version is None:
        version = _guess_version(root, database)
    if version == 1 or version == "1":
        raise MigrateError(
            f"{config_file}: config v1 projects are not supported (their migrations are YAML"
            " steps); upgrade with `hasura scripts update-project-v2` (then v3)",
            2,
        )
    if version not in (2, 3, "2", "3"):
        raise MigrateError(f"{config_file}: unknown config version {version!r}", 2)
    if int(version) == 2:  # one database, recorded as `default` (the CLI's datasource)
        return Layout(2, root, folder, DEFAULT_DATABASE)
    return Layout(3, root / database, f"{folder}/{database}", database)


def _guess_version(root: Path, database: str) -> int:
    """3 when `root/<database>` is a directory or nothing under `root` looks like a
    version (`<digits>_…`), else 2."""
    if (root / database).is_dir() or not root.is_dir():
        return 3
    versioned = any(re.match(r"^[0-9]+_", p.name) for p in root.iterdir())
    return 2 if versioned else 3


def scan(layout: Layout) -> Source:
    """Every migration in `layout.directory` (none when it does not exist), as the CLI's
    `File.Scan` finds them: `<version>_<name>/` directories holding `up.sql`/`down.sql`
    and flat `<version>_<name>.{up,down}.sql` files; files that do not match are skipped
    (YAML ones with a warning), empty files are no migration. Raises `MigrateError` for
    two files of one version and direction (the CLI's "found duplicate migrations")."""
    source = Source()
    if not layout.directory.is_dir():
        return source
    for entry in sorted(layout.directory.iterdir()):
        if entry.is_dir():
            for file in sorted(entry.iterdir()):
                if file.is_file():
                    _add(source, layout, f"{entry.name}.{file.name}", file)
        elif entry.is_file():
            _add(source, layout, entry.name, entry)
    return source


def _add(source: Source, layout: Layout, raw: str, path: Path) -> None:
    """Record the file `path` (CLI name `raw`) in `source` if it is a migration."""
    shown = f"{layout.label}/{path.relative_to(layout.directory).as_posix()}"
    m = FILE_PATTERN.match(raw)
    if m is None:
        if raw.endswith((".up.yaml", ".down.yaml")):
            source.warnings.append(
                f"{shown}: ignored: YAML migration steps are config v1 (the Hasura CLI reads"
                " only up.sql and down.sql for config v2 and v3)"
            )
        return
    if path.stat().st_size == 0:
        return
    version = int(m.group(1))
    if version > MAX_VERSION:
        raise MigrateError(f"{shown}: version {version} is out of range", 2)
    direction = m.group(3)
    found = source.migrations.get(version) or Migration(version, m.group(2))
    if getattr(found, direction) is not None:
        raise MigrateError(
            f"found duplicate migrations for version {version}: "
            f"{getattr(found, direction)} and {path}",
            2,
        )
    source.migrations[version] = (
        Migration(version, found.name, path, found.down)
        if direction == "up"
        else Migration(version, found.name, found.up, path)
    )


# -- what to run --------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """Run `path` (None with `--skip-execution`) of `version` in `direction`; afterwards
    the version is recorded (up) or removed (down)."""

    version: int
    name: str
    direction: str
    path: Path | None


@dataclass(frozen=True)
class Plan:
    """The steps in order; `short` > 0 when `--up N`/`--down N` asked for more than there
    were (the CLI's `ErrShortLimit`: the others run, then the command fails)."""

    steps: tuple[Step, ...]
    short: int = 0


def request_of(args: argparse.Namespace) -> tuple[str, int | None]:
    """`(kind, number)` of `svc migrate apply`'s flags, as `getMigrationTypeAndStep`:
    `("up", N|None)`, `("down", N|None)`, `("version", ±V)` (negative: `--type down`) or
    `("goto", V)`; None is "all". Raises `MigrateError` for two of them at once, a number
    that is not one, `--skip-execution` with `--goto` or with `--dry-run`."""
    given = [(k, getattr(args, k)) for k in ("up", "down", "version", "goto")]
    chosen = [(k, v) for k, v in given if v is not None]
    if len(chosen) > 1:
        raise MigrateError(
            "only one migration type can be applied at a time (--up, --down, --type or --goto)"
        )
    if args.skip_execution and args.dry_run:
        raise MigrateError("both --skip-execution and --dry-run flags cannot be used together")
    kind, text = chosen[0] if chosen else ("up", "all")
    if args.skip_execution and kind == "goto":
        raise MigrateError("--skip-execution flag can be set only with --version, --up, --down")
    if kind in ("up", "down") and text == "all":
        return kind, None
    try:
        number = int(text)
    except ValueError:
        raise MigrateError(f"not a valid input for steps/version: {text!r}") from None
    if number < 0:
        raise MigrateError(f"not a valid input for steps/version: {text!r}")
    if number == 0 and kind in ("up", "down"):
        raise NoChange(f"nothing to apply on database {args.database_name}")
    if kind == "version" and args.type == "down":
        number = -number
    return kind, number


def plan(
    kind: str,
    number: int | None,
    source: dict[int, Migration],
    applied: dict[int, bool],
    *,
    run_files: bool = True,
    database: str = DEFAULT_DATABASE,
) -> Plan:
    """The steps of one request (`request_of`) given the project's migrations and the
    applied versions (`{version: dirty}`). Raises `NoChange` when there is nothing to do
    and `MigrateError` when the request cannot be met (nothing has run then). `run_files`
    False (`--skip-execution`) plans steps without files."""

    def up(version: int) -> Step:
        m = source.get(version)
        if m is None or m.up is None:
            raise MigrateError(f"{version} up migration not found")
        return Step(version, m.name, "up", m.up if run_files else None)

    def down(version: int) -> Step:
        m = source.get(version)
        if m is None or m.down is None:
            raise MigrateError(f"{version} down migration not found")
        return Step(version, m.name, "down", m.down if run_files else None)

    nothing = NoChange(f"nothing to apply on database {database}")
    last = max(applied, default=-1)
    checks_dirty = (kind in ("up", "down") and number is None) or kind == "goto"
    if checks_dirty and last >= 0 and applied[last]:
        raise MigrateError(f"Dirty database version {last}. Fix and force version.")
    if kind == "up":
        pending = [v for v in sorted(source) if v not in applied]
        chosen = pending if number is None else pending[:number]
        if not chosen:
            raise nothing
        short = 0 if number is None else number - len(chosen)
        return Plan(tuple(up(v) for v in chosen), short)
    if kind == "down":
        done = sorted(applied, reverse=True)
        chosen = done if number is None else done[:number]
        if not chosen:
            raise nothing
        short = 0 if number is None else number - len(chosen)
        return Plan(tuple(down(v) for v in chosen), short)
    if kind == "version":
        assert number is not None
        if number >= 0:
            if number in applied:
                raise MigrateError(f"{number}: Version already applied in database")
            return Plan((up(number),))
        if -number not in applied:
            raise MigrateError(f"{-number}: Migration not applied in database")
        return Plan((down(-number),))
    assert kind == "goto" and number is not None
    if last <= number:
        if number not in source:
            raise MigrateError(f"{number} up migration not found")
        pending = [v for v in sorted(source) if v <= number and v not in applied]
        if not pending:
            raise nothing
        return Plan(tuple(up(v) for v in pending))
    if number not in applied:
        raise MigrateError(f"{number} not applied on database")
    return Plan(tuple(down(v) for v in sorted(applied, reverse=True) if v > number))


# -- printing -----------------------------------------------------------------------------


def table(rows: Sequence[tuple[str, ...]]) -> str:
    """Rows aligned as Go's `tabwriter` (min width 0, padding 2, spaces) aligns the CLI's
    tables: every column but the last padded to its widest cell plus two."""
    if not rows:
        return ""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    lines = []
    for row in rows:
        cells = [cell.ljust(w + 2) for cell, w in zip(row, widths, strict=False)]
        lines.append("".join(cells) + row[-1] + "\n")
    return "".join(lines)


def status_text(layout: Layout, source: dict[int, Migration], applied: dict[int, bool]) -> str:
    """`svc migrate status`'s table (`cli/commands/migrate_status.go`, `printStatus`):
    every version of the project or the database, ascending, with its name ("-" when not
    in the project) and "Present"/"Not Present" on each side; config v3 puts a
    `Database: <name>` line first."""

    def present(ok: bool) -> str:
        return "Present" if ok else "Not Present"

    rows = [("VERSION", "NAME", "SOURCE STATUS", "DATABASE STATUS")]
    for version in sorted(set(source) | set(applied)):
        m = source.get(version)
        rows.append(
            (
                str(version),
                m.name if m else "-",
                present(m is not None),
                present(version in applied),
            )
        )
    head = f"\nDatabase: {layout.database}\n" if layout.config_version >= 3 else ""
    return head + table(rows)


def dry_run_text(steps: tuple[Step, ...]) -> str:
    """`--dry-run`'s table (`printDryRunStatus`): VERSION, TYPE (up/down), NAME."""
    rows = [("VERSION", "TYPE", "NAME")]
    rows.extend((str(s.version), s.direction, s.name) for s in steps)
    return table(rows)


# -- create -------------------------------------------------------------------------------


def create(layout: Layout, args: argparse.Namespace) -> int:
    """`svc migrate create NAME`: `<unix ms>_<NAME>/up.sql` and `down.sql` under the
    layout's directory (`cli/commands/migrate_create.go`: the version is
    `UnixNano() / 1e6`; both files are written, empty unless `--up-sql`, `--down-sql` or
    `--sql-from-file` give their SQL). Prints the version on stdout."""
    name = args.name
    if not name or "/" in name or "\\" in name or name in (".", ".."):
        raise MigrateError(f"not a valid migration name: {name!r}")
    up_sql = args.up_sql
    if args.sql_from_file is not None:
        if up_sql is not None:
            raise MigrateError("only one of --up-sql and --sql-from-file can be given")
        try:
            up_sql = args.sql_from_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise MigrateError(f"cannot set sql file: {exc}", 2) from None
    if up_sql is not None and args.down_sql is None:
        print(
            "svc migrate create: warning: an up migration without a down migration", file=sys.stderr
        )
    if args.down_sql is not None and up_sql is None:
        print(
            "svc migrate create: warning: a down migration without an up migration", file=sys.stderr
        )
    version = time.time_ns() // 1_000_000
    folder = layout.directory / f"{version}_{name}"
    try:
        folder.mkdir(parents=True)
        (folder / "up.sql").write_text(up_sql or "", encoding="utf-8")
        (folder / "down.sql").write_text(args.down_sql or "", encoding="utf-8")
    except OSError as exc:
        raise MigrateError(f"error creating migration files: {exc}", 2) from None
    print(f"svc migrate create: created {layout.label}/{folder.name}", file=sys.stderr)
    print(version)
    return 0


# -- the database -------------------------------------------------------------------------


async def _run_on_database(layout: Layout, args: argparse.Namespace) -> int:
    """`status` or `apply` against `--database-url`."""
    from svc.errors import SvcError
    from svc.execute.db import Database

    source = scan(layout)
    command = f"svc migrate {args.migrate_command}"
    for warning in source.warnings:
        print(f"{command}: warning: {warning}", file=sys.stderr)
    try:
        db = await Database.connect(args.database_url, min_size=1, max_size=2)
    except SvcError as exc:
        internal = exc.internal if isinstance(exc.internal, dict) else {}
        reason = internal.get("message") or exc.message
        raise MigrateError(f"cannot connect to Postgres: {reason}", 2) from None
    try:
        if args.migrate_command == "status":
            applied = await read_applied(db, layout.database)
            sys.stdout.write(status_text(layout, source.migrations, applied))
            return 0
        return await apply(db, layout, source, args)
    except SvcError as exc:  # Postgres went away, or pgcrypto may not be created
        internal = exc.internal if isinstance(exc.internal, dict) else {}
        raise MigrateError(f"Postgres: {internal.get('message') or exc.message}", 2) from None
    finally:
        await db.close()


async def read_applied(db: Any, database: str) -> dict[int, bool]:
    """`{version: dirty}` recorded for `database` (`cli_state`, plus the older table's
    versions while they were not moved), without writing anything."""
    from svc.catalog.migrations import CATALOG_STATE_EXISTS_SQL, READ_CLI_STATE_SQL

    async with db.transaction(read_only=True) as conn:
        exists = await conn.fetchval(CATALOG_STATE_EXISTS_SQL)
        state = await _state(conn, READ_CLI_STATE_SQL if exists else None, move=False)
    return _applied(state, database)


def _applied(state: dict[str, Any], database: str) -> dict[int, bool]:
    """`applied_versions`, its `CliStateError` as a `MigrateError` (status 2)."""
    from svc.catalog.migrations import CliStateError, applied_versions

    try:
        return applied_versions(state, database)
    except CliStateError as exc:
        raise MigrateError(str(exc), 2) from None


async def _state(conn: Any, read_sql: str | None, *, move: bool) -> dict[str, Any]:
    """The `cli_state` document read with `read_sql` (None: no `hdb_version` yet), with
    the older table's versions under `default` while they are not marked as moved;
    `move`: mark them moved and store the result (in the caller's transaction), as the
    CLI does before it uses `cli_state`."""
    from svc.catalog import migrations as store

    try:
        text = await conn.fetchval(read_sql) if read_sql is not None else None
        state = store.decode_cli_state(text)
    except ValueError as exc:
        raise MigrateError(f"hdb_catalog.hdb_version.cli_state: {exc}", 2) from None
    has_versions, has_settings = await conn.fetchrow(store.LEGACY_TABLES_SQL)
    if not (has_versions and has_settings):
        return state
    moved = await conn.fetchval(
        store.LEGACY_VERSION_MARKED_SQL, store.LEGACY_MOVED_VERSION
    ) or await conn.fetchval(store.LEGACY_SETTING_MARKED_SQL, store.LEGACY_MOVED_SETTING)
    if moved:
        return state
    legacy = {int(r[0]): bool(r[1]) for r in await conn.fetch(store.LEGACY_VERSIONS_SQL)}
    state = store.with_legacy(state, legacy)
    if move:
        await conn.execute(store.MARK_LEGACY_VERSIONS_SQL, store.LEGACY_MOVED_VERSION)
        await conn.execute(store.MARK_LEGACY_SETTINGS_SQL, store.LEGACY_MOVED_SETTING)
        await conn.execute(store.WRITE_CLI_STATE_SQL, store.encode_cli_state(state))
    return state


async def apply(db: Any, layout: Layout, source: Source, args: argparse.Namespace) -> int:
    """`svc migrate apply`: plan from the recorded versions, then run each step in its
    own transaction (`_run_step`); `--dry-run` prints the plan instead. Raises
    `MigrateError`/`NoChange`."""
    kind, number = request_of(args)
    if not args.dry_run:
        await db.init_catalog()
    applied, mode = await _applied_and_mode(db, layout.database)
    if mode != "true":
        raise MigrateError("Migration mode is disabled")
    steps = plan(
        kind,
        number,
        source.migrations,
        applied,
        run_files=not args.skip_execution,
        database=layout.database,
    )
    if args.dry_run:
        sys.stdout.write(dry_run_text(steps.steps))
        return 0
    with Steps("svc migrate apply", len(steps.steps)) as shown:  # a bar on a terminal
        for step in steps.steps:
            with shown.step(f"{step.version}_{step.name} ({step.direction})"):
                await _run_step(db, layout, step)
            done = "applied" if step.direction == "up" else "rolled back"
            if step.path is None:
                done = f"recorded as {done} (not run)"
            print(
                f"svc migrate apply: {done}: {step.version}_{step.name} ({step.direction})",
                file=sys.stderr,
            )
    if steps.short:
        raise MigrateError(f"limit {steps.short} short")
    print(f"svc migrate apply: migrations applied on database {layout.database}", file=sys.stderr)
    return 0


async def _applied_and_mode(db: Any, database: str) -> tuple[dict[int, bool], str]:
    """The applied versions of `database` and the CLI's `migration_mode` setting."""
    from svc.catalog.migrations import CATALOG_STATE_EXISTS_SQL, READ_CLI_STATE_SQL, migration_mode

    async with db.transaction(read_only=True) as conn:
        exists = await conn.fetchval(CATALOG_STATE_EXISTS_SQL)
        state = await _state(conn, READ_CLI_STATE_SQL if exists else None, move=False)
    return _applied(state, database), migration_mode(state)


async def _run_step(db: Any, layout: Layout, step: Step) -> None:
    """Run one step: in one transaction, lock `cli_state` (moving the older table's
    versions into it if needed), check the step still applies (another run may have
    done it meanwhile), run the file, record or remove the version. A file marked
    `-- hasura:no-transaction` runs first, statement by statement, outside it. Raises
    `MigrateError` naming the file and the Postgres error."""
    from svc.catalog import migrations as store
    from svc.execute.db import PostgresError
    from svc.execute.run_sql import run_script

    sql = _read(step.path) if step.path is not None else None
    outside = sql is not None and _no_transaction(sql)
    if outside:
        assert sql is not None
        await _run_outside_transaction(db, step, sql)
    try:
        async with db.transaction(reset=True) as conn:
            state = await _state(conn, store.LOCK_CLI_STATE_SQL, move=True)
            recorded = step.version in _applied(state, layout.database)
            if recorded != (step.direction == "down"):
                why = "Version already applied" if recorded else "Migration not applied"
                raise MigrateError(
                    f"{step.version}: {why} in database (another run changed it meanwhile)"
                )
            if sql is not None and not outside:
                await run_script(conn, sql)
            if step.direction == "up":
                state = store.with_version(state, layout.database, step.version)
            else:
                state = store.without_version(state, layout.database, step.version)
            await conn.execute(store.WRITE_CLI_STATE_SQL, store.encode_cli_state(state))
    except PostgresError as exc:
        raise MigrateError(_failure(step, exc)) from None


async def _run_outside_transaction(db: Any, step: Step, sql: str) -> None:
    """Each statement of `sql` on its own (autocommit), as `-- hasura:no-transaction`
    asks; raises `MigrateError` at the first failing one (those before it stay)."""
    from svc.execute.db import PostgresError
    from svc.sql.split import split_statements

    async with db.pool.acquire() as conn:
        try:
            for statement in split_statements(sql):
                await conn.execute(statement)
        except PostgresError as exc:
            raise MigrateError(_failure(step, exc, atomic=False)) from None
        finally:
            if not conn.is_closed():
                await conn.execute(conn.get_reset_query())


def _read(path: Path) -> str:
    """The text of a migration file; `MigrateError` (status 2) when unreadable."""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise MigrateError(f"{path}: {exc}", 2) from None


def _no_transaction(sql: str) -> bool:
    """Whether the first line is exactly `-- hasura:no-transaction` (surrounding
    whitespace aside), the CLI's `detectNoTransactionComment`."""
    return sql.split("\n", 1)[0].strip() == NO_TRANSACTION


def _failure(step: Step, exc: Any, *, atomic: bool = True) -> str:
    """`<file>: … failed …: ERROR <SQLSTATE>: <message>` with Postgres's detail and hint.
    `atomic`: the file ran in one transaction, rolled back with its version (otherwise,
    `-- hasura:no-transaction`, the statements before the failing one stay)."""
    from svc.execute.errors import pg_error_detail

    error = pg_error_detail(exc)["error"]
    left = (
        "nothing of it was applied"
        if atomic
        else "its statements before the failing one stay applied (no-transaction)"
    )
    lines = [
        f"{step.path}: {step.direction} migration {step.version}_{step.name} failed, {left}, "
        f"its version is not recorded: ERROR {error['status_code']}: {error['message']}"
    ]
    if error.get("description"):
        lines.append(f"  DETAIL: {error['description']}")
    if error.get("hint"):
        lines.append(f"  HINT: {error['hint']}")
    return "\n".join(lines)
