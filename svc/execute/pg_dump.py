"""The pg_dump API (`POST /v1alpha1/pg_dump`, admin only): run the machine's `pg_dump`.

Hasura's request: `{opts: [pg_dump options], clean_output: bool, source}`; the answer is the
dump's text. The options go to `pg_dump` as an argument vector, never through a shell; the
ones that would write to a file on the server are refused.
"""

from __future__ import annotations

import asyncio
import re
import shutil
from pathlib import Path

from svc.errors import SvcError
from svc.execute.embedded import find_postgres_bindir

FILE_OPTIONS = ("-f", "--file")
# What `clean_output` drops (Hasura's list): comments, session settings, the search_path reset.
_NOISE = re.compile(
    r"^(--.*|SET .*|SELECT pg_catalog\.set_config\('search_path'.*|"
    r"COMMENT ON SCHEMA public IS .*|CREATE SCHEMA public;|\\(un)?restrict .*)$"
)


def _pg_dump_binary() -> str:
    found = shutil.which("pg_dump")
    if found:
        return found
    candidate = Path(find_postgres_bindir()) / "pg_dump"
    if candidate.exists():
        return str(candidate)
    raise SvcError("unexpected", "pg_dump is not installed on the server", status=500)


def clean(text: str) -> str:
    """Drop comments and session settings, and collapse runs of blank lines."""
    lines = [line for line in text.splitlines() if not _NOISE.match(line)]
    out = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip("\n")
    return out + "\n"


async def pg_dump(database_url: str, opts: list[str], clean_output: bool) -> bytes:
    """The output of `pg_dump <opts> --dbname <url>`.

    Raises 400 `bad-request` for an option that writes a file, 500 `unexpected` when
    `pg_dump` fails (its message is in `internal`).
    """
    for opt in opts:
        if opt in FILE_OPTIONS or opt.startswith(("--file=", "-f")):
            raise SvcError("bad-request", f"pg_dump option {opt!r} is not allowed", path="$.opts")
    proc = await asyncio.create_subprocess_exec(
        _pg_dump_binary(),
        *opts,
        "--dbname",
        database_url,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    if proc.returncode != 0:
        raise SvcError(
            "unexpected",
            "pg_dump failed",
            status=500,
            internal={"stderr": err.decode(errors="replace").strip()},
        )
    if not clean_output:
        return out
    return clean(out.decode()).encode()
