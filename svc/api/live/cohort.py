"""Cohorts: the subscribers of one live query whose results are equal by construction
(reference notes "Subscriptions": "subscribers with equal variables form a
cohort").

A cohort's variables (`cohort_vars`) are exactly what its statement reads — the resolved
GraphQL variables and literals (`synthetic`) and the session variables the permissions
and arguments read — so two subscribers with equal variable texts get equal results, and
the text is the cohort's key. Session variables the statement does not read do not split
cohorts.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec

from svc.api.live.handle import LiveHandle
from svc.api.live.watch import time_relative
from svc.errors import ErrorCode, SvcError
from svc.execute.params import resolve
from svc.sql.live import LiveStatement

_encode = msgspec.json.encode


def cohort_vars(
    live: LiveStatement, variables: Mapping[str, Any], session: Mapping[str, str]
) -> str:
    """The JSON text of one subscriber's cohort variables `{query, session, synthetic,
    cursor}` (the reference's `CohortVariables`, which explain shows): `synthetic` the
    texts of `live.synthetic` resolved with the coerced `variables` (a list as a Postgres
    array literal), `session` the session variables the statement reads (all of them
    when it reads the whole session, a function's session argument). Raises `SvcError`
    400 `not-found` 'missing session variable: "x"' for a session variable the statement
    needs and `session` lacks (an optional one is read as null, as for queries)."""
    if live.whole_session:
        used = dict(session)
    else:
        used = {}
        for ref in live.session_refs:
            if ref.name in session:
                used[ref.name] = session[ref.name]
            elif not ref.optional:
                raise SvcError(ErrorCode.NOT_FOUND, f'missing session variable: "{ref.name}"')
    texts = resolve(live.synthetic, variables, {})
    synthetic = [_array_text(v) if isinstance(v, list) else v for v in texts]
    return _encode({"query": {}, "session": used, "synthetic": synthetic, "cursor": {}}).decode()


_PLAIN = re.compile(r'[^\s{}",\\]+')  # an array element Postgres reads unquoted


def _array_text(values: list[Any]) -> str:
    """A Postgres array literal of element texts (nested lists nest), quoting only the
    elements that need it, as the reference shows them: `{1,2,3}`, `{"a b",NULL}`."""
    parts: list[str] = []
    for v in values:
        if v is None:
            parts.append("NULL")
        elif isinstance(v, list):
            parts.append(_array_text(v))
        elif _PLAIN.fullmatch(v) and v.upper() != "NULL":
            parts.append(v)
        else:
            parts.append('"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"')
    return "{" + ",".join(parts) + "}"


@dataclass(eq=False)
class Cohort:
    """Subscribers sharing one variables text (`vars`): fetched once per poll under `id`
    (a uuid's text, the statement's `cohort_id`). `payload` is the last body pushed
    (None before the first fetch): a subscriber joining later gets it at once, and a poll
    pushes only when the new body differs from it."""

    vars: str
    id: str = field(default_factory=lambda: str(uuid.uuid4()))
    subscribers: set[LiveHandle] = field(default_factory=set)
    payload: bytes | None = None
    error: tuple[str, str] | None = None  # (code, message) of the error last pushed
    clock: bool = field(init=False)  # its variables may read the clock: fetch every interval

    def __post_init__(self) -> None:
        self.clock = time_relative(self.vars)

    def join(self, handle: LiveHandle) -> None:
        """Add a subscriber; it gets the last body at once when there is one."""
        self.subscribers.add(handle)
        if self.payload is not None:
            handle.deliver(self.payload)

    def publish(self, payload: bytes) -> bool:
        """Push `payload` to every subscriber if it differs from the last one pushed
        (byte equality); returns whether it was pushed."""
        if payload == self.payload:
            return False
        self.payload, self.error = payload, None
        for handle in self.subscribers:
            handle.deliver(payload)
        return True

    def fail(self, error: tuple[str, str], payload: bytes) -> None:
        """Push an `{"errors": …}` `payload` unless an error of the same (code, message)
        was the last thing pushed: an outage pushes one error, not one per poll (its
        internal detail, shown to admin, varies from one attempt to the next)."""
        if error != self.error:
            self.publish(payload)
            self.error = error
