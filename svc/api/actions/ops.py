"""The metadata operations of actions and custom types (spec 4.3, 4.4; `OPERATIONS`, part
of `svc.api.metadata.REGISTRY`).

Each is a pure transition (`svc.metadata.actions`) committed through the request's
`Context`: a change whose types or relationships do not resolve is refused with the IR's
inconsistency (`svc.ir.actions`: 400 `invalid-configuration`, `internal` the object),
and the old metadata keeps serving. `drop_action` with `clear_data` (default true)
deletes the action's stored asynchronous calls in the same transaction.
"""

from __future__ import annotations

import re
from typing import Any, Protocol
from urllib.parse import urlsplit

import msgspec

from svc.api.op_registry import SYNC_ONLY, Operation
from svc.catalog.action_log import CLEAR_SQL
from svc.errors import ErrorCode, SvcError
from svc.execute.db import Connection
from svc.metadata import actions as transitions
from svc.metadata.action_model import CustomTypes
from svc.metadata.args import parse_args
from svc.metadata.model import Metadata
from svc.outbound import transform
from svc.outbound.transform import check_transforms

SUCCESS = {"message": "success"}


class Body(Protocol):
    """What a handler reads of the request (`svc.api.metadata.QueryBody`)."""

    args: Any


class Ctx(Protocol):
    """What a handler uses of `svc.api.metadata.Context`."""

    metadata: Metadata
    conn: Connection

    def commit(self, md: Metadata, *, on_new: str = "error") -> None: ...


async def set_custom_types(ctx: Ctx, body: Body) -> Any:
    """Replace the custom types; refused when a type or relationship does not resolve or
    an action loses a type it uses."""
    types = parse_args(CustomTypes, body.args or {})
    ctx.commit(transitions.set_custom_types(ctx.metadata, types))
    return SUCCESS


def _check_transforms(args: Any) -> None:
    """The reference validates an action's transforms before creating or updating it
    (`Metadata.hs` `validateTransforms`; `svc.outbound.transform.check_transforms`)."""
    d = args.definition
    check_transforms(getattr(d, "request_transform", None), getattr(d, "response_transform", None))


async def create_action(ctx: Ctx, body: Body) -> Any:
    """Add an action (400 `already-exists`; the header and type errors of its definition)."""
    args = parse_args(transitions.CreateAction, body.args)
    _check_transforms(args)
    ctx.commit(transitions.create_action(ctx.metadata, args))
    return SUCCESS


async def update_action(ctx: Ctx, body: Body) -> Any:
    """Replace an action's definition (400 `not-exists`)."""
    args = parse_args(transitions.CreateAction, body.args)
    _check_transforms(args)
    ctx.commit(transitions.update_action(ctx.metadata, args))
    return SUCCESS


async def drop_action(ctx: Ctx, body: Body) -> Any:
    """Remove an action and its permissions (400 `not-exists`); `clear_data` (default
    true) deletes its stored asynchronous calls."""
    args = parse_args(transitions.DropAction, body.args)
    ctx.commit(transitions.drop_action(ctx.metadata, args.name))
    if args.clear_data is not False:
        await ctx.conn.execute(CLEAR_SQL, args.name)
    return SUCCESS


async def create_action_permission(ctx: Ctx, body: Body) -> Any:
    """Let a role see an action (400 `not-exists`, `already-exists`)."""
    args = parse_args(transitions.ActionPermissionArgs, body.args)
    ctx.commit(transitions.create_action_permission(ctx.metadata, args))
    return SUCCESS


async def drop_action_permission(ctx: Ctx, body: Body) -> Any:
    """Remove a role's permission on an action (400 `not-exists`)."""
    args = parse_args(transitions.ActionPermissionArgs, body.args)
    ctx.commit(transitions.drop_action_permission(ctx.metadata, args))
    return SUCCESS


def _op(name: str, kind: Any, handler: Any) -> Operation:
    return Operation(name=name, handler=handler, args=kind, read_only=False, checks=SYNC_ONLY)


OPERATIONS = [
    _op("set_custom_types", CustomTypes, set_custom_types),
    _op("create_action", transitions.CreateAction, create_action),
    _op("update_action", transitions.CreateAction, update_action),
    _op("drop_action", transitions.DropAction, drop_action),
    _op("create_action_permission", transitions.ActionPermissionArgs, create_action_permission),
    _op("drop_action_permission", transitions.ActionPermissionArgs, drop_action_permission),
]
"""The action and custom-type operations (no `pg_` spelling)."""


class TestWebhookTransform(msgspec.Struct, frozen=True):
    """`test_webhook_transform` args (the reference's `TestWebhookTransform`):
    `webhook_url` (a `{{VAR}}` template or `{from_env}`, read from `env` only),
    `body` (the request's JSON), `request_transform`, `response_transform?` (validated
    only), `env?`, `session_variables?`, `request_headers?` (`[[name, value]]`)."""

    __test__ = False  # not a pytest class

    webhook_url: str | dict[str, str]
    body: Any
    request_transform: dict[str, Any]
    response_transform: dict[str, Any] | None = None
    env: dict[str, str] | None = None
    session_variables: dict[str, str] | None = None
    request_headers: list[tuple[str, str]] | None = None


_ENV_PART = re.compile(r"\{\{([^}]+)\}\}|([^{]+)|(\{)")
_SAMPLE_ENV_NOTE = (
    "For security reasons when testing request options real environment variable values"
    " are not available. Please enter a mock value for {0} in the Sample Env Variables list."
    " See https://hasura.io/docs/latest/graphql/core/actions/rest-connectors/"
    "#action-transforms-sample-context"
)


def _from_env(text: str, env: dict[str, str]) -> str:
    """`interpolateFromEnv` (`Metadata.hs`): `{{NAME}}` replaced by `env[NAME]` (the name
    as written, spaces included); 400 `parse-failed` "Invalid Url Template" for an empty
    text, 400 `not-found` "Missing Env Var: NAME. …" for a name not in `env`."""
    if not text:
        raise SvcError(ErrorCode.PARSE_FAILED, "Invalid Url Template", path="$.args")
    out = []
    for m in _ENV_PART.finditer(text):
        name = m.group(1)
        if name is None:
            out.append(m.group(0))
        elif name in env:
            out.append(env[name])
        else:
            message = f"Missing Env Var: {name}. " + _SAMPLE_ENV_NOTE.format(name)
            raise SvcError(ErrorCode.NOT_FOUND, message, path="$.args")
    return "".join(out)


def _initialisable(url: str) -> bool:
    """Whether http-client's `parseRequest` takes `url` (an http(s) URL with a host)."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (a bad port raises)
    except ValueError:
        return False
    return parts.scheme.lower() in ("http", "https") and bool(parts.hostname)


async def test_webhook_transform(ctx: Ctx, body: Body) -> Any:
    """`test_webhook_transform` (`Metadata.hs` `runTestWebhookTransform`): the request the
    transform would make of `POST`-less `GET <webhook_url>` with `body`, as
    `{webhook_url, method, headers: [[lower-case name, value]], body}` (the body as JSON,
    a form body as a string, a removed one ""). Errors: the transforms' validation (400
    `validation-failed` at `$.args`, `internal` kriti's parse errors), the URL's
    environment variables (400 `parse-failed` / `not-found`), an evaluation failure (400
    `validation-failed` "request transform validation failed", `internal` the errors)."""
    args = parse_args(TestWebhookTransform, body.args)
    rt, _ = check_transforms(args.request_transform, args.response_transform)
    assert rt is not None
    env = args.env or {}
    if isinstance(args.webhook_url, dict):
        name = args.webhook_url.get("from_env")
        if name is None or name not in env:
            raise SvcError(ErrorCode.NOT_FOUND, "Missing Env Var", path="$.args")
        url = env[name]
    else:
        url = _from_env(args.webhook_url, env)
    headers = tuple((k, _from_env(v, env)) for k, v in args.request_headers or ())
    if not _initialisable(url):
        error = {
            "error_code": "Request Initialization Error",
            "message": f'InvalidUrlException "{url}" "Invalid URL"',
        }
        raise SvcError(
            ErrorCode.VALIDATION_FAILED,
            "request transform validation failed",
            path="$.args",
            internal=[error],
        )
    session = None
    if args.session_variables is not None:
        session = {k.lower(): v for k, v in args.session_variables.items()}
    original = transform.Request("GET", url, headers, msgspec.json.encode(args.body))
    try:
        out, _ctx = transform.transform_request(rt, original, session, base_url=url)
    except transform.TransformError as exc:
        raise SvcError(
            ErrorCode.VALIDATION_FAILED,
            "request transform validation failed",
            path="$.args",
            internal=exc.errors,
        ) from None
    return {
        "webhook_url": out.url,
        "method": out.method,
        "headers": [[k.lower(), v] for k, v in out.headers],
        "body": transform.body_for_display(out.body),
    }


OPERATIONS.append(
    Operation(
        name="test_webhook_transform",
        handler=test_webhook_transform,
        args=TestWebhookTransform,
        read_only=True,
        checks=SYNC_ONLY,  # a no-op: it changes neither the document nor the catalog
    )
)
