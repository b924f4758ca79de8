"""The collector kept off the long-lived heap (`svc/server/freezer.py`): survivors are
frozen at each tick, a garbage cycle frozen while alive is freed at the next thaw (a
metadata version change, or `THAW_SECONDS`), and nothing stays frozen after `stop()`."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from svc.server.freezer import THAW_SECONDS, Freezer


class Node:
    """An object in a reference cycle (only the cyclic collector frees it)."""

    def __init__(self) -> None:
        self.me = self


@pytest.fixture
def clock() -> Iterator[list[float]]:
    now = [1000.0]
    yield now
    gc.unfreeze()


def cycle() -> weakref.ref[Node]:
    return weakref.ref(Node())


def test_a_tick_freezes_what_survives_and_collects_the_rest(clock: list[float]) -> None:
    version = [1]
    freezer = Freezer(lambda: version[0], lambda: clock[0])
    freezer.tick()
    kept = Node()
    dead = cycle()  # garbage before the tick: collected by it, never frozen
    before = gc.get_freeze_count()
    assert freezer.tick() is False  # same version, no thaw
    assert dead() is None
    assert gc.get_freeze_count() > before
    assert kept.me is kept


def test_a_cycle_that_dies_frozen_is_freed_at_the_next_version(clock: list[float]) -> None:
    version = [1]
    freezer = Freezer(lambda: version[0], lambda: clock[0])
    node = Node()
    ref = weakref.ref(node)
    freezer.tick()  # node frozen while alive
    del node
    gc.collect()
    assert ref() is not None  # frozen: the collector does not look at it
    assert freezer.tick() is False
    assert ref() is not None
    version[0] = 2  # a new metadata version: the old one's cycles must go
    assert freezer.tick() is True
    assert ref() is None


def test_the_whole_heap_is_collected_at_least_every_thaw_period(clock: list[float]) -> None:
    freezer = Freezer(lambda: 1, lambda: clock[0])
    node = Node()
    ref = weakref.ref(node)
    freezer.tick()
    del node
    clock[0] += THAW_SECONDS - 1
    assert freezer.tick() is False and ref() is not None
    clock[0] += 1
    assert freezer.tick() is True and ref() is None


def test_stop_unfreezes(clock: list[float]) -> None:
    freezer = Freezer(lambda: 1, lambda: clock[0])
    freezer.tick()
    assert gc.get_freeze_count() > 0
    freezer.stop()
    assert gc.get_freeze_count() == 0
