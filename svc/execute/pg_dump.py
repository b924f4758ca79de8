"""The pg_dump API (`POST /v1alpha1/pg_dump`, admin only): run the machine's `pg_dump`.

Hasura's request: `{opts: [pg_dump options], clean_output: bool, source}`; the answer is the
dump's text. The options go to `pg_dump` as an argument vector, never through a shell, and
only after `check_options` accepted every one of them by an allow-list: exact option names
(getopt_long would also take any unambiguous abbreviation, `--fi=/path` for `--file`, so
nothing is matched by prefix), each with its argument form, parsed the way getopt parses
them (`--table=x`, `--table x`, `-t x`, `-tx`, and short flags combined: `-Ox`). Refused:
everything that writes a file (`-f`), picks another database or user (`-d`, `-h`, `-p`,
`-U`, `--role`), prompts (`-W`), produces a non-text or parallel dump (`-F c|d|t`, `-Z`,
`-j`), reaches other servers (`--include-foreign-data`), and positional arguments (a
database name). svc's own database is given last (`--dbname=<url>`, getopt keeps the last
value), its password through `PGPASSWORD` rather than the argument vector.
"""

from __future__ import annotations

import asyncio
import re
import shutil
from pathlib import Path
from urllib.parse import unquote, urlsplit, urlunsplit

from svc.config import child_environment
from svc.embedded import find_postgres_bindir
from svc.errors import ErrorCode, SvcError

# Long option → (short letter or "", takes an argument): pg_dump 15's options (`pg_dump
# --help`), less the refused ones listed in the module docstring.
ALLOWED: dict[str, tuple[str, bool]] = {
    # output content
    "data-only": ("a", False),
    "blobs": ("b", False),
    "no-blobs": ("B", False),
    "clean": ("c", False),
    "create": ("C", False),
    "extension": ("e", True),
    "encoding": ("E", True),
    "schema": ("n", True),
    "exclude-schema": ("N", True),
    "no-owner": ("O", False),
    "schema-only": ("s", False),
    "superuser": ("S", True),
    "table": ("t", True),
    "exclude-table": ("T", True),
    "no-privileges": ("x", False),
    "column-inserts": ("", False),
    "disable-dollar-quoting": ("", False),
    "disable-triggers": ("", False),
    "enable-row-security": ("", False),
    "exclude-table-data": ("", True),
    "extra-float-digits": ("", True),
    "if-exists": ("", False),
    "inserts": ("", False),
    "load-via-partition-root": ("", False),
    "no-comments": ("", False),
    "no-publications": ("", False),
    "no-security-labels": ("", False),
    "no-subscriptions": ("", False),
    "no-table-access-method": ("", False),
    "no-tablespaces": ("", False),
    "no-toast-compression": ("", False),
    "no-unlogged-table-data": ("", False),
    "on-conflict-do-nothing": ("", False),
    "quote-all-identifiers": ("", False),
    "rows-per-insert": ("", True),
    "section": ("", True),
    "serializable-deferrable": ("", False),
    "strict-names": ("", False),
    "use-set-session-authorization": ("", False),
    # general
    "format": ("F", True),  # plain text only (`_check_value`)
    "verbose": ("v", False),
    "lock-wait-timeout": ("", True),
    "no-sync": ("", False),
}
SHORT: dict[str, tuple[str, bool]] = {
    short: (name, arg) for name, (short, arg) in ALLOWED.items() if short
}
_PLAIN_FORMATS = frozenset({"p", "plain"})

# What `clean_output` drops (Hasura's list): comments, session settings, the search_path reset.
_NOISE = re.compile(
    r"^(--.*|SET .*|SELECT pg_catalog\.set_config\('search_path'.*|"
    r"COMMENT ON SCHEMA public IS .*|CREATE SCHEMA public;|\\(un)?restrict .*)$"
)


def _refuse(i: int, message: str) -> SvcError:
    return SvcError(ErrorCode.BAD_REQUEST, message, path=f"$.opts[{i}]")


def _check_value(name: str, value: str, i: int) -> None:
    if name == "format" and value.lower() not in _PLAIN_FORMATS:
        raise _refuse(i, f"pg_dump option --format={value} is not allowed: only plain text")


def check_options(opts: list[str]) -> None:
    """Accept `opts` only when every element is an allowed pg_dump option (`ALLOWED`, exact
    long names, short letters alone or combined as getopt reads them) with its argument.

    Raises 400 `bad-request` at `$.opts[i]` for the first element that is not: an unknown or
    refused option, an abbreviation, an option missing its argument, a positional argument,
    a NUL character, a format other than plain text.
    """
    i = 0
    while i < len(opts):
        opt = opts[i]
        if "\x00" in opt:
            raise _refuse(i, "pg_dump options must not contain NUL characters")
        if opt.startswith("--") and opt != "--":
            name, eq, value = opt[2:].partition("=")
            spec = ALLOWED.get(name)
            if spec is None:
                raise _refuse(i, f"pg_dump option --{name} is not allowed")
            if not spec[1]:
                if eq:
                    raise _refuse(i, f"pg_dump option --{name} takes no argument")
            elif not eq:
                if i + 1 >= len(opts):
                    raise _refuse(i, f"pg_dump option --{name} needs an argument")
                i += 1
                value = opts[i]
                if "\x00" in value:
                    raise _refuse(i, "pg_dump options must not contain NUL characters")
            if spec[1]:
                _check_value(name, value, i)
        elif opt.startswith("-") and len(opt) > 1 and opt != "--":
            j = 1
            while j < len(opt):
                letter = opt[j]
                found = SHORT.get(letter)
                if found is None:
                    raise _refuse(i, f"pg_dump option -{letter} is not allowed (in {opt!r})")
                name, takes = found
                if not takes:
                    j += 1
                    continue
                value = opt[j + 1 :]
                if not value:
                    if i + 1 >= len(opts):
                        raise _refuse(i, f"pg_dump option -{letter} needs an argument")
                    i += 1
                    value = opts[i]
                    if "\x00" in value:
                        raise _refuse(i, "pg_dump options must not contain NUL characters")
                _check_value(name, value, i)
                break
        else:
            raise _refuse(
                i, f"pg_dump argument {opt!r} is not allowed: only options, the database is svc's"
            )
        i += 1


def _pg_dump_binary() -> str:
    found = shutil.which("pg_dump")
    if found:
        return found
    candidate = Path(find_postgres_bindir()) / "pg_dump"
    if candidate.exists():
        return str(candidate)
    raise SvcError(ErrorCode.UNEXPECTED, "pg_dump is not installed on the server", status=500)


def clean(text: str) -> str:
    """Drop comments and session settings, and collapse runs of blank lines."""
    lines = [line for line in text.splitlines() if not _NOISE.match(line)]
    out = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip("\n")
    return out + "\n"


def _connection(database_url: str) -> tuple[str, dict[str, str]]:
    """(`database_url` without its password, the server's environment with `PGPASSWORD`
    set to it): the password stays out of the process list."""
    env = child_environment()
    parts = urlsplit(database_url)
    if parts.scheme not in ("postgres", "postgresql") or parts.password is None:
        return database_url, env
    env["PGPASSWORD"] = unquote(parts.password)
    userinfo, _, hostinfo = parts.netloc.rpartition("@")
    user = userinfo.partition(":")[0]
    netloc = f"{user}@{hostinfo}" if user else hostinfo
    return urlunsplit(parts._replace(netloc=netloc)), env


async def pg_dump(database_url: str, opts: list[str], clean_output: bool) -> bytes:
    """The output of `pg_dump <opts> --dbname=<svc's database>`.

    Raises 400 `bad-request` for an option the allow-list refuses (`check_options`), 500
    `unexpected` when `pg_dump` fails (its message is in `internal`).
    """
    check_options(opts)
    url, env = _connection(database_url)
    proc = await asyncio.create_subprocess_exec(
        _pg_dump_binary(),
        *opts,
        f"--dbname={url}",
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    out, err = await proc.communicate()
    if proc.returncode != 0:
        raise SvcError(
            ErrorCode.UNEXPECTED,
            "pg_dump failed",
            status=500,
            internal={"stderr": err.decode(errors="replace").strip()},
        )
    if not clean_output:
        return out
    return clean(out.decode()).encode()
