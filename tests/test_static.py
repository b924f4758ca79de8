"""Static checks are part of the suite: ruff (lint) over the project and mypy (strict) over
`svc/`, so CI fails on a type error as it does on a failing test."""

from __future__ import annotations

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
