"""Python's cyclic garbage collector paused around a big build.

Loading metadata builds millions of long-lived objects (the document, the catalog, the
IR); each of them counts towards the collector's thresholds, so a 10,000-table load ran
eight full collections, each walking the growing heap: 2.8 s of decoding and building
took 1.85 s with the collector off (`bench/scale.py`'s schema, 2026-11-28). Those objects
are freed by reference counting when a newer state replaces them; cycles made meanwhile
wait for the next collection after the block.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """The block runs with the cyclic collector off; it is on again after it if it was
    on before (a block inside another leaves it to the outer one)."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()
