"""A driver for the event-trigger scenario files of the corpus
(`event_triggers/scenarios/*.yaml`, format in `../shared/conformance/FIXTURES.md` §2 and §4)
against a live svc and the `events` webhook recorder (127.0.0.1:5592).

Built on the scheduled-trigger driver (`tests/scheduled_scenarios.py`: `http`, `note`,
`wait_s`, `expect_webhook(s)`, `expect_no_webhook`), adding what event scenarios use:
`http` with `headers` and `query_file`, `expect_event`, `expect_no_event`, `case_file`
and `repeat`.

`run_scenario(server_url, path, recorder)` returns `{test name: "pass" | reason}`.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx

from tests.conformance.runner import CORPUS, compare_step, decode, load_yaml
from tests.scheduled_scenarios import Scenario, _run_steps, expect_problem
from tests.webhook_recorder import Hook, WebhookRecorder
from tests.ws_scenarios import StepFailed, at_path

BODY_KEYS = ("created_at", "event", "id", "table", "trigger")


def event_problem(spec: dict[str, Any], hook: Hook) -> str | None:
    """Why a recorded request is not the event `spec` describes (FIXTURES.md §2
    `expect_event`), or None."""
    if hook.path != spec.get("path", "/"):
        return f"path: expected {spec.get('path', '/')}, got {hook.path}"
    for name, value in (spec.get("headers") or {}).items():
        if hook.headers.get(name.lower()) != str(value):
            return f"header {name}: expected {value!r}, got {hook.headers.get(name.lower())!r}"
    body = hook.json
    if not isinstance(body, dict) or any(k not in body for k in BODY_KEYS):
        return f"body lacks one of {BODY_KEYS}: {json.dumps(body)[:300]}"
    event = body["event"]
    checks = [
        ("table", body["table"], spec["table"]),
        ("trigger.name", body["trigger"].get("name"), spec["trigger"]),
        ("event.op", event.get("op"), spec["op"]),
        ("event.data", event.get("data"), spec["data"]),
        (
            "event.session_variables",
            event.get("session_variables"),
            spec.get("session_variables", {"x-svc-role": "admin"}),
        ),
        (
            "delivery_info.current_retry",
            body["delivery_info"]["current_retry"],
            spec.get("retry", 0),
        ),
    ]
    for name, got, want in checks:
        if got != want:
            return f"{name}: expected {json.dumps(want)}, got {json.dumps(got)}"
    return None


class EventScenario(Scenario):
    """The scheduled driver's state and steps plus the event-trigger steps."""

    def _http(self, step: dict[str, Any]) -> None:
        request = self.sub(step["http"])
        if "query_file" in request:
            request["query"] = load_yaml(CORPUS / request["query_file"])
        expect = self.sub(step.get("expect") or {})
        headers = {str(k): str(v) for k, v in (request.get("headers") or {}).items()}
        r = self.http.post(request["url"], json=request.get("query"), headers=headers, timeout=60)
        body = r.json()
        problem = expect_problem(expect, r.status_code, body, request["url"])
        if problem is not None:
            raise StepFailed(problem)
        for name, path in (step.get("save") or {}).items():
            self.vars[name] = at_path(body, path)

    def _expect_event(self, step: dict[str, Any]) -> None:
        spec = self.sub(step["expect_event"])
        problem = event_problem(spec, self._pop(float(spec.get("within_s", 3))))
        if problem is not None:
            raise StepFailed(problem)

    def _expect_no_event(self, step: dict[str, Any]) -> None:
        time.sleep(float(step["expect_no_event"].get("within_s", 0)))
        if self.recorder.count():
            extra = self.recorder.drain()
            raise StepFailed(f"unexpected events: {[(h.path, h.json) for h in extra][:3]}")

    def _case_file(self, step: dict[str, Any]) -> None:
        rel = step["case_file"]
        doc = load_yaml(CORPUS / rel)
        for i, case in enumerate(doc if isinstance(doc, list) else [doc]):
            headers = {str(k): str(v) for k, v in (case.get("headers") or {}).items()}
            r = self.http.post(case["url"], json=case.get("query"), headers=headers, timeout=30)
            problem = compare_step(case, r.status_code, decode(r), r.headers)
            if problem:
                raise StepFailed(f"{rel}#{i}: {problem}")

    def _repeat(self, step: dict[str, Any]) -> None:
        for _ in range(int(step["repeat"]["times"])):
            for inner in step["repeat"]["steps"]:
                self.step(inner)


def run_scenario(base_url: str, path: Path, recorder: WebhookRecorder) -> dict[str, str]:
    """Run the scenario file at `path`; test name → "pass" or the first failing step's
    reason. The recorder is drained before the file and before each test."""
    doc = load_yaml(path)
    per_test = doc.get("fixture_scope") == "test"
    results: dict[str, str] = {}
    with httpx.Client(base_url=base_url) as http:
        sc = EventScenario(http, recorder)
        sc.vars.update(doc.get("vars") or {})
        recorder.drain()
        if not per_test:
            sc.post_fixture(doc.get("setup") or [])
        try:
            for test in doc["tests"]:
                if per_test:
                    sc.post_fixture(doc.get("setup") or [])
                results[test["name"]] = _run_steps(sc, test["steps"])
                sc.post_fixture(doc.get("test_teardown") or [])
                if per_test:
                    sc.post_fixture(doc.get("teardown") or [])
        finally:
            if not per_test:
                sc.post_fixture(doc.get("teardown") or [])
    return results
