"""`svc.gc_pause.gc_paused`: the collector is off inside, on again after (also after an
error), and a block inside another leaves it off until the outer one ends."""

from __future__ import annotations

import gc

import pytest

from svc.gc_pause import gc_paused


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
