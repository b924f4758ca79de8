"""The OS account that runs the Postgres binaries: ourselves, or a system user when root.

Postgres refuses to run as root; see `svc.embedded` for the rule.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import stat
import subprocess
from collections.abc import Sequence
from pathlib import Path

SUPERUSER = "postgres"
_FALLBACK_ACCOUNT = "svcpg"
_SYSTEM_DIRS = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")


class Account:
    """The OS account that runs the Postgres binaries (plus how to become it)."""

    def __init__(self, name: str, uid: int, gid: int, prefix: Sequence[str]) -> None:
        self.name = name
        self.uid = uid
        self.gid = gid
        self.prefix = list(prefix)
        self.gids = set(os.getgrouplist(name, gid)) if prefix else set(os.getgroups()) | {gid}

    def can_traverse(self, path: Path) -> bool:
        """True if this account may search ``path`` and every one of its parents."""
        for p in (path, *path.parents):
            try:
                st = os.stat(p)
            except OSError:
                return False
            if not _may(st, self.uid, self.gids, stat.S_IXUSR, stat.S_IXGRP, stat.S_IXOTH):
                return False
        return True


def _may(st: os.stat_result, uid: int, gids: set[int], u: int, g: int, o: int) -> bool:
    if uid == 0:
        return True
    if st.st_uid == uid:
        return bool(st.st_mode & u)
    if st.st_gid in gids:
        return bool(st.st_mode & g)
    return bool(st.st_mode & o)


def _which_system(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    return shutil.which(name, path=os.pathsep.join(_SYSTEM_DIRS))


def _ensure_system_account() -> pwd.struct_passwd:
    for name in (SUPERUSER, _FALLBACK_ACCOUNT):
        with contextlib.suppress(KeyError):
            return pwd.getpwnam(name)
    useradd = _which_system("useradd")
    if useradd is None:
        raise RuntimeError(
            "running as root: Postgres needs an unprivileged account, but neither a "
            f"'{SUPERUSER}' nor a '{_FALLBACK_ACCOUNT}' user exists and `useradd` is "
            f"not available to create '{_FALLBACK_ACCOUNT}'"
        )
    nologin = _which_system("nologin") or "/bin/false"
    proc = subprocess.run(
        [
            useradd,
            "--system",
            "--no-create-home",
            "--home-dir",
            "/nonexistent",
            "--shell",
            nologin,
            _FALLBACK_ACCOUNT,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    try:
        return pwd.getpwnam(_FALLBACK_ACCOUNT)
    except KeyError:
        raise RuntimeError(
            f"could not create system user '{_FALLBACK_ACCOUNT}' for Postgres: "
            f"{proc.stderr.strip() or proc.stdout.strip()}"
        ) from None


def current_account() -> Account:
    """The account to run Postgres as: ourselves, or a system user when root."""
    if os.geteuid() != 0:
        try:
            name = pwd.getpwuid(os.geteuid()).pw_name
        except KeyError:
            name = str(os.geteuid())
        return Account(name, os.geteuid(), os.getegid(), [])
    entry = _ensure_system_account()
    setpriv = _which_system("setpriv")
    runuser = _which_system("runuser")
    if setpriv is not None:
        prefix = [
            setpriv,
            f"--reuid={entry.pw_uid}",
            f"--regid={entry.pw_gid}",
            "--init-groups",
            "--",
        ]
    elif runuser is not None:
        prefix = [runuser, "-u", entry.pw_name, "--"]
    else:
        raise RuntimeError(
            "running as root: Postgres must run as an unprivileged user, but neither "
            "`setpriv` nor `runuser` (util-linux) is available; install util-linux or "
            "run svc as a non-root user"
        )
    return Account(entry.pw_name, entry.pw_uid, entry.pw_gid, prefix)


def chown_tree(root: Path, uid: int, gid: int) -> None:
    """``chown -R uid:gid root`` without following symlinks."""
    os.chown(root, uid, gid, follow_symlinks=False)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in (*dirnames, *filenames):
            os.chown(os.path.join(dirpath, name), uid, gid, follow_symlinks=False)
