"""A driver for the scheduled-trigger scenario files of the corpus
(`scheduled_triggers/scenarios/*.yaml`, format in `../shared/conformance/FIXTURES.md` §2
and §5) against a live svc and the `scheduled` webhook recorder (127.0.0.1:5594).

Steps: `http` (with `expect` `status`/`response`/`equal`/`has`/`length`, `save`,
`save_time`, `retry: {times, every_s}` or `{for_s, every_s}`, `check_cron_rows`), `note`,
`wait_s`, `expect_webhooks`, `expect_webhook`, `expect_no_webhook`. `${var}` is replaced by
a saved value (a string that is exactly `${var}` takes the JSON value), with the built-ins
`${now}` and `${minute_in_30}`. Another step fails its test with "unsupported step".

`run_scenario(server_url, path, recorder)` returns `{test name: "pass" | reason}`.
"""

from __future__ import annotations

import json
import queue
import re
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from croniter import croniter  # type: ignore[import-untyped]

from tests.conformance.runner import CORPUS, PASS, compare_body, load_yaml
from tests.webhook_recorder import Hook, WebhookRecorder
from tests.ws_scenarios import StepFailed, at_path

VAR = re.compile(r"\$\{(\w+)\}")


def utc_now_text() -> str:
    """Now in UTC as `YYYY-MM-DDTHH:MM:SS.ffffffZ`."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Scenario:
    """One scenario file's state: saved variables, the server, the recorder."""

    def __init__(self, http: httpx.Client, recorder: WebhookRecorder) -> None:
        self.http = http
        self.recorder = recorder
        minute = (datetime.now(UTC) + timedelta(minutes=30)).minute
        self.vars: dict[str, Any] = {"minute_in_30": str(minute)}

    def sub(self, value: Any) -> Any:
        """`value` with `${var}` replaced everywhere (see the module doc)."""
        if isinstance(value, str):
            whole = VAR.fullmatch(value)
            if whole:
                return self._var(whole.group(1))
            return VAR.sub(lambda m: str(self._var(m.group(1))), value)
        if isinstance(value, list):
            return [self.sub(v) for v in value]
        if isinstance(value, dict):
            return {k: self.sub(v) for k, v in value.items()}
        return value

    def _var(self, name: str) -> Any:
        if name == "now":
            return utc_now_text()
        if name not in self.vars:
            raise StepFailed(f"no variable {name}")
        return self.sub(self.vars[name])

    def post_fixture(self, items: list[Any]) -> None:
        """POST fixture bodies (file paths or `{url, body}`); each must answer 200."""
        for item in items:
            if isinstance(item, str):
                url, body = "/v1/query", load_yaml(CORPUS / item)
            else:
                url, body = item.get("url", "/v1/query"), item["body"]
            r = self.http.post(url, json=body, timeout=60)
            if r.status_code != 200:
                raise StepFailed(f"fixture {item!r}: status {r.status_code}: {r.text[:300]}")

    def step(self, step: dict[str, Any]) -> None:
        """Run one step; raises StepFailed."""
        kind = next(iter(step))
        handler = getattr(self, f"_{kind}", None)
        if handler is None:
            raise StepFailed(f"unsupported step: {kind}")
        handler(step)

    def _note(self, step: dict[str, Any]) -> None:
        pass

    def _wait_s(self, step: dict[str, Any]) -> None:
        time.sleep(float(step["wait_s"]))

    # -- http -----------------------------------------------------------------------------
    def _http(self, step: dict[str, Any]) -> None:
        request = self.sub(step["http"])
        expect = self.sub(step.get("expect") or {})
        retry = step.get("retry") or {}
        tries = int(retry.get("times", 1))
        deadline = time.monotonic() + float(retry.get("for_s", 0))
        attempt = 0
        while True:
            attempt += 1
            r = self.http.post(request["url"], json=request.get("query"), timeout=60)
            body = r.json()
            problem = expect_problem(expect, r.status_code, body, request["url"])
            if problem is None and "check_cron_rows" in step:
                problem = self.cron_rows_problem(step["check_cron_rows"], body)
            more = attempt < tries or time.monotonic() < deadline
            if problem is None or not more:
                break
            time.sleep(float(retry.get("every_s", 1)))
        if problem is not None:
            raise StepFailed(problem)
        if step.get("save_time"):
            self.vars[step["save_time"]] = utc_now_text()
        for name, path in (step.get("save") or {}).items():
            self.vars[name] = at_path(body, path)

    def cron_rows_problem(self, spec: dict[str, Any], body: Any) -> str | None:
        """Rows 1..count of `result` are the next `count` occurrences of `schedule`
        strictly after `from`, printed with `format` (FIXTURES.md §5)."""
        spec = self.sub(spec)
        start = datetime.fromisoformat(spec["from"])
        it = croniter(spec["schedule"], start)
        want = [it.get_next(datetime).strftime(spec["format"]) for _ in range(spec["count"])]
        got = [row[0] for row in body["result"][1:]]
        if got != want:
            return f"cron rows: expected {want[:3]}… ({len(want)}), got {got[:3]}… ({len(got)})"
        return None

    # -- webhooks --------------------------------------------------------------------------
    def _expect_webhooks(self, step: dict[str, Any]) -> None:
        spec = self.sub(step["expect_webhooks"])
        got = [self._pop(float(spec["within_s_each"])) for _ in range(int(spec["count"]))]
        if spec.get("sorted_by"):
            got.sort(key=lambda hook: str(_hook_value(hook, spec["sorted_by"])))
        for i, (hook, match) in enumerate(zip(got, spec.get("match") or [], strict=False)):
            problem = webhook_problem(match, hook)
            if problem is not None:
                raise StepFailed(f"webhook {i}: {problem}")

    def _expect_webhook(self, step: dict[str, Any]) -> None:
        spec = self.sub(step["expect_webhook"])
        problem = webhook_problem(spec, self._pop(float(spec.get("within_s", 3))))
        if problem is not None:
            raise StepFailed(problem)

    def _expect_no_webhook(self, step: dict[str, Any]) -> None:
        within = float(step["expect_no_webhook"].get("within_s", 0))
        time.sleep(within)
        if self.recorder.count():
            extra = self.recorder.drain()
            raise StepFailed(f"unexpected webhooks: {[h.path for h in extra]}")

    def _pop(self, within: float) -> Hook:
        try:
            return self.recorder.pop(within=within)
        except queue.Empty:
            raise StepFailed(f"no webhook within {within} s") from None


def _hook_value(hook: Hook, path: str) -> Any:
    return hook.path if path == "path" else at_path(hook.json, path)


def expect_problem(expect: dict[str, Any], status: int, body: Any, url: str) -> str | None:
    """Why an HTTP answer does not meet a step's `expect`, or None."""
    want = int(expect.get("status", 200))
    if status != want:
        return f"status: expected {want}, got {status}: {json.dumps(body)[:300]}"
    if "response" in expect:
        diff = compare_body(url, expect["response"], body)
        if diff is not None:
            return diff
    if "length" in expect and (not isinstance(body, list) or len(body) != expect["length"]):
        return f"length: expected {expect['length']}, got {json.dumps(body)[:300]}"
    return paths_problem(body, expect.get("equal") or {}, expect.get("has") or [])


def paths_problem(body: Any, equal: dict[str, Any], has: list[str]) -> str | None:
    """Each `equal` path holds exactly its value and each `has` path exists."""
    for path, value in equal.items():
        try:
            got = at_path(body, path)
        except (KeyError, IndexError, TypeError):
            return f"{path}: missing in {json.dumps(body)[:300]}"
        if got != value:
            return f"{path}: expected {json.dumps(value)[:400]}, got {json.dumps(got)[:400]}"
    for path in has:
        try:
            at_path(body, path)
        except (KeyError, IndexError, TypeError):
            return f"{path}: missing in {json.dumps(body)[:300]}"
    return None


def webhook_problem(spec: dict[str, Any], hook: Hook) -> str | None:
    """Why a recorded request does not match an `expect_webhook` spec, or None."""
    if "path" in spec and hook.path != spec["path"]:
        return f"path: expected {spec['path']}, got {hook.path}"
    for name, value in (spec.get("headers") or {}).items():
        if hook.headers.get(name.lower()) != str(value):
            return f"header {name}: expected {value!r}, got {hook.headers.get(name.lower())!r}"
    for name in spec.get("absent_headers") or []:
        if name.lower() in hook.headers:
            return f"header {name}: present"
    if "body" in spec and hook.json != spec["body"]:
        return f"body: expected {spec['body']}, got {hook.json}"
    return paths_problem(hook.json, spec.get("equal") or {}, spec.get("has") or [])


def _run_steps(sc: Scenario, steps: list[dict[str, Any]]) -> str:
    for i, step in enumerate(steps):
        try:
            sc.step(step)
        except StepFailed as exc:
            return f"step {i} ({next(iter(step))}): {exc}"
        except (OSError, httpx.HTTPError, ValueError) as exc:
            return f"step {i} ({next(iter(step))}): {type(exc).__name__}: {exc}"
    return PASS


def run_scenario(base_url: str, path: Path, recorder: WebhookRecorder) -> dict[str, str]:
    """Run the scenario file at `path`; test name → "pass" or the first failing step's
    reason. The recorder starts empty (the reference's fixture is per class)."""
    doc = load_yaml(path)
    recorder.drain()
    per_test = doc.get("fixture_scope") == "test"
    results: dict[str, str] = {}
    with httpx.Client(base_url=base_url) as http:
        sc = Scenario(http, recorder)
        sc.vars.update(doc.get("vars") or {})
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
