"""`svc.gc_pause`: the collector is off inside `gc_paused`, on again after (also after an
error), and a block inside another leaves it off until the outer one ends; `file_away`
files the block's objects under the older generations; an engine's first state is frozen
(`keep_started`) until the first metadata change releases it."""

from __future__ import annotations

import asyncio
import gc
import threading
import weakref
from collections.abc import Callable

import pytest

from svc.api.engine import Engine
from svc.config import Config
from svc.gc_pause import collect_soon, gc_paused, release_started


def test_paused_inside_restored_after_even_on_error() -> None:
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer block still runs
    assert gc.isenabled()
    with pytest.raises(RuntimeError), gc_paused():
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_off_before_stays_off() -> None:
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


class _Node:
    """An object the collector tracks."""

    def __init__(self) -> None:
        self.me = self  # a cycle: only the collector frees it


def test_file_away_moves_the_block_objects_out_of_the_young_generation() -> None:
    gc.collect()
    with gc_paused(file_away=True):
        made = [_Node() for _ in range(5000)]
    assert gc.get_count()[0] < 1000  # gen 0 emptied into the older ones
    assert all(gc.is_tracked(n) for n in made[:10])


def test_kept_objects_are_walked_by_no_collection_until_released(
    new_database: Callable[[], str],
) -> None:
    """A worker's first state is frozen when the engine starts; the first metadata change
    gives it back to the collector, and a cycle made before then is freed."""
    url = new_database()
    gc.collect()
    kept = weakref.ref(_made_cycle())

    async def go() -> None:
        eng = await Engine.start(Config(database_url=url, log_requests=False))
        try:
            assert gc.get_freeze_count() > 0
            gc.collect()
            assert kept() is not None  # frozen: the collection did not look at it
            await eng.metadata(
                {"type": "run_sql", "args": {"sql": "create table t (id int)"}}, "admin"
            )
            await eng.metadata({"type": "track_table", "args": "t"}, "admin")
            assert gc.get_freeze_count() == 0
        finally:
            await eng.close()

    try:
        asyncio.run(go())
        gc.collect()
        assert kept() is None
    finally:
        release_started()


@pytest.mark.parametrize("first", [True, False])
def test_the_first_state_leaves_no_young_objects(
    new_database: Callable[[], str], first: bool
) -> None:
    """The first state is frozen before the collector is on again: its objects are not
    left in the young generation, whose next collection would walk every one of them
    (0.2 s at 10,000 tables). A later load (`first` false) leaves them young."""
    url = new_database()

    async def go() -> int:
        eng = await Engine.start(Config(database_url=url, log_requests=False))
        try:
            sql = "".join(f"create table t{i} (id int primary key, name text);" for i in range(20))
            steps = [{"type": "track_table", "args": f"t{i}"} for i in range(20)]
            await eng.metadata({"type": "run_sql", "args": {"sql": sql}}, "admin")
            await eng.metadata({"type": "bulk", "args": steps}, "admin")
            gc.disable()  # so no collection empties the young generation meanwhile
            try:
                gc.collect()
                await Engine._load(eng.db, eng.state.resources, first=first)
                return gc.get_count()[0]
            finally:
                gc.enable()
        finally:
            await eng.close()

    try:
        young = asyncio.run(go())
    finally:
        release_started()
    assert (young < 700) == first  # 700: the young generation's threshold


def _made_cycle() -> _Node:
    """A cycle no one refers to once the caller drops it (kept only by a weak reference)."""
    return _Node()


def test_blocks_in_two_threads_leave_the_collector_on() -> None:
    """Interleaved blocks of two threads: off while either runs, on after both, whichever
    ends first."""
    assert gc.isenabled()
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()

    def first() -> None:
        with gc_paused():
            first_in.set()
            second_in.wait(5)
        first_out.set()

    thread = threading.Thread(target=first)
    thread.start()
    first_in.wait(5)
    with gc_paused():
        second_in.set()
        first_out.wait(5)
        assert not gc.isenabled()  # the first ended; this one still runs
    thread.join()
    assert gc.isenabled()


def test_collect_soon_frees_a_frozen_cycle() -> None:
    """A dropped build the freezer froze while it was alive is freed (`collect_soon`
    unfreezes first; a frozen cycle is never collected)."""
    kept = weakref.ref(_made_cycle())
    gc.freeze()  # as a freezer tick during the build
    try:
        gc.collect()
        assert kept() is not None  # frozen: not collected
        collect_soon()  # no running loop: now
        assert kept() is None
        assert gc.get_freeze_count() == 0
    finally:
        gc.unfreeze()
