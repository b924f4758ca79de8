"""Names of metadata objects that are not GraphQL names: roles, query collections and
their queries, REST endpoints, cron and event triggers.

The reference reads them as `NonEmptyText` (an empty one: "empty string not allowed").
svc also refuses control characters (U+0000-U+001F, U+007F): a NUL cannot be stored in a
Postgres `text` (a cron trigger named with one answered 500), and a newline or tab in a
role or trigger name breaks log lines, headers and the console. Checked by the
structs' `__post_init__`, so a bad name is 400 `parse-failed` at the object holding it
(msgspec's path), in the API and in a metadata directory alike.
"""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def check_plain_name(value: object, field: str) -> None:
    """Raise ValueError when `value` (the struct's `field`) is an empty string or holds a
    control character; anything else (a non-string is msgspec's to refuse) passes."""
    if not isinstance(value, str):
        return
    if value == "":
        raise ValueError(f"{field}: empty string not allowed")
    found = _CONTROL.search(value)
    if found is not None:
        raise ValueError(
            f"{field}: control characters are not allowed in a name "
            f"(found U+{ord(found.group()):04X})"
        )
