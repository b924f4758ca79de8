"""`svc migrate apply|status|create` on Hasura CLI projects (config v3 and v2), against a
fresh database each, through the CLI's `main()` as the other CLI tests run it.

Followed in the reference (hasura/graphql-engine):
- layout and file names: `cli/migrate/source/file/file.go` (`Scan`), `cli/migrate/source/
  parse.go` (`Regexv2`: only `.sql` for config v2/v3; `IsEmptyFile`);
- the version store: `cli/migrate/database/hasuradb/migration_state_catalog_state.go`
  (`SetVersion`/`RemoveVersion` on `cli_state.migrations.<database>.<version>` = dirty),
  `cli/internal/client/catalog_state.go` (`CLICatalogState{migrations, settings}`),
  `cli/migrate/database/settings.go` (`migration_mode` default "true"), the server's
  `setCatalogStateTx` (`UPDATE hdb_catalog.hdb_version SET cli_state = $1`);
- the older store and its one-time move: `cli/migrate/database/hasuradb/
  migration_state_sql.go` (`schema_migrations (version bigint, dirty boolean)`),
  `cli/internal/client/client.go` (`MarkCLIStateTablesAsMovedToCatalogState`: version -5,
  `migrated_settings_to_catalog_state`), `cli/migrate/util.go` (`NewMigrate`);
- what runs: `cli/migrate/migrate.go` (`readUp`, `readDown`, `read`, `GotoVersion`,
  `runMigrations`, `printDryRunStatus`), `cli/commands/migrate_apply.go`
  (`getMigrationTypeAndStep`), `cli/commands/migrate_status.go` (`printStatus`),
  `cli/commands/migrate_create.go` (`getTime`: Unix milliseconds; empty up.sql/down.sql),
  `cli/migrate/detect_no_transaction_test.go` (`-- hasura:no-transaction`).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from svc.cli import main

V1, V2, V3 = 1700000000001, 1700000000002, 1700000000003

MIGRATIONS = {
    V1: (
        "create_table_public_author",
        "CREATE TABLE public.author (id serial PRIMARY KEY, name text NOT NULL);",
        "DROP TABLE public.author;",
    ),
    V2: (
        "insert_authors",
        "INSERT INTO public.author (name) VALUES ('ann');\nINSERT INTO public.author (name)"
        " VALUES ('bob');",
        "DELETE FROM public.author;",
    ),
    V3: (
        "alter_table_public_author_add_column_email",
        "ALTER TABLE public.author ADD COLUMN email text;",
        # the console writes this when it cannot generate a down migration: comments only
        "-- Could not auto-generate a down migration.\n-- Please write an appropriate down"
        ' migration for the SQL below:\n-- alter table "public"."author" add column'
        ' "email" text;\nALTER TABLE public.author DROP COLUMN email;',
    ),
}


def write_project(root: Path, version: int = 3, only: tuple[int, ...] = (V1, V2, V3)) -> Path:
    """A Hasura project in `root`: `config.yaml` of `version`, its migrations in that
    version's layout."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "config.yaml").write_text(
        f"version: {version}\nendpoint: http://localhost:8080\nmetadata_directory: metadata\n"
    )
    folder = root / "migrations" / ("default" if version == 3 else "")
    for v in only:
        name, up, down = MIGRATIONS[v]
        d = folder / f"{v}_{name}"
        d.mkdir(parents=True, exist_ok=True)
        (d / "up.sql").write_text(up)
        (d / "down.sql").write_text(down)
    return root


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """`svc migrate ARGS`: exit status, stdout, stderr."""
    capsys.readouterr()
    code = main(["migrate", *args])
    out, err = capsys.readouterr()
    return code, out, err


def fetch(url: str, sql: str, *args: Any) -> list[asyncpg.Record]:
    """The rows of one statement on `url`."""

    async def go() -> list[asyncpg.Record]:
        conn = await asyncpg.connect(url)
        try:
            return list(await conn.fetch(sql, *args))
        finally:
            await conn.close()

    return asyncio.run(go())


def cli_state(url: str) -> Any:
    """Every `hdb_catalog.hdb_version` row's `cli_state`, decoded (the CLI keeps one)."""
    return [
        json.loads(r[0]) for r in fetch(url, "SELECT cli_state::text FROM hdb_catalog.hdb_version")
    ]


def recorded(*versions: int, database: str = "default") -> list[dict[str, Any]]:
    """The `cli_state` rows the Hasura CLI leaves after applying `versions`."""
    return [
        {
            "migrations": {database: {str(v): False for v in versions}},
            "settings": {"migration_mode": "true"},
        }
    ]


def authors(url: str) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in fetch(url, "SELECT * FROM public.author ORDER BY id")]


def exists(url: str, name: str) -> bool:
    return bool(fetch(url, "SELECT to_regclass($1) IS NOT NULL", name)[0][0])


STATUS_BEFORE = (
    "\nDatabase: default\n"
    "VERSION        NAME                                        SOURCE STATUS  DATABASE STATUS\n"
    "1700000000001  create_table_public_author                  Present        Not Present\n"
    "1700000000002  insert_authors                              Present        Not Present\n"
    "1700000000003  alter_table_public_author_add_column_email  Present        Not Present\n"
)


@pytest.fixture
def db(new_database: Callable[[], str]) -> str:
    return new_database()


def test_v3_apply_records_versions_as_the_hasura_cli(
    tmp_path: Path, db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Config v3: status before and after, apply runs every up.sql in version order and
    records `cli_state` exactly as the CLI's `SetVersion` leaves it; running it again is a
    no-op ("nothing to apply", exit 0, nothing written)."""
    project = write_project(tmp_path / "p")
    base = ["--project", str(project), "--database-url", db]
    code, out, err = cli(capsys, "status", *base)
    assert (code, err) == (0, "")
    assert out == STATUS_BEFORE, out

    code, out, err = cli(capsys, "apply", *base)
    assert code == 0, err
    assert f"applied: {V1}_create_table_public_author (up)" in err
    assert "migrations applied on database default" in err
    assert authors(db) == [(1, "ann", None), (2, "bob", None)]
    assert cli_state(db) == recorded(V1, V2, V3)

    code, out, _ = cli(capsys, "status", *base)
    assert code == 0
    rows = [line.split() for line in out.splitlines()[3:]]
    assert [r[-1] for r in rows] == ["Present"] * 3 and all("Not" not in r for r in rows)

    before = fetch(db, "SELECT xmin::text FROM hdb_catalog.hdb_version")
    code, out, err = cli(capsys, "apply", *base)
    assert (code, out) == (0, "")
    assert err == "svc migrate apply: nothing to apply on database default\n"
    assert fetch(db, "SELECT xmin::text FROM hdb_catalog.hdb_version") == before
    assert authors(db) == [(1, "ann", None), (2, "bob", None)]


def test_type_down_goto_and_down_all(
    tmp_path: Path, db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--version V --type down` rolls back one version (its down.sql, its key deleted);
    `--goto` moves the chain either way; `--down all` empties the database's object, as
    the CLI's `RemoveVersion` leaves it; `--up N` applies N."""
    base = ["--project", str(write_project(tmp_path / "p")), "--database-url", db]
    assert cli(capsys, "apply", *base)[0] == 0

    code, _, err = cli(capsys, "apply", *base, "--version", str(V3), "--type", "down")
    assert code == 0, err
    assert authors(db) == [(1, "ann"), (2, "bob")]
    assert cli_state(db) == recorded(V1, V2)
    code, _, err = cli(capsys, "apply", *base, "--version", str(V3), "--type", "down")
    assert (code, err) == (1, f"svc migrate apply: {V3}: Migration not applied in database\n")

    assert cli(capsys, "apply", *base, "--goto", str(V1))[0] == 0
    assert authors(db) == [] and cli_state(db) == recorded(V1)
    assert cli(capsys, "apply", *base, "--goto", str(V3))[0] == 0
    assert len(authors(db)) == 2 and cli_state(db) == recorded(V1, V2, V3)

    code, _, err = cli(capsys, "apply", *base, "--down", "all")
    assert code == 0, err
    assert not exists(db, "public.author")
    assert cli_state(db) == recorded()

    code, _, err = cli(capsys, "apply", *base, "--up", "2")
    assert code == 0, err
    assert cli_state(db) == recorded(V1, V2)
    code, _, err = cli(capsys, "apply", *base, "--version", str(V1))
    assert (code, err) == (1, f"svc migrate apply: {V1}: Version already applied in database\n")


def test_failing_migration_leaves_nothing_behind(
    tmp_path: Path, db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A failing up.sql rolls back with its version: the table it created first is gone,
    `cli_state` holds only the migrations before it, later ones did not run; the error
    names the file and Postgres's error. Fixed and re-run, the rest applies."""
    project = write_project(tmp_path / "p")
    bad = project / "migrations" / "default" / f"{V2}_insert_authors" / "up.sql"
    bad.write_text("CREATE TABLE public.half (id int);\nINSERT INTO public.nope VALUES (1);")
    base = ["--project", str(project), "--database-url", db]

    code, _, err = cli(capsys, "apply", *base)
    assert code == 1
    assert f"{bad}: up migration {V2}_insert_authors failed, nothing of it was applied" in err
    assert 'ERROR 42P01: relation "public.nope" does not exist' in err
    assert not exists(db, "public.half")
    assert exists(db, "public.author")  # the migration before it stays applied
    assert not fetch(db, "SELECT 1 FROM information_schema.columns WHERE column_name = 'email'")
    assert cli_state(db) == recorded(V1)

    bad.write_text(MIGRATIONS[V2][1])
    assert cli(capsys, "apply", *base)[0] == 0
    assert cli_state(db) == recorded(V1, V2, V3)


def test_failing_first_migration_changes_nothing(
    tmp_path: Path, db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """When the first migration fails, the database and the recorded versions are as
    before the run (the catalog exists, its `cli_state` is the empty object)."""
    project = write_project(tmp_path / "p", only=(V1,))
    (project / "migrations" / "default" / f"{V1}_create_table_public_author" / "up.sql").write_text(
        "CREATE TABLE public.author (id int);\nSELECT 1/0;"
    )
    code, _, err = cli(capsys, "apply", "--project", str(project), "--database-url", db)
    assert code == 1 and "ERROR 22012: division by zero" in err
    assert not exists(db, "public.author")
    assert cli_state(db) == [{}]


def test_skip_execution_records_without_running(
    tmp_path: Path, db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--skip-execution` records (or removes) versions without running their files,
    the way a `--from-server` init migration is marked applied; not with `--goto`."""
    base = ["--project", str(write_project(tmp_path / "p")), "--database-url", db]
    code, _, err = cli(capsys, "apply", *base, "--skip-execution", "--version", str(V1))
    assert code == 0, err
    assert "recorded as applied (not run)" in err
    assert not exists(db, "public.author")
    assert cli_state(db) == recorded(V1)

    fetch(db, MIGRATIONS[V1][1])  # what the init migration would have created
    assert cli(capsys, "apply", *base)[0] == 0
    assert cli_state(db) == recorded(V1, V2, V3)

    code, _, _ = cli(capsys, "apply", *base, "--skip-execution", "--down", "2")
    assert code == 0
    assert len(authors(db)) == 2  # nothing ran
    assert cli_state(db) == recorded(V1)

    code, _, err = cli(capsys, "apply", *base, "--skip-execution", "--goto", str(V3))
    assert code == 1 and "--skip-execution flag can be set only with" in err
    code, _, err = cli(capsys, "apply", *base, "--up", "1", "--down", "1")
    assert code == 1 and "only one migration type can be applied at a time" in err


def test_dry_run_and_short_limit(
    tmp_path: Path, db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--dry-run` prints VERSION/TYPE/NAME and changes nothing (not even the catalog);
    `--up N` past the end applies what there is and fails "limit K short", as the CLI."""
    base = ["--project", str(write_project(tmp_path / "p")), "--database-url", db]
    code, out, _ = cli(capsys, "apply", *base, "--dry-run", "--up", "2")
    assert code == 0
    assert out == (
        "VERSION        TYPE  NAME\n"
        "1700000000001  up    create_table_public_author\n"
        "1700000000002  up    insert_authors\n"
    )
    assert not exists(db, "hdb_catalog.hdb_version")

    code, _, err = cli(capsys, "apply", *base, "--up", "5")
    assert code == 1 and err.endswith("svc migrate apply: limit 2 short\n")
    assert cli_state(db) == recorded(V1, V2, V3)


def test_v2_layout(tmp_path: Path, db: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Config v2: `migrations/<version>_<name>/`, recorded under `default` (the CLI's
    datasource for a config v2 project); no `Database:` line in status; a config v1
    `up.yaml` is ignored with a warning, as `Parsev2` ignores it; empty files are no
    migration."""
    project = write_project(tmp_path / "p", version=2, only=(V1, V2))
    yaml_only = project / "migrations" / "1700000000009_yaml_steps"
    yaml_only.mkdir()
    (yaml_only / "up.yaml").write_text("- type: run_sql\n  args:\n    sql: CREATE TABLE t9 ();\n")
    empty = project / "migrations" / "1700000000010_empty"
    empty.mkdir()
    (empty / "up.sql").write_text("")
    base = ["--project", str(project), "--database-url", db]

    code, out, err = cli(capsys, "status", *base)
    assert code == 0
    assert "ignored: YAML migration steps are config v1" in err
    assert "migrations/1700000000009_yaml_steps/up.yaml" in err
    assert out.splitlines()[0].split() == [
        "VERSION",
        "NAME",
        "SOURCE",
        "STATUS",
        "DATABASE",
        "STATUS",
    ]
    assert [line.split()[0] for line in out.splitlines()[1:]] == [str(V1), str(V2)]

    assert cli(capsys, "apply", *base, "--database-name", "ignored_by_v2")[0] == 0
    assert authors(db) == [(1, "ann"), (2, "bob")]
    assert not exists(db, "public.t9")
    assert cli_state(db) == recorded(V1, V2)


def test_state_written_by_the_hasura_cli_is_recognised(
    tmp_path: Path, db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A database the Hasura CLI migrated (its `cli_state`, as in the CLI's
    `catalog_state_test.go`, with another database's versions and a setting of its own):
    svc sees V1 applied, applies only V2 and V3, keeps what it does not own."""
    base = ["--project", str(write_project(tmp_path / "p")), "--database-url", db]
    assert main(["migrate", "apply", *base, "--skip-execution", "--up", "1"]) == 0
    fetch(db, MIGRATIONS[V1][1])
    hasura = {
        "settings": {"migration_mode": "true", "test": "test"},
        "migrations": {"default": {str(V1): False}, "other": {"1606208931894": False}},
    }
    fetch(db, "UPDATE hdb_catalog.hdb_version SET cli_state = $1::jsonb", json.dumps(hasura))

    code, out, _ = cli(capsys, "status", *base)
    assert out.splitlines()[3].split()[-1] == "Present"
    assert out.splitlines()[4].split()[-2:] == ["Not", "Present"]
    code, _, err = cli(capsys, "apply", *base)
    assert code == 0, err
    assert f"applied: {V1}_" not in err and f"applied: {V2}_" in err
    hasura["migrations"]["default"] = {str(v): False for v in (V1, V2, V3)}
    assert cli_state(db) == [hasura]

    hasura["settings"]["migration_mode"] = "false"
    fetch(db, "UPDATE hdb_catalog.hdb_version SET cli_state = $1::jsonb", json.dumps(hasura))
    code, _, err = cli(capsys, "apply", *base, "--down", "1")
    assert (code, err) == (1, "svc migrate apply: Migration mode is disabled\n")


def test_older_schema_migrations_table_is_read_and_moved(
    tmp_path: Path, db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A database migrated by a CLI before v1.4 keeps versions in
    `hdb_catalog.schema_migrations`: status reads them without writing; the first apply
    moves them into `cli_state` and marks both tables the way the CLI does (version -5,
    `migrated_settings_to_catalog_state`), so the Hasura CLI will not copy them again."""
    base = ["--project", str(write_project(tmp_path / "p")), "--database-url", db]
    fetch(db, "CREATE SCHEMA hdb_catalog")
    fetch(
        db,
        "CREATE TABLE hdb_catalog.schema_migrations (version bigint not null primary key,"
        " dirty boolean not null)",
    )
    fetch(
        db,
        "CREATE TABLE hdb_catalog.migration_settings (setting text not null primary key,"
        " value text not null)",
    )
    fetch(db, "INSERT INTO hdb_catalog.migration_settings VALUES ('migration_mode', 'true')")
    fetch(db, f"INSERT INTO hdb_catalog.schema_migrations VALUES ({V1}, false)")
    fetch(db, MIGRATIONS[V1][1])

    code, out, _ = cli(capsys, "status", *base)
    assert [line.split()[-1] for line in out.splitlines()[3:]] == ["Present", "Present", "Present"]
    assert [line.split()[-2] for line in out.splitlines()[3:]] == ["Present", "Not", "Not"]
    assert not exists(db, "hdb_catalog.hdb_version")

    code, _, err = cli(capsys, "apply", *base)
    assert code == 0, err
    assert len(authors(db)) == 2
    assert cli_state(db) == recorded(V1, V2, V3)
    rows = fetch(db, "SELECT version, dirty FROM hdb_catalog.schema_migrations ORDER BY version")
    assert [tuple(r) for r in rows] == [(-5, False), (V1, False)]
    settings = fetch(db, "SELECT setting, value FROM hdb_catalog.migration_settings ORDER BY 1")
    assert [tuple(r) for r in settings] == [
        ("migrated_settings_to_catalog_state", "true"),
        ("migration_mode", "true"),
    ]
    assert cli(capsys, "apply", *base, "--down", "1")[0] == 0
    assert cli_state(db) == recorded(V1, V2)  # the old table is not read again


def test_no_transaction_marker(tmp_path: Path, db: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`-- hasura:no-transaction` on the first line: the statements run outside a
    transaction (`CREATE INDEX CONCURRENTLY` would fail inside one), then the version
    is recorded."""
    project = write_project(tmp_path / "p", only=(V1,))
    d = project / "migrations" / "default" / "1700000000004_index"
    d.mkdir()
    (d / "up.sql").write_text(
        "-- hasura:no-transaction\nCREATE INDEX CONCURRENTLY author_name ON public.author (name);"
        "\nCREATE INDEX CONCURRENTLY author_name2 ON public.author (name);"
    )
    code, _, err = cli(capsys, "apply", "--project", str(project), "--database-url", db)
    assert code == 0, err
    assert exists(db, "public.author_name") and exists(db, "public.author_name2")
    assert cli_state(db) == recorded(V1, 1700000000004)


def test_create_writes_the_cli_layout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`create NAME`: `<unix ms>_NAME/up.sql` and `down.sql` under `migrations/<database>`
    (config v3) or `migrations/` (config v2), empty unless `--up-sql`/`--down-sql` say."""
    v3 = write_project(tmp_path / "v3", only=())
    start = time.time_ns() // 1_000_000
    code, out, err = cli(
        capsys, "create", "add_books", "--project", str(v3), "--up-sql", "CREATE TABLE b ();"
    )
    assert code == 0 and "an up migration without a down migration" in err
    version = int(out)
    assert start <= version <= time.time_ns() // 1_000_000
    folder = v3 / "migrations" / "default" / f"{version}_add_books"
    assert sorted(p.name for p in folder.iterdir()) == ["down.sql", "up.sql"]
    assert (folder / "up.sql").read_text() == "CREATE TABLE b ();"
    assert (folder / "down.sql").read_text() == ""

    v2 = write_project(tmp_path / "v2", version=2, only=())
    code, out, _ = cli(capsys, "create", "init", "--project", str(v2), "--database-name", "x")
    assert code == 0
    assert (v2 / "migrations" / f"{int(out)}_init" / "up.sql").read_text() == ""
    code, _, err = cli(capsys, "create", "a/b", "--project", str(v2))
    assert code == 1 and "not a valid migration name" in err
