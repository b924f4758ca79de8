"""The typed event trigger of a table entry (spec 2.7; Hasura `RQL/Types/EventTrigger.hs`),
in Hasura's export form:

    {name, definition: {enable_manual, insert?: {columns, payload?}, update?, delete?},
     retry_conf: {num_retries, interval_sec, timeout_sec}, webhook | webhook_from_env,
     headers?, request_transform?, response_transform?}

`columns` / `payload` are `"*"` or a list of column names. svc extensions (README):
`retry_conf.backoff` ("exponential"), `retry_conf.max_interval_sec`, `paused`. Kept apart
from `svc.metadata.event_triggers` (the transitions) so that `svc.metadata.model` can
embed it.
"""

from __future__ import annotations

import re
from typing import Any, Literal

import msgspec

from svc.metadata.plain_names import check_plain_name
from svc.outbound import HeaderConf

OPS = ("insert", "update", "delete")
Columns = str | tuple[str, ...]
# Postgres trigger names are at most 63 bytes and svc prefixes "notify_svc_" and
# suffixes "_INSERT": the reference allows 42 characters of [A-Za-z0-9_-].
NAME_PATTERN = re.compile(r"^[A-Za-z0-9_\-]{1,42}$")


class OpSpec(msgspec.Struct, frozen=True):
    """One operation's spec: `columns` (listened; `"*"` = all) and `payload` (the columns
    sent; `"*"`/unset = all)."""

    columns: Columns = "*"
    payload: Columns | msgspec.UnsetType = msgspec.UNSET


class TriggerDefinition(msgspec.Struct, frozen=True):
    """`definition`: which operations fire and whether `invoke_event_trigger` may."""

    enable_manual: bool = False
    insert: OpSpec | msgspec.UnsetType = msgspec.UNSET
    update: OpSpec | msgspec.UnsetType = msgspec.UNSET
    delete: OpSpec | msgspec.UnsetType = msgspec.UNSET

    def op(self, name: str) -> OpSpec | None:
        """The spec of operation `name` ("insert", "update", "delete"), None when off."""
        spec = getattr(self, name)
        return None if spec is msgspec.UNSET else spec


class RetryConf(msgspec.Struct, frozen=True):
    """`retry_conf` (seconds; defaults are the reference's 0 / 10 / 60). `backoff`
    ("constant" | "exponential") and `max_interval_sec` are svc extensions."""

    num_retries: int = 0
    interval_sec: int = 10
    timeout_sec: int = 60
    backoff: Literal["constant", "exponential"] | msgspec.UnsetType = msgspec.UNSET
    max_interval_sec: int | msgspec.UnsetType = msgspec.UNSET


class EventTrigger(msgspec.Struct, frozen=True, omit_defaults=True):
    """One event trigger as stored in its table entry."""

    name: str
    definition: TriggerDefinition
    retry_conf: RetryConf = msgspec.field(default_factory=RetryConf)
    webhook: str | msgspec.UnsetType = msgspec.UNSET
    webhook_from_env: str | msgspec.UnsetType = msgspec.UNSET
    headers: tuple[HeaderConf, ...] | msgspec.UnsetType = msgspec.UNSET
    request_transform: dict[str, Any] | msgspec.UnsetType = msgspec.UNSET
    response_transform: dict[str, Any] | msgspec.UnsetType = msgspec.UNSET
    paused: bool | msgspec.UnsetType = msgspec.UNSET  # svc extension (pause/resume)

    def __post_init__(self) -> None:
        check_plain_name(self.name, "name")

    def header_confs(self) -> tuple[HeaderConf, ...]:
        """The configured headers (none when unset)."""
        return () if self.headers is msgspec.UNSET else self.headers
