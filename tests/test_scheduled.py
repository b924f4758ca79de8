"""Cron triggers and one-off scheduled events (issue 15) on a real `svc serve` with a real
Postgres and a real recording webhook (tests/webhook_recorder.py)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from croniter import croniter  # type: ignore[import-untyped]

from svc.metadata.directory import metadata_from_files, metadata_to_files
from svc.metadata.model import metadata_from_obj
from tests.support import ServerProcess
from tests.webhook_recorder import WebhookRecorder


@pytest.fixture(scope="module")
def hook() -> Iterator[WebhookRecorder]:
    with WebhookRecorder() as recorder:
        yield recorder


@pytest.fixture(scope="module")
def srv(new_database: Callable[[], str]) -> Iterator[ServerProcess]:
    s = ServerProcess(new_database(), env={"SCHED_TEST_HOOK_HEADER": "from-env"})
    try:
        yield s
    finally:
        s.stop()


def ok(srv: ServerProcess, body: dict[str, Any], url: str = "/v1/query") -> Any:
    r = srv.client.post(url, json=body)
    assert r.status_code == 200, r.text
    return r.json()


def sql(srv: ServerProcess, text: str) -> list[list[Any]]:
    rows: list[list[Any]] = ok(srv, {"type": "run_sql", "args": {"sql": text}})["result"]
    return rows[1:]


def cron(name: str, url: str, schedule: str = "0 3 * * *", **extra: Any) -> dict[str, Any]:
    args = {"name": name, "webhook": url, "schedule": schedule, "include_in_metadata": True}
    return {"type": "create_cron_trigger", "args": {**args, **extra}}


def times_of(srv: ServerProcess, name: str) -> list[str]:
    rows = sql(
        srv,
        "select to_char(timezone('utc', scheduled_time), 'YYYY-MM-DD HH24:MI:SS') "
        f"from hdb_catalog.hdb_cron_events where trigger_name = '{name}' "
        "and status = 'scheduled' order by scheduled_time",
    )
    return [r[0] for r in rows]


def expected(schedule: str, after: datetime, n: int = 100) -> list[str]:
    it = croniter(schedule, after)
    return [it.get_next(datetime).strftime("%Y-%m-%d %H:%M:%S") for _ in range(n)]


def test_create_generates_next_100_and_replace_regenerates(srv: ServerProcess) -> None:
    before = datetime.now(UTC)
    ok(srv, cron("gen", "http://127.0.0.1:1/x", "*/5 * * * *"))
    assert times_of(srv, "gen") == expected("*/5 * * * *", before)
    ok(srv, cron("gen", "http://127.0.0.1:1/x", "7 1 * * *", replace=True))
    assert times_of(srv, "gen") == expected("7 1 * * *", datetime.now(UTC))
    ok(srv, {"type": "delete_cron_trigger", "args": {"name": "gen"}})
    assert times_of(srv, "gen") == []


@pytest.mark.parametrize(
    ("body", "status", "code", "error"),
    [
        (
            cron("dup", "http://h/x"),
            400,
            "already-exists",
            "cron trigger with name: dup already exists",
        ),
        (
            cron("nope", "http://h/x", replace=True),
            400,
            "not-exists",
            "cron trigger with name: nope does not exist",
        ),
        (
            {"type": "delete_cron_trigger", "args": {"name": "nope"}},
            400,
            "not-exists",
            "cron trigger with name: nope does not exist",
        ),
        (
            cron("bad", "http://h/x", "61 * * * *"),
            400,
            "parse-failed",
            "invalid cron expression: '61 * * * *'",
        ),
        (
            cron("bad", "http://h/x", headers=[{"name": "a"}]),
            400,
            "parse-failed",
            "expecting value or value_from_env keys",
        ),
    ],
)
def test_errors(
    srv: ServerProcess, body: dict[str, Any], status: int, code: str, error: str
) -> None:
    listed = ok(srv, {"type": "get_cron_triggers", "args": {}}, "/v1/metadata")["cron_triggers"]
    if not any(t["name"] == "dup" for t in listed):
        ok(srv, cron("dup", "http://h/x"))
    before = ok(srv, {"type": "get_cron_triggers", "args": {}})
    r = srv.query(body)
    assert (r.status_code, r.json()["code"], r.json()["error"]) == (status, code, error)
    # a refused operation changes nothing
    assert ok(srv, {"type": "get_cron_triggers", "args": {}}) == before


def test_get_export_replace_clear_keep_the_reference_rules(srv: ServerProcess) -> None:
    ok(srv, {"type": "clear_metadata", "args": {}})
    for row in ok(srv, {"type": "get_cron_triggers", "args": {}}, "/v1/metadata")["cron_triggers"]:
        ok(srv, {"type": "delete_cron_trigger", "args": {"name": row["name"]}})
    shown = cron("shown", "{{HOOK}}/a", payload={"k": 1}, headers=[{"name": "h", "value": "v"}])
    hidden = cron("hidden", "http://127.0.0.1:1/b", include_in_metadata=False)
    hidden["args"]["retry_conf"] = {"num_retries": 2}
    ok(srv, {"type": "bulk", "args": [shown, hidden]})
    listed = ok(srv, {"type": "get_cron_triggers", "args": {}}, "/v1/metadata")["cron_triggers"]
    assert listed == [
        {
            "name": "shown",
            "webhook": "{{HOOK}}/a",
            "schedule": "0 3 * * *",
            "include_in_metadata": True,
            "payload": {"k": 1},
            "retry_conf": {
                "num_retries": 0,
                "retry_interval_seconds": 10,
                "timeout_seconds": 60,
                "tolerance_seconds": 21600,
            },
            "headers": [{"name": "h", "value": "v"}],
        },
        {
            "name": "hidden",
            "webhook": "http://127.0.0.1:1/b",
            "schedule": "0 3 * * *",
            "include_in_metadata": False,
            "retry_conf": {
                "num_retries": 2,
                "retry_interval_seconds": 10,
                "timeout_seconds": 60,
                "tolerance_seconds": 21600,
            },
            "headers": [],
        },
    ]
    exported = ok(srv, {"type": "export_metadata", "args": {}})
    assert exported["cron_triggers"] == [
        {
            "name": "shown",
            "webhook": "{{HOOK}}/a",
            "schedule": "0 3 * * *",
            "include_in_metadata": True,
            "payload": {"k": 1},
            "headers": [{"name": "h", "value": "v"}],
        }
    ]
    v2 = ok(srv, {"type": "export_metadata", "version": 2, "args": {}}, "/v1/metadata")
    assert v2["metadata"]["cron_triggers"] == exported["cron_triggers"]
    # export → replace → export: same bytes, the unexported trigger and both sets of rows kept
    ok(srv, {"type": "replace_metadata", "args": exported})
    assert (
        srv.query({"type": "export_metadata", "args": {}}).content
        == srv.query({"type": "export_metadata", "args": {}}).content
    )
    assert ok(srv, {"type": "export_metadata", "args": {}}) == exported
    names = [t["name"] for t in ok(srv, {"type": "get_cron_triggers", "args": {}})["cron_triggers"]]
    assert names == ["shown", "hidden"]
    assert len(times_of(srv, "shown")) == len(times_of(srv, "hidden")) == 100
    # the metadata directory round-trips the export byte for byte
    files = metadata_to_files(metadata_from_obj(exported))
    assert metadata_to_files(metadata_from_files(files)) == files
    assert "name: shown" in files["cron_triggers.yaml"]
    # replace without `shown`: it goes with its events; clear keeps `hidden`
    ok(srv, {"type": "replace_metadata", "args": {"version": 2, "tables": []}})
    assert times_of(srv, "shown") == []
    ok(srv, {"type": "clear_metadata", "args": {}})
    names = [t["name"] for t in ok(srv, {"type": "get_cron_triggers", "args": {}})["cron_triggers"]]
    assert names == ["hidden"]
    assert len(times_of(srv, "hidden")) == 100
    ok(srv, {"type": "delete_cron_trigger", "args": {"name": "hidden"}})


def one_off(url: str, at: datetime | str, **extra: Any) -> dict[str, Any]:
    when = at if isinstance(at, str) else at.isoformat()
    return {
        "type": "create_scheduled_event",
        "args": {"webhook": url, "schedule_at": when, **extra},
    }


def test_one_off_arrives_within_1_5_s_of_its_time(
    srv: ServerProcess, hook: WebhookRecorder
) -> None:
    hook.drain()
    at = datetime.now(UTC) + timedelta(seconds=2)
    headers = [
        {"name": "x-a", "value": "1"},
        {"name": "x-b", "value_from_env": "SCHED_TEST_HOOK_HEADER"},
    ]
    answer = ok(
        srv, one_off(hook.url("/soon"), at, payload={"p": [1]}, headers=headers, comment="c")
    )
    assert answer["message"] == "success"
    got = hook.pop(within=10)
    late = time.time() - at.timestamp()
    assert -0.05 < late < 1.5, late
    created = sql(
        srv,
        "select replace(timezone('utc', created_at)::text, ' ', 'T') || 'Z' "
        f"from hdb_catalog.hdb_scheduled_events where id = '{answer['event_id']}'",
    )[0][0]
    assert got.path == "/soon"
    assert got.json == {
        "id": answer["event_id"],
        "scheduled_time": got.json["scheduled_time"],
        "payload": {"p": [1]},
        "comment": "c",
        "created_at": created,
    }
    assert datetime.fromisoformat(got.json["scheduled_time"]) == at
    assert (got.headers["x-a"], got.headers["x-b"]) == ("1", "from-env")
    assert got.headers["content-type"] == "application/json"
    assert got.headers["user-agent"].startswith("svc/")


def wait_rows(srv: ServerProcess, text: str, want: list[list[Any]], seconds: float = 15) -> None:
    deadline = time.monotonic() + seconds
    while (rows := sql(srv, text)) != want:
        assert time.monotonic() < deadline, rows
        time.sleep(0.2)


def test_dead_retries_error_logs_and_listing(srv: ServerProcess, hook: WebhookRecorder) -> None:
    ok(srv, {"type": "run_sql", "args": {"sql": "delete from hdb_catalog.hdb_scheduled_events"}})
    hook.drain()
    now = datetime.now(UTC)
    retry = {
        "num_retries": 1,
        "retry_interval_seconds": 1,
        "timeout_seconds": 1,
        "tolerance_seconds": 21600,
    }
    ids = [
        a["event_id"]
        for a in ok(
            srv,
            {
                "type": "bulk",
                "args": [
                    one_off(hook.url("/old"), "2020-01-01T00:00:00Z"),
                    one_off(hook.url("/fail"), now, retry_conf=retry),
                    one_off(
                        hook.url("/fine"),
                        (now + timedelta(seconds=1)).replace(tzinfo=None).isoformat(),
                    ),
                ],
            },
        )
    ]
    wait_rows(
        srv,
        "select status, tries from hdb_catalog.hdb_scheduled_events order by status desc",
        [["error", "2"], ["delivered", "1"], ["dead", "0"]],
    )
    paths = sorted(hook.pop(within=5).path for _ in range(3))
    assert paths == ["/fail", "/fail", "/fine"]
    assert hook.count() == 0
    logs = ok(
        srv,
        {
            "type": "get_scheduled_event_invocations",
            "args": {"type": "one_off", "event_id": ids[1], "get_rows_count": True},
        },
    )
    assert logs["count"] == 2 and [i["status"] for i in logs["invocations"]] == [500, 500]
    assert logs["invocations"][0]["request"]["version"] == "1"
    assert logs["invocations"][0]["response"]["type"] == "webhook_response"
    page = ok(
        srv,
        {
            "type": "get_scheduled_events",
            "args": {"type": "one_off", "limit": 1, "offset": 1, "get_rows_count": True},
        },
    )
    listing = ok(srv, {"type": "get_scheduled_events", "args": {"type": "one_off"}})
    in_order = [e["id"] for e in listing["events"]]
    assert sorted(in_order) == sorted(ids)
    assert page["count"] == 3 and [e["id"] for e in page["events"]] == in_order[1:2]
    assert {e["id"]: e["status"] for e in listing["events"]}[ids[1]] == "error"
    dead = ok(
        srv, {"type": "get_scheduled_events", "args": {"type": "one_off", "status": ["dead"]}}
    )
    assert [e["id"] for e in dead["events"]] == [ids[0]]
    ok(srv, {"type": "delete_scheduled_event", "args": {"type": "one_off", "event_id": ids[0]}})
    r = srv.query(
        {"type": "delete_scheduled_event", "args": {"type": "one_off", "event_id": ids[0]}}
    )
    assert (r.status_code, r.json()["code"]) == (400, "not-exists")


def test_cron_every_second_delivers_its_body(srv: ServerProcess, hook: WebhookRecorder) -> None:
    hook.drain()
    ok(srv, cron("tick", hook.url("/tick"), "* * * * * *", payload={"n": 1}, comment="each second"))
    first = hook.pop(within=5)
    ok(srv, {"type": "delete_cron_trigger", "args": {"name": "tick"}})
    assert first.path == "/tick"
    body = first.json
    assert set(body) == {"id", "name", "scheduled_time", "payload", "comment"}
    assert (body["name"], body["payload"], body["comment"]) == ("tick", {"n": 1}, "each second")
    assert body["scheduled_time"].endswith("Z")
    events = ok(
        srv, {"type": "get_scheduled_events", "args": {"type": "cron", "trigger_name": "tick"}}
    )
    assert all(e["trigger_name"] == "tick" for e in events["events"])
    time.sleep(1.5)
    hook.drain()
    time.sleep(1.5)
    assert hook.count() == 0  # deleted: nothing more is delivered


def test_delete_with_an_event_in_flight_leaves_no_events(
    srv: ServerProcess, hook: WebhookRecorder
) -> None:
    """A trigger deleted while one of its events is being delivered: that event finishes,
    and the worker's top-up afterwards stores nothing for the deleted trigger."""
    hook.drain()
    ok(srv, cron("inflight", hook.url("/block"), "* * * * * *"))
    deadline = time.monotonic() + 10
    in_flight = "select count(*) from hdb_catalog.hdb_cron_events where trigger_name = 'inflight'"
    while sql(srv, in_flight + " and locked is not null") == [["0"]]:
        assert time.monotonic() < deadline, "no event was claimed"
        time.sleep(0.1)
    ok(srv, {"type": "delete_cron_trigger", "args": {"name": "inflight"}})
    hook.unblock()
    hook.pop(within=10)
    time.sleep(2)
    left = sql(srv, in_flight + " and status = 'scheduled'")
    assert left == [["0"]]
    hook.rules["/block"].block = False
