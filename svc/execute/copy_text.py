r"""Decode Postgres ``COPY ... TO STDOUT`` output in the default text format.

The format (see "Text Format" in the Postgres ``COPY`` documentation), with the
default options ``DELIMITER E'\t'`` and ``NULL '\N'``:

* each row ends with ``\n``; columns are separated by ``\t``;
* a column whose raw text is exactly ``\N`` is NULL (``\\N`` is the two-character
  string ``\N``);
* backslash escapes: ``\b \f \n \r \t \v`` (the control characters), ``\\`` (a
  backslash), ``\ooo`` (1-3 octal digits: the byte ``ooo & 0xFF``) and ``\xhh``
  (``x`` and 1-2 hex digits: that byte); a backslash before any other character
  stands for that character, so ``\x`` without a hex digit is ``x``, and a
  backslash before a real tab or newline makes it data rather than a separator,
  as in Postgres's own ``COPY FROM``.  Octal and hex escapes denote *bytes*: a run
  of them may spell one multi-byte UTF-8 character (``\303\251`` is ``é``);
* a line consisting of just ``\.`` marks the end of data (Postgres does not send
  it over the protocol, but ``psql``/``pg_dump`` files have it).

Postgres itself only ever emits ``\N``, ``\\`` and the six control-character
escapes; everything else it writes raw (UTF-8 multi-byte characters included).
"""

from __future__ import annotations

import re
from typing import cast

__all__ = ["decode_copy_text"]

_NULL = "\\N"
_END_OF_DATA = "\\."

# A backslash escape in bytes: octal, hex, any single byte, or a lone trailing
# backslash (dropped, as Postgres's COPY FROM does).
_ESCAPE = re.compile(rb"\\(?:[0-7]{1,3}|x[0-9A-Fa-f]{1,2}|.|$)", re.DOTALL)
# The escapes that map to a fixed result: backslash + any byte other than an
# octal digit (or 'x' followed by a hex digit, which the regex tries first).
_SIMPLE: dict[bytes, bytes] = {
    b"\\" + bytes((c,)): bytes((c,)) for c in range(256) if c not in b"01234567"
}
_SIMPLE.update(
    {
        b"\\b": b"\b",
        b"\\f": b"\f",
        b"\\n": b"\n",
        b"\\r": b"\r",
        b"\\t": b"\t",
        b"\\v": b"\v",
        b"\\": b"",
    }
)
# A delimiter tab or an escape (which may itself be a backslash + real tab).
_TAB_OR_ESCAPE = re.compile(r"\\.|\t", re.DOTALL)


def _unescape_match(m: re.Match[bytes]) -> bytes:
    esc = m.group()
    simple = _SIMPLE.get(esc)
    if simple is not None:
        return simple
    if esc[1] == 0x78:  # b"x": \xh or \xhh
        return bytes((int(esc[2:], 16),))
    return bytes((int(esc[1:], 8) & 0xFF,))


def _unescape_bytes(field: str) -> str:
    """Decode every kind of backslash escape in one field, working on its bytes.

    Raises UnicodeDecodeError if octal/hex escapes produce invalid UTF-8.
    """
    return _ESCAPE.sub(_unescape_match, field.encode("utf-8")).decode("utf-8")


def _unescape(field: str) -> str:
    """Decode the backslash escapes of one non-NULL field.

    Fast path for what Postgres emits (``\\\\`` and the control escapes) using
    ``str.split``/``str.replace``: every maximal run of backslashes starts an
    escape, so splitting at ``\\\\`` pairs left to right isolates the escaped
    backslashes, and each backslash left in a piece starts an escape whose
    character is not a backslash.  Anything else (octal/hex or "any other
    character" escapes) goes through ``_unescape_bytes``.

    Raises UnicodeDecodeError if octal/hex escapes produce invalid UTF-8.
    """
    parts = field.split("\\\\") if "\\\\" in field else [field]
    for k, part in enumerate(parts):
        if "\\" in part:
            part = part.replace("\\n", "\n").replace("\\t", "\t").replace("\\r", "\r")
            if "\\" in part:
                part = part.replace("\\b", "\b").replace("\\f", "\f").replace("\\v", "\v")
                if "\\" in part:
                    return _unescape_bytes(field)
            parts[k] = part
    return "\\".join(parts)


def _split_fields(line: str) -> list[str]:
    """Split ``line`` at tabs that are not escaped by a backslash (raw fields)."""
    fields: list[str] = []
    start = 0
    for m in _TAB_OR_ESCAPE.finditer(line):
        if m.group() == "\t":
            fields.append(line[start : m.start()])
            start = m.end()
    fields.append(line[start:])
    return fields


def _join_escaped_newlines(lines: list[str]) -> list[str]:
    """Re-join lines split at a newline that was escaped by a backslash."""
    out: list[str] = []
    pending: str | None = None
    for line in lines:
        if pending is not None:
            line = pending + "\n" + line
            pending = None
        if line.endswith("\\") and (len(line) - len(line.rstrip("\\"))) % 2:
            pending = line
        else:
            out.append(line)
    if pending is not None:  # data ends in a lone backslash
        out.append(pending)
    return out


def decode_copy_text(data: bytes) -> list[list[str | None]]:
    r"""Decode ``COPY ... TO STDOUT`` text-format output into rows of columns.

    Args:
        data: the complete output, UTF-8 encoded (the server's
            ``client_encoding``), e.g. the bytes collected by asyncpg's
            ``copy_from_query(..., output=...)``.  The final row's ``\n`` may
            be present (as Postgres sends it) or missing.

    Returns:
        One list per row, each holding one entry per column: the decoded text,
        or ``None`` for NULL.  ``b""`` gives ``[]``.  Rows are not checked to
        have equal lengths.  A row with zero columns (``COPY (SELECT) TO
        STDOUT``) is indistinguishable from a row holding one empty string and
        decodes as ``[""]``.

    Raises:
        UnicodeDecodeError (a ``ValueError``): ``data`` is not valid UTF-8, or
        octal/hex escapes spell invalid UTF-8 (Postgres rejects both too).
    """
    if not data:
        return []
    text = data.decode("utf-8")
    lines = text.split("\n")
    if "\\" not in text:
        # Fast path: no escapes and no NULLs anywhere.
        if not lines[-1]:
            lines.pop()  # after the final row terminator
        # (cast: list is invariant, and list[str] rows are valid list[str | None] rows)
        return cast("list[list[str | None]]", [line.split("\t") for line in lines])

    if "\\\n" in text:
        lines = _join_escaped_newlines(lines)
    if not lines[-1]:
        lines.pop()
    rows: list[list[str | None]] = []
    append = rows.append
    for line in lines:
        if "\\" not in line:
            append(cast("list[str | None]", line.split("\t")))
            continue
        if line == _END_OF_DATA:
            break
        raw = line.split("\t") if "\\\t" not in line else _split_fields(line)
        append([None if f == _NULL else _unescape(f) if "\\" in f else f for f in raw])
    return rows
