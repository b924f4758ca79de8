"""The load generator: `wrk` with `post.lua`, one run per (server, query, round)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent / "post.lua"


@dataclass(frozen=True)
class Run:
    """The totals of one wrk run."""

    requests: int
    seconds: float
    errors: int
    p50_ms: float
    p99_ms: float

    @property
    def rps(self) -> float:
        """Requests per second."""
        return self.requests / self.seconds if self.seconds else 0.0


def wrk_path() -> str:
    """The wrk binary, or exit with how to get it."""
    found = shutil.which("wrk")
    if found is None:
        sys.exit("bench: wrk not found on PATH (Debian: apt-get install wrk)")
    return found


def wrk_version() -> str:
    """`wrk -v`'s first line."""
    out = subprocess.run([wrk_path(), "-v"], capture_output=True, text=True, check=False)
    return (out.stdout + out.stderr).splitlines()[0].strip()


def run_wrk(url: str, body_file: Path, *, seconds: float, connections: int, threads: int) -> Run:
    """POST `body_file` to `url` for `seconds` with `connections` kept open."""
    cmd = [
        wrk_path(),
        f"-t{min(threads, connections)}",
        f"-c{connections}",
        f"-d{max(1, round(seconds))}s",
        "--timeout",
        "30s",
        "-s",
        str(SCRIPT),
        url,
        "--",
        str(body_file),
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode != 0 or not lines:
        raise RuntimeError(f"wrk failed ({out.returncode}): {out.stderr or out.stdout}")
    data = json.loads(lines[-1])
    errors = sum(data["errors"].values())
    lat = data["latency_us"]
    return Run(
        data["requests"], data["duration_us"] / 1e6, errors, lat["p50"] / 1e3, lat["p99"] / 1e3
    )
