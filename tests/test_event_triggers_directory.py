"""Event triggers in the metadata directory (issue 14 acceptance): `svc metadata export →
apply → export` of a directory with event triggers is byte-identical, and the applied
triggers capture and deliver (a real server, a real webhook)."""

from __future__ import annotations

from pathlib import Path

from tests.support import ServerProcess, create_database, export_apply_export
from tests.webhook_recorder import WebhookRecorder

TRIGGER = {
    "name": "orders_all",
    "table": {"schema": "public", "name": "orders"},
    "webhook": "{{HOOK_BASE}}/orders",
    "insert": {"columns": "*", "payload": ["id", "total"]},
    "update": {"columns": ["total"]},
    "delete": {"columns": "*"},
    "enable_manual": True,
    "retry_conf": {"num_retries": 3, "interval_sec": 5, "timeout_sec": 30},
    "headers": [{"name": "x-from-value", "value": "v"}, {"name": "x-env", "value_from_env": "K"}],
}


def test_export_apply_export_is_byte_identical(pg_url: str, tmp_path: Path) -> None:
    with WebhookRecorder() as hook:
        env = {"HOOK_BASE": hook.url("").rstrip("/"), "K": "secret"}
        env["SVC_GRAPHQL_EVENTS_FETCH_INTERVAL"] = "0.1"
        srv = ServerProcess(create_database(pg_url, prefix="et_dir"), env=env)
        try:
            steps = [
                {
                    "type": "run_sql",
                    "args": {"sql": "create table orders (id int primary key, total int)"},
                },
                {"type": "track_table", "args": {"table": "orders"}},
                {"type": "create_event_trigger", "args": TRIGGER},
            ]
            r = srv.query({"type": "bulk", "args": steps})
            assert r.status_code == 200, r.text

            files, again = export_apply_export(srv, tmp_path)
            assert again == files
            text = b"\n".join(files.values()).decode()
            assert "event_triggers:" in text and "webhook: '{{HOOK_BASE}}/orders'" in text
            # The applied trigger captures and delivers, with its headers.
            insert = {
                "type": "insert",
                "args": {"table": "orders", "objects": [{"id": 1, "total": 9}]},
            }
            assert srv.query(insert).status_code == 200
            got = hook.pop(5.0)
            assert got.path == "/orders"
            assert got.json["event"]["data"]["new"] == {"id": 1, "total": 9}
            assert (got.headers["x-from-value"], got.headers["x-env"]) == ("v", "secret")
        finally:
            srv.stop()
