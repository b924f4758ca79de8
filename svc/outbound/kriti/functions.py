"""kriti-lang's basic function map (`basicFuncMap`, `src/Kriti/CustomFunctions.hs`):
`empty`, `size`, `inverse`, `head`, `tail`, `toCaseFold`, `toLower`, `toUpper`,
`toTitle`, `escapeUri`, `fromPairs`, `toPairs`, `removeNulls`, `concat`, `not`.

Each takes one JSON value and returns one, or raises `CustomFunctionError` with
kriti-lang's message (those built with aeson's `withText`/`withArray`/… read
`parsing <name> failed, expected <Type>, but encountered <Type>`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any
from urllib.parse import quote

from svc.outbound.kriti.errors import CustomFunctionError
from svc.outbound.kriti.jsonvalue import is_number, type_of

KritiFunction = Callable[[Any], Any]


def _mismatch(name: str, expected: str, value: Any) -> CustomFunctionError:
    return CustomFunctionError(
        f"parsing {name} failed, expected {expected}, but encountered {type_of(value)}"
    )


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise _mismatch("String", "String", value)
    return value


def empty(value: Any) -> Any:
    if isinstance(value, bool):
        raise CustomFunctionError("Cannot define emptiness for a boolean")
    if value is None:
        return True
    if isinstance(value, str):
        return value.strip() == ""
    if is_number(value):
        return bool(value == 0)
    return len(value) == 0


def size(value: Any) -> Any:
    if value is None:
        return 0
    if isinstance(value, bool):
        return int(value)
    if is_number(value):
        return value
    return len(value)


def inverse(value: Any) -> Any:
    if value is None or isinstance(value, dict):
        return value
    if isinstance(value, bool):
        return not value
    if isinstance(value, str):
        return value[::-1]
    if isinstance(value, list):
        return value[::-1]
    # Scientific's `1 / x`: exact, and an error (not a float) for 0 or a repeating decimal.
    if value == 0:
        raise CustomFunctionError("Division by zero")
    ratio = 1 / Fraction(repr(value) if isinstance(value, float) else value)
    den = ratio.denominator
    for p in (2, 5):
        while den % p == 0:
            den //= p
    if den != 1:
        raise CustomFunctionError(f"1 / {value} is a repeating decimal")
    return int(ratio) if ratio.denominator == 1 else float(ratio)


def head(value: Any) -> Any:
    if isinstance(value, list):
        if not value:
            raise CustomFunctionError("Empty array")
        return value[0]
    if isinstance(value, str):
        if not value:
            raise CustomFunctionError("Empty string")
        return value[0]
    raise CustomFunctionError("Expected an array or string")


def tail(value: Any) -> Any:
    # kriti-lang's `V.tail`/`T.tail` throw on empty input: reported here as an error.
    if isinstance(value, list):
        if not value:
            raise CustomFunctionError("Empty array")
        return value[1:]
    if isinstance(value, str):
        if not value:
            raise CustomFunctionError("Empty string")
        return value[1:]
    raise CustomFunctionError("Expected an array or string")


def to_case_fold(value: Any) -> Any:
    return _text(value).casefold()


def to_lower(value: Any) -> Any:
    return _text(value).lower()


def to_upper(value: Any) -> Any:
    return _text(value).upper()


def to_title(value: Any) -> Any:
    return _text(value).title()


def escape_uri(value: Any) -> Any:
    """network-uri's `escapeURIString isUnreserved`: all but ASCII letters, digits and
    `-_.~` percent-encoded (UTF-8, upper-case hex)."""
    return quote(_text(value), safe="")


def to_pairs(value: Any) -> Any:
    if not isinstance(value, dict):
        raise _mismatch("Object", "Object", value)
    return [[k, value[k]] for k in sorted(value)]


def from_pairs(value: Any) -> Any:
    if not isinstance(value, list):
        raise _mismatch("Nested Arrays", "Array", value)
    out: dict[str, Any] = {}
    for pair in value:
        if not isinstance(pair, list):
            raise _mismatch("Array of Pair", "Array", pair)
        if len(pair) != 2:
            raise CustomFunctionError(
                "Expected an array of shape [ [k1,v1], [k2,v2] ... ] - With String keys."
            )
        key, val = pair
        if not isinstance(key, str):
            raise _mismatch("Key", "String", key)
        out[key] = val
    return out


def remove_nulls(value: Any) -> Any:
    if not isinstance(value, list):
        raise _mismatch("Array", "Array", value)
    return [v for v in value if v is not None]


def concat(value: Any) -> Any:
    if not isinstance(value, list):
        raise _mismatch("Array", "Array", value)
    if all(isinstance(v, list) for v in value):
        return [x for v in value for x in v]
    if all(isinstance(v, str) for v in value):
        return "".join(value)
    merged: dict[str, Any] = {}
    for v in value:
        if not isinstance(v, dict):
            raise _mismatch("Nested Object", "Object", v)
        merged.update(v)  # the right-most object wins
    return merged


def not_(value: Any) -> Any:
    if not isinstance(value, bool):
        raise _mismatch("Bool", "Boolean", value)
    return not value


BASIC_FUNCTIONS: Mapping[str, KritiFunction] = {
    "empty": empty,
    "size": size,
    "inverse": inverse,
    "head": head,
    "tail": tail,
    "toCaseFold": to_case_fold,
    "toLower": to_lower,
    "toUpper": to_upper,
    "toTitle": to_title,
    "escapeUri": escape_uri,
    "fromPairs": from_pairs,
    "toPairs": to_pairs,
    "removeNulls": remove_nulls,
    "concat": concat,
    "not": not_,
}
