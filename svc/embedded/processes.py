"""Process and port helpers of the embedded cluster, from `/proc` and sockets (Linux)."""

from __future__ import annotations

import os
import shutil
import socket
import time
from collections.abc import Sequence
from pathlib import Path


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (the kernel's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def pid_alive(pid: int) -> bool:
    """True if a process ``pid`` exists and is not a zombie.

    A zombie counts as dead: a postmaster started by ``pg_ctl`` is reparented to
    PID 1, and a PID 1 that reaps lazily (containers, micro-VM init) leaves it as a
    zombie for a while after it exits, which ``kill(pid, 0)`` (and therefore
    ``pg_ctl status``) still reports as running.
    """
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    try:
        proc_stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    state = proc_stat.rpartition(")")[2].split()[:1]
    return state not in (["Z"], ["X"])


def wait_tcp(port: int, timeout: float) -> bool:
    """Poll until 127.0.0.1:``port`` accepts a TCP connection; ``timeout`` in seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return True
        except OSError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.1)


def pid_is_postgres(pid: int) -> bool:
    """Best effort: False only if /proc says ``pid`` is some other program."""
    try:
        comm = Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return True
    return comm.startswith(("postgres", "postmaster"))


def children(pid: int) -> list[int]:
    """Processes whose parent is ``pid`` (Postgres backends of a postmaster), from /proc."""
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if len(fields) > 1 and fields[1] == str(pid):
            found.append(int(entry.name))
    return found


def wait_dead(pids: Sequence[int], timeout: float) -> bool:
    """Poll until none of ``pids`` is alive (zombies count as dead); ``timeout`` in seconds."""
    deadline = time.monotonic() + timeout
    while any(pid_alive(pid) for pid in pids):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def empty_dir(path: Path) -> None:
    """Delete everything inside ``path`` (not following symlinks); keep ``path``."""
    for child in path.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)


def tail(text: str, lines: int = 30) -> str:
    """The last `lines` lines of `text` (a server log, for error messages)."""
    return "\n".join(text.strip().splitlines()[-lines:])
