"""JSON values as kriti-lang sees them through aeson: type names, equality (`Eq Value`),
the total order its comparisons use (`Ord Value`: Object < Array < String < Number <
Boolean < Null, then by content), and aeson's encoding (string interpolation writes
non-strings with `Data.Aeson.encode`)."""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

_RANK = {"Object": 0, "Array": 1, "String": 2, "Number": 3, "Boolean": 4, "Null": 5}


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def type_of(value: Any) -> str:
    """aeson's name of the value's type (`typeOfJSON` in `src/Kriti/Eval.hs`)."""
    if value is None:
        return "Null"
    if isinstance(value, bool):
        return "Boolean"
    if isinstance(value, int | float):
        return "Number"
    if isinstance(value, str):
        return "String"
    if isinstance(value, list | tuple):
        return "Array"
    return "Object"


def equal(a: Any, b: Any) -> bool:
    """aeson's `==`: same type and content; numbers by value, `true` never `1`."""
    ta, tb = type_of(a), type_of(b)
    if ta != tb:
        return False
    if ta == "Array":
        return len(a) == len(b) and all(equal(x, y) for x, y in zip(a, b, strict=True))
    if ta == "Object":
        return a.keys() == b.keys() and all(equal(a[k], b[k]) for k in a)
    return bool(a == b)


def compare(a: Any, b: Any) -> int:
    """aeson's `compare`: -1, 0 or 1."""
    ta, tb = type_of(a), type_of(b)
    if ta != tb:
        return -1 if _RANK[ta] < _RANK[tb] else 1
    if ta == "Array":
        return _compare_seq(list(a), list(b))
    if ta == "Object":
        return _compare_seq(
            [(k, a[k]) for k in sorted(a)], [(k, b[k]) for k in sorted(b)], pairs=True
        )
    if ta == "Null":
        return 0
    return -1 if a < b else (1 if a > b else 0)


def _compare_seq(xs: list[Any], ys: list[Any], pairs: bool = False) -> int:
    for x, y in zip(xs, ys, strict=False):
        if pairs:
            c = (-1 if x[0] < y[0] else 1) if x[0] != y[0] else compare(x[1], y[1])
        else:
            c = compare(x, y)
        if c:
            return c
    return (len(xs) > len(ys)) - (len(xs) < len(ys))


def _escape(text: str) -> str:
    out = ['"']
    for ch in text:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ch < " ":
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _number(value: int | float) -> str:
    if isinstance(value, int):
        return str(value)
    if not math.isfinite(value):
        return repr(value)
    if value == 0:
        return "0.0" if math.copysign(1, value) > 0 else "-0.0"
    # Data.Scientific's `formatScientific Generic`: fixed for 0.1 <= |x| < 10^7.
    sign, digits_t, exp = Decimal(repr(value)).as_tuple()
    assert isinstance(exp, int)
    digits = "".join(map(str, digits_t)).rstrip("0") or "0"
    e = len(digits_t) + exp  # value = 0.digits * 10**e
    neg = "-" if sign else ""
    if e < 0 or e > 7:
        rest = digits[1:] or "0"
        return f"{neg}{digits[0]}.{rest}e{e - 1}"
    if e == 0:
        return f"{neg}0.{digits}"
    whole = digits[:e].ljust(e, "0")
    frac = digits[e:] or "0"
    return f"{neg}{whole}.{frac}"


def encode(value: Any) -> str:
    """`Data.Aeson.encode`: compact, object keys in order (aeson's `KeyMap`)."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int | float):
        return _number(value)
    if isinstance(value, str):
        return _escape(value)
    if isinstance(value, list | tuple):
        return "[" + ",".join(encode(v) for v in value) + "]"
    items = sorted(value.items())
    return "{" + ",".join(f"{_escape(k)}:{encode(v)}" for k, v in items) + "}"
