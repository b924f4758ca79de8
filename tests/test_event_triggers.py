"""Event triggers end to end (issue 14): a real `svc serve` (default worker count), a real
Postgres and a real local webhook (`tests/webhook_recorder.py`).

Capture (GraphQL mutations, legacy `/v1/query` writes, plain SQL), session variables,
listened and payload columns, the reference body, manual events, redelivery, metadata
errors, dependencies, retries (R4), rolled-back mutations (R8) and bad webhooks.
"""

from __future__ import annotations

import itertools
import queue
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support import ServerProcess, create_database
from tests.webhook_recorder import WebhookRecorder

FAST = {"SVC_GRAPHQL_EVENTS_FETCH_INTERVAL": "0.1", "SVC_GRAPHQL_STRINGIFY_NUMERIC_TYPES": "true"}


@pytest.fixture(scope="module")
def hook() -> Iterator[WebhookRecorder]:
    with WebhookRecorder() as rec:
        yield rec


@pytest.fixture(scope="module")
def srv(pg_url: str) -> Iterator[ServerProcess]:
    db_url = create_database(pg_url)
    s = ServerProcess(db_url, env=FAST)
    s.db_url = db_url  # type: ignore[attr-defined]
    try:
        yield s
    finally:
        s.stop()


def ok(s: ServerProcess, body: Any, **kw: Any) -> Any:
    r = s.query(body, **kw)
    assert r.status_code == 200, r.text
    return r.json()


def sql(s: ServerProcess, text: str) -> Any:
    return ok(s, {"type": "run_sql", "args": {"sql": text}})


def trigger(name: str, table: str, url: str, **extra: Any) -> dict[str, Any]:
    args = {
        "name": name,
        "table": {"schema": "public", "name": table},
        "webhook": url,
        "insert": {"columns": "*"},
        "update": {"columns": "*"},
        "delete": {"columns": "*"},
    }
    args.update(extra)
    return {"type": "create_event_trigger", "args": args}


@pytest.fixture
def table(
    srv: ServerProcess, hook: WebhookRecorder, request: pytest.FixtureRequest
) -> Iterator[str]:
    """A fresh tracked table `t_<test>` (id bigint, name text, n int, blob text)."""
    name = "t_" + request.node.name.removeprefix("test_")[:40]
    sql(srv, f"CREATE TABLE {name} (id bigint PRIMARY KEY, name text, n int, blob text)")
    ok(srv, {"type": "track_table", "args": {"table": name}})
    hook.drain()
    yield name
    ok(srv, {"type": "run_sql", "args": {"sql": f"DROP TABLE {name} CASCADE", "cascade": True}})


def pop(hook: WebhookRecorder, within: float = 15.0) -> Any:
    return hook.pop(within).json


def hooks_within(hook: WebhookRecorder, seconds: float) -> list[Any]:
    """Every request the recorder answers in the next `seconds`."""
    found, deadline = [], time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        try:
            found.append(hook.pop(left))
        except queue.Empty:
            break
    return found


def pop_path(hook: WebhookRecorder, path: str, within: float) -> Any:
    """The body of the next request to `path` within `within` seconds (requests to other
    paths, the module's earlier triggers' retries, are skipped)."""
    deadline = time.monotonic() + within
    while True:
        got = hook.pop(max(0.0, deadline - time.monotonic()))
        if got.path.startswith(path):
            return got.json


def test_capture_from_graphql_legacy_and_sql(srv, hook, table) -> None:
    ok(srv, trigger("all_ops", table, hook.url("/all")))
    r = srv.graphql(
        f'mutation {{ insert_{table}(objects: [{{id: 1, name: "a", n: 5}}]) {{ affected_rows }} }}',
        headers={"x-svc-role": "admin", "x-svc-user-id": "42"},
    )
    assert "errors" not in r, r
    body = pop(hook)
    assert set(body) == {"id", "table", "trigger", "event", "delivery_info", "created_at"}
    assert body["table"] == {"schema": "public", "name": table}
    assert body["trigger"] == {"name": "all_ops"}
    assert body["event"]["op"] == "INSERT"
    assert body["event"]["data"] == {
        "old": None,
        "new": {"id": "1", "name": "a", "n": 5, "blob": None},  # bigint stringified
    }
    assert body["event"]["session_variables"] == {"x-svc-role": "admin", "x-svc-user-id": "42"}
    assert body["delivery_info"] == {"current_retry": 0, "max_retries": 0}
    upd = {"table": table, "where": {"id": 1}, "$set": {"name": "b"}}
    ok(srv, {"type": "update", "args": upd})
    body = pop(hook)
    assert body["event"]["op"] == "UPDATE"
    assert (body["event"]["data"]["old"]["name"], body["event"]["data"]["new"]["name"]) == (
        "a",
        "b",
    )
    assert body["event"]["session_variables"] == {"x-svc-role": "admin"}
    sql(srv, f"DELETE FROM {table}")
    body = pop(hook)
    assert body["event"]["op"] == "DELETE"
    assert body["event"]["data"]["new"] is None
    assert body["event"]["session_variables"] is None  # not through svc


def test_listened_and_payload_columns(srv, hook, table) -> None:
    ok(
        srv,
        trigger(
            "cols",
            table,
            hook.url("/cols"),
            insert={"columns": "*", "payload": ["id", "name"]},
            update={"columns": ["n"]},
            delete=None,
        ),
    )
    ok(
        srv,
        {"type": "insert", "args": {"table": table, "objects": [{"id": 1, "name": "x", "n": 1}]}},
    )
    assert pop(hook)["event"]["data"]["new"] == {"id": "1", "name": "x"}
    ok(srv, {"type": "update", "args": {"table": table, "where": {"id": 1}, "$set": {"name": "y"}}})
    ok(srv, {"type": "update", "args": {"table": table, "where": {"id": 1}, "$set": {"n": 2}}})
    body = pop(hook)
    assert (body["event"]["op"], body["event"]["data"]["new"]["n"]) == ("UPDATE", 2)
    sql(srv, f"DELETE FROM {table}")
    with pytest.raises(queue.Empty):
        hook.pop(1.0)  # the name-only update and the delete sent nothing


def test_rolled_back_mutation_writes_no_event_r8(srv, hook, table) -> None:
    ok(srv, trigger("r8", table, hook.url("/r8")))
    r = srv.graphql(
        f"""mutation {{
          a: insert_{table}(objects: [{{id: 1}}]) {{ affected_rows }}
          b: insert_{table}(objects: [{{id: 2}}]) {{ affected_rows }}
          c: insert_{table}(objects: [{{id: 1}}]) {{ affected_rows }}
        }}"""
    )
    assert r["errors"][0]["extensions"]["code"] == "constraint-violation"
    rows = sql(srv, f"SELECT count(*) FROM {table}")["result"][1][0]
    events = sql(srv, "SELECT count(*) FROM hdb_catalog.event_log WHERE trigger_name = 'r8'")
    assert (rows, events["result"][1][0]) == ("0", "0")
    with pytest.raises(queue.Empty):
        hook.pop(1.0)


def test_retries_as_configured_and_timeout_counts_r4(srv, hook, table) -> None:
    hook.rule("/flaky", status=500)
    hook.rule("/slow", status=204, delay=2.0)
    conf = {"num_retries": 2, "interval_sec": 1, "timeout_sec": 1}
    ok(srv, trigger("flaky", table, hook.url("/flaky"), retry_conf=conf, update=None, delete=None))
    ok(srv, trigger("slow", table, hook.url("/slow"), retry_conf=conf, update=None, delete=None))
    ok(srv, {"type": "insert", "args": {"table": table, "objects": [{"id": 1}]}})
    got = [hook.pop(6.0) for _ in range(6)]
    for path in ("/flaky", "/slow"):
        mine = [g for g in got if g.path == path]
        assert [g.json["delivery_info"]["current_retry"] for g in mine] == [0, 1, 2]
        gaps = [b.at - a.at for a, b in itertools.pairwise(mine)]
        assert all(0.9 <= gap <= 2.5 for gap in gaps), (path, gaps)
    with pytest.raises(queue.Empty):
        hook.pop(2.0)
    time.sleep(0.5)
    res = sql(
        srv,
        "SELECT trigger_name, tries, error, delivered FROM hdb_catalog.event_log "
        "WHERE trigger_name IN ('flaky', 'slow') ORDER BY trigger_name",
    )["result"][1:]
    assert res == [["flaky", "3", "t", "f"], ["slow", "3", "t", "f"]]
    logs = sql(
        srv,
        "SELECT count(*) FROM hdb_catalog.event_invocation_logs l JOIN hdb_catalog.event_log e "
        "ON e.id = l.event_id WHERE e.trigger_name IN ('flaky', 'slow')",
    )
    assert logs["result"][1][0] == "6"


def test_retry_after_header_overrides_interval(srv, hook, table) -> None:
    calls: list[float] = []

    def answer(_: Any) -> int:
        calls.append(time.monotonic())
        return 503 if len(calls) == 1 else 200

    hook.rule("/later", answer=answer, headers={"Retry-After": "2"})
    conf = {"num_retries": 1, "interval_sec": 30, "timeout_sec": 5}
    ok(srv, trigger("later", table, hook.url("/later"), retry_conf=conf))
    ok(srv, {"type": "insert", "args": {"table": table, "objects": [{"id": 1}]}})
    first, second = hook.pop(5.0), hook.pop(6.0)
    assert 1.8 <= second.at - first.at <= 4.0
    assert second.headers["idempotency-key"] == first.headers["idempotency-key"] == first.json["id"]


def test_manual_invoke_and_redeliver(srv, hook, table) -> None:
    ok(srv, trigger("manual", table, hook.url("/manual"), enable_manual=True))
    ok(srv, trigger("nomanual", table, hook.url("/x"), enable_manual=False))
    r = srv.client.post(
        "/v1/metadata",
        json={"type": "pg_invoke_event_trigger", "args": {"name": "manual", "payload": {"k": 1}}},
    )
    assert r.status_code == 200, r.text
    event_id = r.json()["event_id"]
    body = pop(hook)
    assert body["id"] == event_id
    assert body["event"]["op"] == "MANUAL"
    assert body["event"]["data"] == {"old": None, "new": {"k": 1}}
    bad = srv.query({"type": "invoke_event_trigger", "args": {"name": "nomanual", "payload": {}}})
    assert bad.status_code == 400 and bad.json()["code"] == "not-supported"
    ok(srv, {"type": "redeliver_event", "args": {"event_id": event_id}})
    assert pop(hook)["id"] == event_id
    missing = srv.query({"type": "redeliver_event", "args": {"event_id": "nope"}})
    assert missing.status_code == 400


def test_metadata_errors(srv, hook, table) -> None:
    def err(body: Any) -> Any:
        r = srv.query(body)
        assert r.status_code == 400, r.text
        return r.json()

    assert err(trigger("e1", "no_such_table", hook.url()))["code"] == "not-exists"
    assert (
        err(trigger("e1", table, hook.url(), insert={"columns": ["nope"]}))["code"] == "not-exists"
    )
    assert (
        err(
            {"type": "create_event_trigger", "args": {"name": "e1", "table": table, "webhook": "x"}}
        )["code"]
        == "parse-failed"
    )
    missing_env = trigger("e1", table, "", webhook=None, webhook_from_env="SVC_TEST_NOT_SET")
    assert err(missing_env)["code"] == "not-found"
    ok(srv, trigger("dup", table, hook.url()))
    assert err(trigger("dup", table, hook.url()))["code"] == "already-exists"
    ok(srv, trigger("dup", table, hook.url("/replaced"), replace=True))
    exported = ok(srv, {"type": "export_metadata", "args": {}})
    entry = next(t for t in exported["tables"] if t["table"]["name"] == table)
    assert [t["webhook"] for t in entry["event_triggers"]] == [hook.url("/replaced")]
    # A column a trigger names cannot be dropped without cascade.
    ok(srv, trigger("named", table, hook.url(), update={"columns": ["n"]}))
    r = srv.query({"type": "run_sql", "args": {"sql": f"ALTER TABLE {table} DROP COLUMN n"}})
    assert r.status_code == 400 and r.json()["code"] == "dependency-error", r.text
    assert err({"type": "delete_event_trigger", "args": {"name": "nope"}})["code"] == "not-exists"


def test_unreachable_and_non_json_webhooks(srv, hook, table) -> None:
    hook.rule("/html", status=200, body=b"<html>not json</html>")
    ok(srv, trigger("html", table, hook.url("/html")))
    ok(srv, trigger("gone", table, "http://127.0.0.1:9/nothing", retry_conf={"num_retries": 0}))
    ok(srv, {"type": "insert", "args": {"table": table, "objects": [{"id": 1}]}})
    assert pop(hook)["trigger"]["name"] == "html"
    deadline = time.monotonic() + 15  # the unreachable one is recorded after its attempt
    while time.monotonic() < deadline:
        res = sql(
            srv,
            "SELECT e.trigger_name, e.delivered, e.error, l.response::json->>'type' "
            "FROM hdb_catalog.event_log e "
            "JOIN hdb_catalog.event_invocation_logs l ON l.event_id = e.id "
            "WHERE e.trigger_name IN ('html', 'gone') ORDER BY 1",
        )["result"][1:]
        if len(res) == 2:
            break
        time.sleep(0.2)
    assert res == [["gone", "f", "t", "client_error"], ["html", "t", "f", "webhook_response"]]


def test_large_row_payload(srv, hook, table) -> None:
    ok(srv, trigger("big", table, hook.url("/big")))
    blob = "x" * (1 << 20)
    ok(srv, {"type": "insert", "args": {"table": table, "objects": [{"id": 1, "blob": blob}]}})
    assert pop(hook, 10.0)["event"]["data"]["new"]["blob"] == blob


def test_dropped_table_and_clear_metadata(srv, hook, table) -> None:
    ok(srv, trigger("dropme", table, hook.url("/d")))
    sql(srv, f"DROP TABLE {table}")
    exported = ok(srv, {"type": "export_metadata", "args": {}})
    assert all(t["table"]["name"] != table for t in exported["tables"])
    fns = sql(srv, "SELECT count(*) FROM pg_proc WHERE proname::text LIKE 'notify_svc_dropme%'")
    assert fns["result"][1][0] == "0"
    sql(srv, f"CREATE TABLE {table} (id bigint PRIMARY KEY, name text, n int, blob text)")


def test_pause_resume_and_exponential_backoff_conf(srv, hook, table) -> None:
    conf = {"num_retries": 2, "interval_sec": 1, "timeout_sec": 5, "backoff": "exponential"}
    ok(srv, trigger("pausable", table, hook.url("/p"), retry_conf={**conf, "max_interval_sec": 4}))
    ok(srv, {"type": "pause_event_trigger", "args": {"name": "pausable"}})
    ok(srv, {"type": "insert", "args": {"table": table, "objects": [{"id": 1}]}})
    # captured, not delivered while paused (the module's other triggers may still deliver
    # retries to the shared recorder meanwhile: only this trigger's path counts)
    assert [h for h in hooks_within(hook, 1.5) if h.path.startswith("/p")] == []
    exported = ok(srv, {"type": "export_metadata", "args": {}})
    entry = next(t for t in exported["tables"] if t["table"]["name"] == table)
    assert entry["event_triggers"][0]["paused"] is True
    assert entry["event_triggers"][0]["retry_conf"]["backoff"] == "exponential"
    ok(srv, {"type": "resume_event_trigger", "args": {"name": "pausable"}})
    assert pop_path(hook, "/p", 8.0)["event"]["data"]["new"]["id"] == "1"


def test_cleanup_command_deletes_finished_events(srv, hook, table) -> None:
    from svc.cli import main

    ok(srv, trigger("cleaned", table, hook.url("/c")))
    ok(srv, {"type": "insert", "args": {"table": table, "objects": [{"id": 1}, {"id": 2}]}})
    pop(hook), pop(hook)
    time.sleep(0.5)
    count = "SELECT count(*) FROM hdb_catalog.event_log WHERE trigger_name = 'cleaned'"
    assert sql(srv, count)["result"][1][0] == "2"
    assert main(["events", "cleanup", "--database-url", srv.db_url, "--older-than-days", "1"]) == 0
    assert sql(srv, count)["result"][1][0] == "2"  # younger than a day: kept
    assert main(["events", "cleanup", "--database-url", srv.db_url, "--older-than-days", "0"]) == 0
    assert sql(srv, count)["result"][1][0] == "0"


def test_replace_and_reload_metadata_keep_capture_in_step(srv, hook, table) -> None:
    ok(srv, trigger("stepped", table, hook.url("/s")))
    fns = "SELECT count(*) FROM pg_proc WHERE proname::text LIKE 'notify_svc_stepped%'"
    assert sql(srv, fns)["result"][1][0] == "3"
    # Someone drops the capture functions behind svc's back: reload recreates them.
    sql(srv, 'DROP FUNCTION hdb_catalog."notify_svc_stepped_INSERT"() CASCADE')
    ok(srv, {"type": "reload_metadata", "args": {}})
    assert sql(srv, fns)["result"][1][0] == "3"
    ok(srv, {"type": "insert", "args": {"table": table, "objects": [{"id": 1}]}})
    assert pop(hook)["trigger"]["name"] == "stepped"
    # replace_metadata without the trigger drops its functions (and so its capture).
    exported = ok(srv, {"type": "export_metadata", "args": {}})
    for entry in exported["tables"]:
        entry.pop("event_triggers", None)
    ok(srv, {"type": "replace_metadata", "args": exported})
    assert sql(srv, fns)["result"][1][0] == "0"
    ok(srv, {"type": "insert", "args": {"table": table, "objects": [{"id": 2}]}})
    with pytest.raises(queue.Empty):
        hook.pop(1.0)


def test_replace_metadata_refuses_a_malformed_trigger(srv, hook, table) -> None:
    exported = ok(srv, {"type": "export_metadata", "args": {}})
    entry = next(t for t in exported["tables"] if t["table"]["name"] == table)
    entry["event_triggers"] = [{"name": "bad", "definition": {"insert": {"columns": 5}}}]
    r = srv.query({"type": "replace_metadata", "args": exported})
    assert r.status_code == 400 and r.json()["code"] == "parse-failed", r.text
    assert "event_triggers[0].definition.insert.columns" in r.json()["path"]
