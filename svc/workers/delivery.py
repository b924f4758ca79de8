"""One webhook delivery attempt, shared by event triggers and scheduled
triggers: POST a JSON body with resolved headers through `svc.outbound`,
classify the answer, and build the invocation-log record.

Rules are the reference's (Hasura `Eventing/HTTP.hs`, `Eventing/EventTrigger.hs`,
reference-notes-wave2 §2):

- success: a 2xx status; any other status, a timeout, a refused or broken connection
  is a failure (a 3xx is a failure too: redirects are not followed);
- after a failure with retries left (`tries` attempts made so far, this one included,
  `<= num_retries`) the next attempt is due after `interval_sec` seconds, or after the
  answer's `Retry-After` seconds when it carries one (a positive integer, or an
  HTTP-date); otherwise the delivery gives up (`error`);
- the invocation log: `request = {"payload", "headers": [{name, value}], "version"}`,
  `response = {"type": "webhook_response", "data": {"body", "headers", "status"},
  "version"}` for an HTTP answer, `{"type": "client_error", "data": {"message"},
  "version"}` when none came (Types/Eventing.hs). Event triggers log version "2",
  scheduled triggers "1".

Beyond the reference: `RetryPolicy.backoff = "exponential"` doubles the interval per
retry (capped by `max_interval_sec`) with full jitter; `idempotency_key` sends an
`Idempotency-Key` header (the event id) on every attempt.

    policy = RetryPolicy(num_retries=3, interval_sec=10, timeout_sec=60)
    result = await deliver(url, headers, payload, tries=1, policy=policy)
    result.outcome   # "success" | "retry" | "error"
    result.retry_in  # seconds until the next attempt (retry only)
    result.status    # HTTP status, None without an answer
    result.request_log, result.response_log  # JSON-able dicts for the invocation log
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import msgspec

from svc.outbound import OutboundClient, OutboundError, shared_client, transform

Outcome = Literal["success", "retry", "error"]
Backoff = Literal["constant", "exponential"]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how fast to retry: `num_retries` (retries after the first attempt,
    >= 0), `interval_sec` (seconds before a retry, the base of exponential backoff),
    `timeout_sec` (seconds each attempt may take per phase: connect, send, each wait
    for bytes), `backoff` ("constant" is the reference; "exponential": interval *
    2^(retry-1), at most `max_interval_sec` when set, then a random value in
    [interval/2, interval])."""

    num_retries: int = 0
    interval_sec: float = 10.0
    timeout_sec: float = 60.0
    backoff: Backoff = "constant"
    max_interval_sec: float | None = None

    def interval(self, retry: int) -> float:
        """Seconds before retry number `retry` (1 for the first retry)."""
        if self.backoff == "constant":
            return self.interval_sec
        base = self.interval_sec * (2 ** max(retry - 1, 0))
        if self.max_interval_sec is not None:
            base = min(base, self.max_interval_sec)
        # Jitter spreads retries of many events that failed together (one webhook outage).
        return random.uniform(base / 2, base)


@dataclass(frozen=True, slots=True)
class DeliveryResult:
    """What one attempt came to. `outcome`: "success" (2xx), "retry" (failed, a retry is
    due in `retry_in` seconds) or "error" (failed, no retries left); `status`: the HTTP
    status or None (no answer); `request_log` / `response_log`: the invocation-log
    `request` and `response` JSON; `elapsed`: seconds the attempt took."""

    outcome: Outcome
    status: int | None
    retry_in: float | None
    request_log: dict[str, Any]
    response_log: dict[str, Any]
    elapsed: float


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """Seconds a `Retry-After` header value asks to wait: a non-negative integer of
    seconds, or an IMF-fixdate (seconds from `now`, epoch seconds, default the clock;
    at least 0). None when absent or unreadable (the configured interval applies)."""
    if value is None:
        return None
    text = value.strip()
    if text.isdigit():
        return float(int(text))
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    clock = time.time() if now is None else now
    return max(when.timestamp() - clock, 0.0)


def _headers_log(pairs: Sequence[tuple[str, str]]) -> list[dict[str, str]]:
    return [{"name": k, "value": v} for k, v in pairs]


def _body_text(body: bytes) -> str:
    # The reference logs the body as text; bytes that are not UTF-8 are replaced.
    return body.decode("utf-8", "replace")


async def deliver(
    url: str,
    headers: Sequence[tuple[str, str]],
    payload: Any,
    *,
    tries: int,
    policy: RetryPolicy,
    idempotency_key: str | None = None,
    log_version: str = "2",
    client: OutboundClient | None = None,
    without: Sequence[str] = (),
    request_transform: transform.RequestTransform | None = None,
    response_transform: transform.ResponseTransform | None = None,
) -> DeliveryResult:
    """POST `payload` (JSON-encodable, or bytes already encoded) to `url` with
    `Content-Type: application/json`, the configured `headers` (resolved `(name,
    value)` pairs; the user agent is the outbound client's `svc/<version>`) and, when
    given, `Idempotency-Key: <idempotency_key>`; `tries` counts attempts including
    this one (1 for the first); `without`: header names not to send (a request
    transform's `remove_headers`, the client's `User-Agent` included). Never raises
    for a failed call: a timeout or connection failure is a failed attempt logged as
    `client_error`.

    `request_transform`: applied to the request (`svc.outbound.transform`) with
    `$session_variables` the body's `event.session_variables` (Hasura `Eventing/HTTP.hs`
    `mkRequest`); the invocation log keeps the original payload and shows the headers
    sent. A transform that fails is an `error` outcome without a call (the reference
    marks the event errored, `PESetError`), its log a `client_error` whose message is
    "Request Transformation Failed" with the error bundle as `errors`.
    `response_transform`: the answer's body is transformed before it is logged (Hasura
    `Eventing/HTTP.hs` `invokeRequest`); a failure is a failed attempt logged as
    `client_error` whose message is the error bundle's JSON."""
    body: bytes | None = payload if isinstance(payload, bytes) else msgspec.json.encode(payload)
    sent = [("Content-Type", "application/json"), *headers]
    if idempotency_key is not None:
        sent.append(("Idempotency-Key", idempotency_key))
    if without:
        gone = {name.lower() for name in without}
        sent = [(k, v) for k, v in sent if k.lower() not in gone]
    request_log = {
        "payload": msgspec.json.decode(body) if body else None,
        "headers": _headers_log(sent),
        "version": log_version,
    }
    method = "POST"
    context: transform.Context | None = None
    if request_transform is not None:
        original = transform.Request(method, url, tuple(sent), body)
        try:
            out, context = transform.transform_request(
                request_transform, original, _session_of(request_log["payload"])
            )
        except transform.TransformError as exc:
            data = {"message": "Request Transformation Failed", "errors": exc.errors}
            response_log = {"type": "client_error", "data": data, "version": log_version}
            return DeliveryResult("error", None, None, request_log, response_log, 0.0)
        method, url, sent, body = out.method, out.url, list(out.headers), out.body
        removed = request_transform.remove_headers if request_transform.has_headers else ()
        # the client's own headers (User-Agent) go only when not added back
        without = tuple({*without, *(h for h in removed if out.header(h) is None)})
        request_log["headers"] = _headers_log(sent)
    http = client or shared_client()
    started = time.perf_counter()
    try:
        answer = await http.request(
            method, url, headers=sent, content=body, timeout=policy.timeout_sec, without=without
        )
    except OutboundError as exc:
        message = f"{exc.message}: {exc.detail}" if exc.detail else exc.message
        response_log = {
            "type": "client_error",
            "data": {"message": message},
            "version": log_version,
        }
        return _failed(None, None, tries, policy, request_log, response_log, started)
    answer_body = answer.body
    if response_transform is not None:
        session = _session_of(request_log["payload"])
        try:
            value = transform.apply_response(
                response_transform, answer.body, answer.status, context, session
            )
        except transform.TransformError as exc:
            message = msgspec.json.encode(exc.errors).decode()
            response_log = {
                "type": "client_error",
                "data": {"message": message},
                "version": log_version,
            }
            return _failed(None, None, tries, policy, request_log, response_log, started)
        answer_body = msgspec.json.encode(value)
    response_log = {
        "type": "webhook_response",
        "data": {
            "body": _body_text(answer_body),
            "headers": _headers_log(answer.headers),
            "status": answer.status,
        },
        "version": log_version,
    }
    if 200 <= answer.status < 300:
        elapsed = time.perf_counter() - started
        return DeliveryResult("success", answer.status, None, request_log, response_log, elapsed)
    wait = retry_after_seconds(answer.header("retry-after"))
    return _failed(answer.status, wait, tries, policy, request_log, response_log, started)


def _session_of(payload: Any) -> dict[str, str] | None:
    """`event.session_variables` of an event body (None when absent: scheduled events)."""
    event = payload.get("event") if isinstance(payload, dict) else None
    found = event.get("session_variables") if isinstance(event, dict) else None
    if not isinstance(found, dict):
        return None
    return {str(k).lower(): str(v) for k, v in found.items()}


def _failed(
    status: int | None,
    retry_after: float | None,
    tries: int,
    policy: RetryPolicy,
    request_log: dict[str, Any],
    response_log: dict[str, Any],
    started: float,
) -> DeliveryResult:
    elapsed = time.perf_counter() - started
    if tries > policy.num_retries:
        return DeliveryResult("error", status, None, request_log, response_log, elapsed)
    wait = policy.interval(tries) if retry_after is None else retry_after
    return DeliveryResult("retry", status, wait, request_log, response_log, elapsed)
