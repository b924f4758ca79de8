"""Optional sampling profile of svc under load (`python -m bench --profile`): py-spy records
every svc process during the first svc run of each query, in py-spy's raw (collapsed
stacks) format; this module starts it and summarises where the samples fall."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

NATIVE = "(no Python frame: granian's Rust threads)"
LOOP = "(native code under the event loop: uvloop, granian, asyncpg's protocol)"


def py_spy() -> str:
    """The py-spy binary, or exit with how to get it."""
    found = shutil.which("py-spy")
    if found is None:
        sys.exit("bench: --profile needs py-spy: uv run --with py-spy python -m bench --profile")
    return found


def start(pid: int, seconds: float, out: Path) -> subprocess.Popen[bytes]:
    """Record `pid` and its subprocesses for `seconds` into `out` (raw format)."""
    cmd = [py_spy(), "record", "--pid", str(pid), "--subprocesses", "--nonblocking"]
    cmd += ["--rate", "200", "--format", "raw", "--duration", str(max(1, round(seconds)))]
    cmd += ["--output", str(out)]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _leaf(stack: str) -> str:
    """The innermost Python frame of a collapsed stack as `function (path)`, or what the
    sample spent its time in when that frame only hands over to native code."""
    frames = [f for f in stack.split(";") if not f.startswith("process ")]
    if not frames:
        return NATIVE
    leaf = re.sub(r":\d+\)$", ")", frames[-1].strip())
    return LOOP if "_spawn_" in leaf and "granian/" in leaf else leaf


def _package(leaf: str) -> str:
    """`svc`, `asyncpg`, `granian`, … from the path in a leaf frame."""
    found = re.search(r"\(([^/)]+)/", leaf)
    return found.group(1) if found else "native"


def summarise(raw: Path, top: int = 12) -> str:
    """The share of samples per package (of the innermost Python frame) and the top
    innermost frames."""
    leaves: Counter[str] = Counter()
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            leaves[_leaf(stack)] += int(count)
    total = sum(leaves.values()) or 1
    packages: Counter[str] = Counter()
    for leaf, n in leaves.items():
        packages[_package(leaf)] += n
    shares = ", ".join(f"{p} {n / total:.0%}" for p, n in packages.most_common())
    lines = [f"  by package: {shares}"]
    lines += [f"  {n / total:6.1%}  {leaf}" for leaf, n in leaves.most_common(top)]
    return "\n".join(lines)
