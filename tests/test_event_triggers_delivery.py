"""`svc.workers.delivery` against a real local webhook (`tests/webhook_recorder.py`):
classification of answers, Retry-After, timeouts, unreachable hosts, invocation logs."""

from __future__ import annotations

import socket
import time

import pytest

from svc.outbound import OutboundClient
from svc.workers.delivery import RetryPolicy, deliver, retry_after_seconds
from tests.webhook_recorder import WebhookRecorder

POLICY = RetryPolicy(num_retries=2, interval_sec=7, timeout_sec=1)


@pytest.fixture
def hook():
    with WebhookRecorder() as rec:
        yield rec


async def test_success_sends_json_headers_and_logs(hook: WebhookRecorder) -> None:
    client = OutboundClient()
    result = await deliver(
        hook.url("/ok"),
        [("X-Custom", "v")],
        {"a": 1},
        tries=1,
        policy=POLICY,
        idempotency_key="ev-1",
        client=client,
    )
    got = hook.pop()
    assert (result.outcome, result.status) == ("success", 204)
    assert got.json == {"a": 1}
    assert got.headers["content-type"] == "application/json"
    assert got.headers["x-custom"] == "v"
    assert got.headers["idempotency-key"] == "ev-1"
    assert got.headers["user-agent"].startswith("svc/")
    assert result.request_log["payload"] == {"a": 1}
    assert {"name": "X-Custom", "value": "v"} in result.request_log["headers"]
    assert result.response_log["type"] == "webhook_response"
    assert result.response_log["data"]["status"] == 204
    await client.close()


async def test_failure_retries_then_gives_up(hook: WebhookRecorder) -> None:
    client = OutboundClient()
    first = await deliver(hook.url("/fail"), [], {}, tries=1, policy=POLICY, client=client)
    last = await deliver(hook.url("/fail"), [], {}, tries=3, policy=POLICY, client=client)
    assert (first.outcome, first.status, first.retry_in) == ("retry", 500, 7)
    assert (last.outcome, last.retry_in) == ("error", None)
    await client.close()


async def test_retry_after_overrides_interval_and_non_json_body(hook: WebhookRecorder) -> None:
    hook.rule("/busy", status=503, headers={"Retry-After": "3"}, body=b"<html>busy</html>")
    client = OutboundClient()
    result = await deliver(hook.url("/busy"), [], {}, tries=1, policy=POLICY, client=client)
    assert (result.outcome, result.retry_in) == ("retry", 3.0)
    assert result.response_log["data"]["body"] == "<html>busy</html>"
    await client.close()


async def test_timeout_counts_as_failure(hook: WebhookRecorder) -> None:
    client = OutboundClient()
    started = time.monotonic()
    result = await deliver(hook.url("/sleep_2s"), [], {}, tries=1, policy=POLICY, client=client)
    assert time.monotonic() - started < 1.9
    assert (result.outcome, result.status) == ("retry", None)
    assert result.response_log["type"] == "client_error"
    assert "timeout" in result.response_log["data"]["message"].lower()
    await client.close()


async def test_unreachable_webhook_is_client_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = OutboundClient()
    policy = RetryPolicy(num_retries=0)
    result = await deliver(
        f"http://127.0.0.1:{port}/", [], {}, tries=1, policy=policy, client=client
    )
    assert (result.outcome, result.status) == ("error", None)
    assert result.response_log["data"]["message"].startswith("Connection failure")
    await client.close()


def test_retry_after_forms() -> None:
    assert retry_after_seconds("120") == 120.0
    assert retry_after_seconds(None) is None
    assert retry_after_seconds("soon") is None
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == 10.0


def test_exponential_backoff_is_capped_with_jitter() -> None:
    policy = RetryPolicy(interval_sec=2, backoff="exponential", max_interval_sec=10)
    assert 1 <= policy.interval(1) <= 2
    assert 4 <= policy.interval(3) <= 8
    assert 5 <= policy.interval(9) <= 10
    assert RetryPolicy(interval_sec=2).interval(9) == 2


async def test_without_removes_the_clients_user_agent(hook: WebhookRecorder) -> None:
    client = OutboundClient()
    result = await deliver(
        hook.url("/t"),
        [("X-Keep", "1")],
        {},
        tries=1,
        policy=POLICY,
        client=client,
        without=("user-agent",),
    )
    got = hook.pop()
    assert result.outcome == "success"
    assert "user-agent" not in got.headers and got.headers["x-keep"] == "1"
    await client.close()
