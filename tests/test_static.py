"""Static checks are part of the suite: ruff (lint) over the project and mypy (strict) over
`svc/`, so CI fails on a type error as it does on a failing test."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys

from tests.support import ROOT


def run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_is_clean() -> None:
    ruff = shutil.which("ruff") or "ruff"
    result = run(ruff, "check", "svc", "tests")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict_is_clean() -> None:
    result = run(sys.executable, "-m", "mypy")
    assert result.returncode == 0, result.stdout + result.stderr


def test_comments_say_why_not_when() -> None:
    """No `issue N` tags under svc/: a comment names the rule's source (the spec, the
    reference, an ARCHITECTURE section), not the ticket that brought it."""
    tag = re.compile(r"\bissues? \d+", re.IGNORECASE)
    found = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in sorted((ROOT / "svc").rglob("*"))
        if path.suffix in {".py", ".js", ".html", ".lark"}
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
        if tag.search(line)
    ]
    assert found == []


def writes_to_std_streams(source: str) -> list[int]:
    """Lines that write to the process's streams by hand: `sys.stdout`/`sys.stderr` or
    `print(...)`."""
    found: list[int] = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Attribute)
            and node.attr in {"stdout", "stderr"}
            and isinstance(node.value, ast.Name)
            and node.value.id == "sys"
        ) or (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print"):
            found.append(node.lineno)
    return sorted(found)


def test_log_lines_go_through_logging() -> None:
    """One logging setup (`svc/logs.py`): below the CLI (whose output and messages are
    the user's), no module writes to stdout or stderr itself."""
    svc = ROOT / "svc"
    found = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in sorted(svc.rglob("*.py"))
        if path != svc / "logs.py" and "cli" not in path.relative_to(svc).parts
        for line in writes_to_std_streams(path.read_text())
    ]
    assert found == []


def test_the_stream_walker_finds_writes() -> None:
    assert writes_to_std_streams("import sys\nsys.stderr.write('x')\nprint('y')\n") == [2, 3]
    assert writes_to_std_streams("import logging\nlogging.getLogger(__name__).info('x')\n") == []


def test_no_module_global_state() -> None:
    """State is passed, not kept in module globals: no `global` statement under svc/ but
    the process's signal state and the cyclic collector's pause count (a signal handler
    and the collector are process-wide by nature)."""
    allowed = {"svc/server/lifecycle.py", "svc/gc_pause.py"}
    svc = ROOT / "svc"
    found = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path in sorted(svc.rglob("*.py"))
        if str(path.relative_to(ROOT)) not in allowed
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Global)
    ]
    assert found == []
