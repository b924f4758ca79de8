"""Large introspection answers kept compressed in the plan cache.

The reference keeps an introspection answer until the schema changes (its console
introspects on every load). A role's `__schema { types }` over 10,000 tables is 55 MB of
JSON, 3.6 s to make, more than one plan-cache entry may hold (1/8 of the cache); its
text is so repetitive that zlib's fastest level makes it 1.1 MB in 77 ms and gives it
back in 74 ms (measured 2026-11-29, `bench.scale`'s schema). So an answer from
`PACK_FROM` bytes is kept compressed (`pack`) and given back in a worker thread
(`unpack`); smaller ones are kept as they are (a dict lookup on a hit).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

PACK_FROM = 1 << 20  # bytes of JSON from which answers are kept compressed
_LEVEL = 1  # zlib's fastest: 50x on introspection JSON, within 15% of its best


@dataclass(frozen=True, slots=True)
class Packed:
    """Answers by response key, each zlib-compressed; `size` is their compressed bytes."""

    answers: tuple[tuple[str, bytes], ...]
    size: int


def packs(answers: dict[str, bytes]) -> bool:
    """Whether `kept_form` compresses `answers` (response key → JSON bytes): from
    `PACK_FROM` bytes in all."""
    return sum(map(len, answers.values())) >= PACK_FROM


def kept_form(answers: dict[str, bytes]) -> dict[str, bytes] | Packed:
    """What the plan cache keeps of `answers` (response key → JSON bytes): a `Packed`
    when `packs(answers)` (CPU-bound: call it off the event loop then), else the answers
    themselves."""
    if not packs(answers):
        return answers
    packed = tuple((key, zlib.compress(value, _LEVEL)) for key, value in answers.items())
    return Packed(packed, sum(len(value) for _, value in packed))


def unpack(packed: Packed) -> dict[str, bytes]:
    """The answers `packed` holds (CPU-bound: ~75 ms for 55 MB)."""
    return {key: zlib.decompress(value) for key, value in packed.answers}


def kept_bytes(kept: dict[str, bytes] | Packed) -> int:
    """The bytes an entry of `kept_form` holds (its estimate in the plan cache)."""
    return kept.size if isinstance(kept, Packed) else sum(map(len, kept.values()))
