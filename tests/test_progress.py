"""Progress of the long CLI commands (issue 30; `svc/cli/progress.py`): on a terminal a
bar (rich's `Progress`) and each step's time; anywhere else nothing beyond the commands'
own lines. The terminal is rich's own forced-terminal console; `svc migrate apply` is
run through `main()` with stderr made a terminal that way."""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.console import Console

from svc.cli import progress
from svc.cli.progress import Steps
from tests.test_migrate import V1, V2, V3, cli, write_project


@pytest.fixture
def db(new_database: Callable[[], str]) -> str:
    return new_database()


def test_steps_on_a_terminal_show_each_step_and_its_time() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=100)
    with Steps("apply", 2, console) as steps:
        with steps.step("first"):
            pass
        with steps.step("second"):
            pass
    text = plain(out.getvalue())
    assert steps.shown
    assert "first" in text and "second" in text
    assert "apply: 2 step(s) in" in text
    assert [name for name, _ in steps.timings] == ["first", "second"]


def test_steps_elsewhere_print_nothing() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=False)
    with Steps("apply", 1, console) as steps, steps.step("only"):
        pass
    assert not steps.shown and out.getvalue() == ""
    assert len(steps.timings) == 1  # timed all the same


def test_migrate_apply_shows_its_steps_on_a_terminal(
    tmp_path: Path,
    db: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    shown = io.StringIO()

    def terminal(file: object = None) -> Console:
        return Console(file=shown, force_terminal=True, width=120)

    monkeypatch.setattr(progress, "Console", terminal)
    project = write_project(tmp_path / "p")
    code, _, err = cli(capsys, "apply", "--project", str(project), "--database-url", db)
    assert code == 0, err
    text = plain(shown.getvalue())
    for version in (V1, V2, V3):
        assert f"{version}_" in text
    assert "svc migrate apply: 3 step(s) in" in text


def plain(text: str) -> str:
    """`text` without the terminal's escape sequences."""
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)
