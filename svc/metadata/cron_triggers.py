"""Cron triggers in the metadata document, and the arguments of the scheduled-trigger
operations (spec 2.8, 2.9, 4.9; reference-notes-wave2 §3).

A `CronTrigger` is a frozen msgspec struct kept in `Metadata.cron_triggers` in the order
the triggers were created. Decoding normalises as the reference's export does
(Hasura `metadataToOrdJSON`): a `retry_conf` equal to the defaults, a null `payload` and
a null `comment` are not stored, so `export → replace → export` gives the same bytes.
Pure transitions (`add_cron_trigger`, `drop_cron_trigger`, `keep_unexported`) return new
documents; the rows of `hdb_catalog.hdb_cron_events` are `svc.workers.cron_events`'.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec
from croniter import croniter  # type: ignore[import-untyped]

from svc.errors import ErrorCode, SvcError
from svc.metadata.plain_names import check_plain_name
from svc.metadata.qualified import JSON, plain
from svc.outbound.headers import HeaderConf, check_header


class RetryConfST(msgspec.Struct, frozen=True):
    """Retries of a scheduled delivery (spec 2.8 RetryConfST): defaults 0 retries, 10 s
    between attempts, 60 s per attempt, 21600 s (6 h) of tolerance after which an
    undelivered event is `dead`. Every value is in whole seconds (counts for retries)."""

    num_retries: int = 0
    retry_interval_seconds: int = 10
    timeout_seconds: int = 60
    tolerance_seconds: int = 21600


DEFAULT_RETRY = RetryConfST()


class UrlFromEnv(msgspec.Struct, frozen=True):
    """`{from_env: NAME}`: the webhook URL is the value of an environment variable,
    read when an event is delivered (spec 2.8 UrlFromEnv)."""

    from_env: str


Webhook = str | UrlFromEnv  # a `{{ENV}}` URL template, or an environment variable


class CronTrigger(msgspec.Struct, frozen=True, omit_defaults=True):
    """One cron trigger as stored and exported (spec 2.8). `schedule`: a cron expression
    of 5 fields, or 6 with seconds last (croniter's form, an svc extension); `payload`
    any JSON (UNSET: none); `retry_conf` UNSET means the defaults."""

    name: str
    webhook: Webhook
    schedule: str
    include_in_metadata: bool
    payload: Any = msgspec.UNSET
    retry_conf: RetryConfST | msgspec.UnsetType = msgspec.UNSET
    headers: tuple[HeaderConf, ...] = ()
    comment: str | msgspec.UnsetType | None = msgspec.UNSET
    request_transform: dict[str, Any] | msgspec.UnsetType = msgspec.UNSET
    response_transform: dict[str, Any] | msgspec.UnsetType = msgspec.UNSET

    def __post_init__(self) -> None:
        check_plain_name(self.name, "name")

    @property
    def retry(self) -> RetryConfST:
        """The retry configuration with defaults filled in."""
        return DEFAULT_RETRY if self.retry_conf is msgspec.UNSET else self.retry_conf


class CreateCronTrigger(CronTrigger, frozen=True, omit_defaults=True):
    """`create_cron_trigger` args: a trigger plus `replace` (true: update the trigger of
    that name, which must exist)."""

    replace: bool = False


class DeleteCronTrigger(msgspec.Struct, frozen=True):
    """`delete_cron_trigger` args."""

    name: str


class CreateScheduledEvent(msgspec.Struct, frozen=True, omit_defaults=True):
    """`create_scheduled_event` args (spec 2.9): `schedule_at` an ISO 8601 timestamp
    (a time without offset is UTC)."""

    webhook: Webhook
    schedule_at: str
    payload: Any = None
    headers: tuple[HeaderConf, ...] = ()
    retry_conf: RetryConfST = DEFAULT_RETRY
    comment: str | None = None
    request_transform: dict[str, Any] | None = None
    response_transform: dict[str, Any] | None = None


def check_schedule(schedule: str, path: str) -> str:
    """`schedule` when croniter reads it as 5 fields (minute … weekday) or 6 (seconds
    last); else 400 `parse-failed` at `path` (the reference refuses an unreadable cron
    expression while decoding the arguments)."""
    fields = schedule.split()
    if len(fields) not in (5, 6) or not croniter.is_valid(schedule):
        raise SvcError(ErrorCode.PARSE_FAILED, f"invalid cron expression: {schedule!r}", path=path)
    return schedule


def schedule_times(schedule: str, after: datetime, count: int) -> list[datetime]:
    """The next `count` occurrences of `schedule` strictly after `after` (an aware UTC
    datetime), in order, as aware UTC datetimes (croniter)."""
    it = croniter(schedule, after)
    return [it.get_next(datetime) for _ in range(count)]


def _check_retry(retry: RetryConfST, path: str) -> None:
    for name in RetryConfST.__struct_fields__:
        if getattr(retry, name) < 0:
            raise SvcError(
                ErrorCode.PARSE_FAILED, "expected a non-negative integer", path=f"{path}.{name}"
            )


def normalise(trigger: CronTrigger, path: str = "$.args") -> CronTrigger:
    """`trigger` checked (schedule, headers, retry values; 400 `parse-failed` at the
    value's path) and in stored form: default retry_conf, null payload and null comment
    dropped, as the reference's export omits them. Returns a plain `CronTrigger` (a
    `CreateCronTrigger` loses `replace`)."""
    check_schedule(trigger.schedule, f"{path}.schedule")
    for i, header in enumerate(trigger.headers):
        check_header(header, f"{path}.headers[{i}]")
    retry = trigger.retry_conf
    if retry is not msgspec.UNSET:
        _check_retry(retry, f"{path}.retry_conf")
    return CronTrigger(
        name=trigger.name,
        webhook=trigger.webhook,
        schedule=trigger.schedule,
        include_in_metadata=trigger.include_in_metadata,
        payload=msgspec.UNSET if trigger.payload is None else trigger.payload,
        retry_conf=msgspec.UNSET if retry == DEFAULT_RETRY else retry,
        headers=trigger.headers,
        comment=msgspec.UNSET if trigger.comment is None else trigger.comment,
        request_transform=trigger.request_transform,
        response_transform=trigger.response_transform,
    )


def check_scheduled_event(event: CreateScheduledEvent, path: str = "$.args") -> None:
    """Headers and retry values of a one-off event (400 `parse-failed` at the path)."""
    for i, header in enumerate(event.headers):
        check_header(header, f"{path}.headers[{i}]")
    _check_retry(event.retry_conf, f"{path}.retry_conf")


def find_cron_trigger(triggers: tuple[CronTrigger, ...], name: str) -> CronTrigger | None:
    """The trigger called `name`, if any."""
    return next((t for t in triggers if t.name == name), None)


def add_cron_trigger(
    triggers: tuple[CronTrigger, ...], trigger: CronTrigger, replace: bool
) -> tuple[CronTrigger, ...]:
    """`triggers` with `trigger` added (or, with `replace`, put in place of the one of that
    name). Raises 400 `already-exists` "cron trigger with name: N already exists" (a new
    name taken) or 400 `not-exists` "cron trigger with name: N does not exist" (replace
    of an unknown one), path `$.args` (Hasura `runCreateCronTrigger`)."""
    old = find_cron_trigger(triggers, trigger.name)
    if replace:
        if old is None:
            raise _unknown(trigger.name)
        return tuple(trigger if t.name == trigger.name else t for t in triggers)
    if old is not None:
        raise SvcError(
            ErrorCode.ALREADY_EXISTS,
            f"cron trigger with name: {trigger.name} already exists",
            path="$.args",
        )
    return (*triggers, trigger)


def drop_cron_trigger(triggers: tuple[CronTrigger, ...], name: str) -> tuple[CronTrigger, ...]:
    """`triggers` without `name`; 400 `not-exists` when there is none (path `$.args`)."""
    if find_cron_trigger(triggers, name) is None:
        raise _unknown(name)
    return tuple(t for t in triggers if t.name != name)


def _unknown(name: str) -> SvcError:
    return SvcError(
        ErrorCode.NOT_EXISTS, f"cron trigger with name: {name} does not exist", path="$.args"
    )


def keep_unexported(
    old: tuple[CronTrigger, ...], new: tuple[CronTrigger, ...]
) -> tuple[CronTrigger, ...]:
    """The triggers after `replace_metadata`/`clear_metadata` installs `new`: the new
    ones, then the old triggers with `include_in_metadata: false` that `new` does not
    name (an export never held them, so replacing from one must not drop them; Hasura
    `runReplaceMetadataV2`)."""
    names = {t.name for t in new}
    return (*new, *(t for t in old if not t.include_in_metadata and t.name not in names))


def listed(trigger: CronTrigger) -> JSON:
    """A trigger as `get_cron_triggers` lists it: every key, `retry_conf` filled with the
    defaults and `headers` always present."""
    out: JSON = plain(trigger)
    out["retry_conf"] = plain(trigger.retry)
    out["headers"] = plain(trigger.headers)
    return out


def exported(obj: JSON) -> JSON:
    """An exported document (`metadata_to_obj`) without the cron triggers created with
    `include_in_metadata: false` (spec 2.1), and without the key when none is left."""
    triggers = [t for t in obj.get("cron_triggers") or [] if t.get("include_in_metadata")]
    if triggers:
        obj["cron_triggers"] = triggers
    else:
        obj.pop("cron_triggers", None)
    return obj


def normalise_all(triggers: tuple[CronTrigger, ...], path: str) -> tuple[CronTrigger, ...]:
    """Every trigger of a document `normalise`d (`replace_metadata`, metadata
    directories); errors at `<path>.cron_triggers[i]…`."""
    return tuple(normalise(t, f"{path}.cron_triggers[{i}]") for i, t in enumerate(triggers))
