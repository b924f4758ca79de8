"""Scenario steps over HTTP (FIXTURES.md §2: `http` with `expect`, `save`, `retry`;
`repeat`; `${var}` substitution) on top of the websocket driver of `tests.ws_scenarios`,
for the actions scenario files (`actions/scenarios/*.yaml`).
"""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path
from typing import Any

import httpx

from tests.conformance.runner import CORPUS, PASS, compare_body, decode, json_diff, load_yaml
from tests.ws_scenarios import Scenario, StepFailed, _run_steps, at_path

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class HttpScenario(Scenario):
    """`Scenario` with the HTTP steps and saved variables."""

    def __init__(self, base_url: str, http: httpx.Client) -> None:
        super().__init__(base_url, http)
        self.vars: dict[str, Any] = {}

    def subst(self, value: Any) -> Any:
        """`value` with `${var}` replaced (a string that is exactly `${var}` takes the
        saved value itself)."""
        if isinstance(value, str):
            whole = _VAR.fullmatch(value)
            if whole:
                return self.vars[whole.group(1)]
            return _VAR.sub(lambda m: str(self.vars[m.group(1)]), value)
        if isinstance(value, list):
            return [self.subst(v) for v in value]
        if isinstance(value, dict):
            return {k: self.subst(v) for k, v in value.items()}
        return value

    async def _repeat(self, arg: dict[str, Any]) -> None:
        for _ in range(arg["times"]):
            for step in arg["steps"]:
                await self.step(step)

    async def _http(self, arg: dict[str, Any]) -> None:
        raise AssertionError("http steps carry their options beside them")  # see step()

    async def step(self, step: dict[str, Any]) -> None:
        """An `http` step reads `expect`, `save` and `retry` beside it."""
        if "http" not in step:
            await super().step(step)
            return
        retry = step.get("retry") or {}
        deadline = time.monotonic() + retry.get("for_s", 0)
        tries = retry.get("times", 1)
        while True:
            tries -= 1
            problem, body = await asyncio.to_thread(self._send, step)
            if problem is None:
                break
            if tries <= 0 and time.monotonic() >= deadline:
                raise StepFailed(problem)
            await asyncio.sleep(retry.get("every_s", 1))
        for name, path in (step.get("save") or {}).items():
            self.vars[name] = at_path(body, path)

    def _send(self, step: dict[str, Any]) -> tuple[str | None, Any]:
        req = self.subst(step["http"])
        headers = {str(k): str(v) for k, v in (req.get("headers") or {}).items()}
        r = self.http.request(
            req.get("method", "POST"),
            req["url"],
            json=req.get("query"),
            headers=headers,
            timeout=60,
        )
        body = decode(r)
        return self._check(self.subst(step.get("expect") or {}), r, body, req["url"]), body

    @staticmethod
    def _check(expect: dict[str, Any], r: httpx.Response, body: Any, url: str) -> str | None:
        if r.status_code != expect.get("status", 200):
            return f"status {r.status_code}: {r.text[:300]}"
        if "response" in expect:
            problem = compare_body(url, expect["response"], body)
            if problem:
                return problem
        for path, value in (expect.get("equal") or {}).items():
            problem = json_diff(value, at_path(body, path), path)
            if problem:
                return problem
        for path in expect.get("has") or ():
            if at_path(body, path) is None:
                return f"{path}: missing in {str(body)[:200]}"
        for name, value in (expect.get("headers") or {}).items():
            if r.headers.get(name) != value:
                return f"header {name}: expected {value!r}, got {r.headers.get(name)!r}"
        item = expect.get("has_item")
        if item is not None and not any(_matches(x, item) for x in at_path(body, item["at"]) or ()):
            return f"no item at {item['at']} matches {item}"
        return None


def _matches(x: Any, item: dict[str, Any]) -> bool:
    equal = all(at_path(x, p) == v for p, v in (item.get("equal") or {}).items())
    prefix = all(
        str(at_path(x, p) or "").startswith(v) for p, v in (item.get("prefix") or {}).items()
    )
    return equal and prefix


async def _run(base_url: str, doc: dict[str, Any]) -> dict[str, str]:
    results: dict[str, str] = {}
    per_test = doc.get("fixture_scope") == "test"
    with httpx.Client(base_url=base_url) as http:
        sc = HttpScenario(base_url, http)
        try:
            if not per_test:
                sc.post_setup(doc.get("setup") or [])
            for test in doc["tests"]:
                if per_test:
                    sc.post_setup(doc.get("setup") or [])
                results[test["name"]] = await _run_steps(sc, test["steps"])
                sc.post_setup(doc.get("test_teardown") or [])
                if per_test:
                    sc.post_setup(doc.get("teardown") or [])
        finally:
            await sc.close_all()
            if not per_test:
                sc.post_setup(doc.get("teardown") or [])
    return results


def run_http_scenario(base_url: str, path: Path) -> dict[str, str]:
    """Run a scenario file against the svc at `base_url`: test name → "pass" or the
    first failing step's reason."""
    return asyncio.run(_run(base_url, load_yaml(path)))


__all__ = ["CORPUS", "PASS", "run_http_scenario"]
