"""Progress of the CLI's long commands (`svc migrate apply`, `svc metadata apply`): a bar
and each step's time when stderr is a terminal (rich's `Progress`: a well-kept library,
not svc's to write), nothing more otherwise, so piped output and logs stay the plain
lines the commands print anyway.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


class Steps:
    """`with Steps("migrate apply", total) as steps:` then `with steps.step(name):` per
    step. Shown when `console` is a terminal (by default rich's console on stderr, which
    is one only when stderr is attached to a terminal); each finished step is printed
    with its time (seconds, 3 decimals), and the bar counts them."""

    def __init__(self, title: str, total: int, console: Console | None = None) -> None:
        self.console = console or Console(file=sys.stderr)
        self.shown = self.console.is_terminal
        self.title = title
        self.total = total
        self.timings: list[tuple[str, float]] = []
        self._progress: Progress | None = None
        self._task: Any = None

    def __enter__(self) -> Steps:
        if self.shown:
            self._progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=self.console,
                transient=True,
            )
            self._progress.start()
            self._task = self._progress.add_task(self.title, total=self.total)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()
            if self.timings:
                total = sum(t for _, t in self.timings)
                self.console.print(f"{self.title}: {len(self.timings)} step(s) in {total:.3f} s")

    @contextlib.contextmanager
    def step(self, name: str) -> Iterator[None]:
        """Time one step (recorded in `timings` whether shown or not)."""
        started = time.perf_counter()
        if self._progress is not None:
            self._progress.update(self._task, description=f"{self.title}: {name}")
        try:
            yield
        finally:
            took = time.perf_counter() - started
            self.timings.append((name, took))
            if self._progress is not None:
                self._progress.console.print(f"  {name}  {took:.3f} s")
                self._progress.advance(self._task)
