"""Python's cyclic garbage collector kept off the objects of a big build.

Loading metadata builds millions of long-lived objects (the document, the catalog, the
IR); each of them counts towards the collector's thresholds, so a 10,000-table load ran
eight full collections, each walking the growing heap: 2.8 s of decoding and building
took 1.85 s with the collector off (`bench/scale.py`'s schema, 2026-11-28). Those objects
are freed by reference counting when a newer state replaces them; cycles made meanwhile
wait for the next collection after the block.

Objects made with the collector off stay in its youngest generation until a collection
walks them once to file them under the older ones: 0.4 s for the first state of a
10,000-table worker, which its first request paid. The first state stays until a
metadata change, so it is moved to the permanent generation instead (`keep_started`),
which no collection walks, and back to the oldest one when a newer state replaces it
(`release_started`), so that its cycles can be freed.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import threading
from collections.abc import Iterator

# Blocks may run at once in several threads (a load on the event loop, introspection in
# a worker thread): the collector is off while any runs and on again after the last, if it
# was on before the first. A count under a lock, so no interleaving leaves it off.
_LOCK = threading.Lock()
_paused = 0  # blocks running now
_was_on = False  # whether the collector was on when the first of them began


@contextlib.contextmanager
def gc_paused(*, file_away: bool = False) -> Iterator[None]:
    """The block runs with the cyclic collector off; it is on again after the last block
    running (in any thread) ends, if it was on before the first began. `file_away`, for
    a block whose objects stay (a role's schema: hundreds of thousands of objects): one
    collection of the young generations afterwards (when it is the last) files them under
    the oldest one, as the collector's own young collections would have, so they count
    towards its next full collection (which frees the schemas a new one replaced)."""
    global _paused, _was_on
    with _LOCK:
        if _paused == 0:
            _was_on = gc.isenabled()
            gc.disable()
        _paused += 1
    try:
        yield
    finally:
        with _LOCK:
            _paused -= 1
            if _paused == 0 and _was_on:
                if file_away:
                    gc.collect(1)
                gc.enable()


def keep_started() -> None:
    """Move every object tracked now (a worker's first state, just loaded) to the
    permanent generation (`gc.freeze`): no collection walks it again (module docstring)."""
    gc.freeze()


def release_started() -> None:
    """Give the objects `keep_started` moved back to the oldest generation (a newer state
    replaced them: their cycles must be freeable); nothing when none are kept."""
    if gc.get_freeze_count():
        gc.unfreeze()


def collect_soon() -> None:
    """A full collection at the event loop's next turn (after the request that calls it
    has handed its answer over), or now without a running loop: a dropped build's cycles
    (a fresh whole schema, `State.whole_schema`: ~300 MB and 1.2 s to free at 10,000
    tables) are freed then rather than whenever the next full collection comes. The heap
    is unfrozen first: the worker's freezer (`svc.server.freezer`) may have frozen the
    build while it was alive, and a frozen cycle is never collected (the freezer's next
    tick freezes the survivors again)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        _collect_all()
        return
    loop.call_soon(_collect_all)


def _collect_all() -> None:
    gc.unfreeze()
    gc.collect()
