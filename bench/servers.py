"""The servers under test as child processes: svc, PostGraphile v4 (npm), the limit server;
and the resident memory of a process tree, read from /proc."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from bench.common import CACHE, ROOT, free_port, say

NODE_DIR = CACHE / "node"
LOGS = CACHE / "logs"
POSTGRAPHILE = NODE_DIR / "node_modules" / ".bin" / "postgraphile"
PROBE = b'{"query":"{ __typename }"}'


@dataclass
class Server:
    """A started server process: `url` is where GraphQL requests are POSTed."""

    name: str
    url: str
    proc: subprocess.Popen[bytes]
    log: Path

    def wait_ready(self, workers: int, probe: bytes = PROBE, timeout: float = 120) -> None:
        """Until `probe` (by default `{__typename}`) is answered with data `2 x workers + 2`
        times in a row (every worker has started), or raise with the end of the log."""
        deadline = time.monotonic() + timeout
        streak = 0
        with httpx.Client(timeout=10) as client:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"{self.name} exited:\n{self.tail()}")
                try:
                    r = client.post(self.url, content=probe, headers=_JSON)
                    ok = r.status_code == 200 and "errors" not in r.json()
                except (httpx.HTTPError, ValueError):
                    ok = False
                streak = streak + 1 if ok else 0
                if streak >= 2 * workers + 2:
                    return
                time.sleep(0.05 if ok else 0.2)
        raise RuntimeError(f"{self.name} did not become ready:\n{self.tail()}")

    def tail(self, chars: int = 3000) -> str:
        """The end of the server's output."""
        return self.log.read_text(errors="replace")[-chars:]

    def stop(self) -> None:
        """Terminate the server (and its workers) and wait."""
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


_JSON = {"content-type": "application/json"}


def _spawn(name: str, cmd: list[str], env: dict[str, str], cwd: Path, url: str) -> Server:
    LOGS.mkdir(parents=True, exist_ok=True)
    log = LOGS / f"{name}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, cwd=cwd, env={**os.environ, **env}, stdout=out, stderr=out)
    return Server(name, url, proc, log)


def start_svc(database_url: str, workers: int, interface: str | None = None) -> Server:
    """`svc serve --workers N` (request log off, as PostGraphile's query log is), on its
    default interface, or `interface` (the server is then named `svc_<interface>`)."""
    port = free_port()
    cmd = [sys.executable, "-m", "svc", "serve", "--database-url", database_url]
    cmd += ["--server-host", "127.0.0.1", "--server-port", str(port), "--workers", str(workers)]
    if interface:
        cmd += ["--server-interface", interface]
    env = {"SVC_GRAPHQL_LOG_REQUESTS": "false"}
    name = f"svc_{interface}" if interface else "svc"
    return _spawn(name, cmd, env, ROOT, f"http://127.0.0.1:{port}/v1/graphql")


def start_limit(spec: Path, workers: int, interface: str = "rsgi") -> Server:
    """The limit server (`bench.limit_server`) on the statements of `spec`: `limit` on
    RSGI, `limit_asgi` on ASGI."""
    port = free_port()
    cmd = [sys.executable, "-m", "bench.limit_server", str(spec), "--port", str(port)]
    cmd += ["--workers", str(workers), "--interface", interface]
    name = "limit" if interface == "rsgi" else f"limit_{interface}"
    return _spawn(name, cmd, {}, ROOT, f"http://127.0.0.1:{port}/v1/graphql")


def install_postgraphile() -> str | None:
    """Install PostGraphile v4 into `bench/.cache/node` once; returns its version, or None
    (with a message) when npm is missing or the install fails."""
    if not POSTGRAPHILE.exists():
        npm = shutil.which("npm")
        if npm is None or shutil.which("node") is None:
            say("PostGraphile skipped: npm/node not found (Debian: apt-get install npm)")
            return None
        say(f"installing postgraphile@4 into {NODE_DIR} (once)")
        NODE_DIR.mkdir(parents=True, exist_ok=True)
        cmd = [npm, "install", "--no-audit", "--no-fund", "--prefix", ".", "postgraphile@4"]
        done = subprocess.run(cmd, cwd=NODE_DIR, capture_output=True, text=True, check=False)
        if done.returncode != 0 or not POSTGRAPHILE.exists():
            say(f"PostGraphile skipped: npm install failed:\n{done.stderr[-2000:]}")
            return None
    package = NODE_DIR / "node_modules" / "postgraphile" / "package.json"
    version: str = json.loads(package.read_text())["version"]
    return version


def start_postgraphile(database_url: str, workers: int) -> Server:
    """PostGraphile v4 as svc.graphql's sibling file says, with `workers` cluster workers."""
    port = free_port()
    cmd = [str(POSTGRAPHILE), "-c", database_url, "--schema", "public"]
    cmd += ["--disable-default-mutations", "--dynamic-json", "--disable-query-log"]
    cmd += ["--host", "127.0.0.1", "--port", str(port)]
    if workers > 1:
        cmd += ["--cluster-workers", str(workers)]
    env = {"NODE_ENV": "production"}
    return _spawn("postgraphile", cmd, env, NODE_DIR, f"http://127.0.0.1:{port}/graphql")


# -- memory ---------------------------------------------------------------------------------
def tree(root: int) -> list[int]:
    """`root` and all its descendants."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def status_kb(pid: int, key: str) -> int:
    """A `kB` field of /proc/<pid>/status (`VmRSS`, `VmHWM`), 0 if gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


@dataclass
class RssSampler:
    """Samples the resident memory of a process tree in a thread while active."""

    root: int
    peak_total_kb: int = 0
    peak_process_kb: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> RssSampler:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            sizes = [status_kb(p, "VmRSS") for p in tree(self.root)]
            self.peak_total_kb = max(self.peak_total_kb, sum(sizes))
            self.peak_process_kb = max(self.peak_process_kb, *sizes, 0)
            self._stop.wait(0.25)

    def high_water_kb(self) -> int:
        """The largest `VmHWM` (kernel-recorded peak RSS) among the tree's processes."""
        return max((status_kb(p, "VmHWM") for p in tree(self.root)), default=0)
