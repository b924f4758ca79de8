"""The GraphQL request value and what every GraphQL entry reads from it: decoding a
body, coercing variables, the errors body. Below the pipeline (`svc.api.graphql`) and
the step executor (`svc.api.steps`) that both import it."""

from __future__ import annotations

from typing import Any, Protocol

import msgspec
from graphql import GraphQLSchema, OperationDefinitionNode
from graphql.execution.values import get_variable_values

from svc.errors import SvcError, validation_failed
from svc.session_vars import is_admin

_encode = msgspec.json.encode


class GraphQLRequest(msgspec.Struct):
    """`{query, variables, operationName}` (the GraphQL-over-HTTP body)."""

    query: str
    variables: dict[str, Any] | None = None
    operationName: str | None = None


class HasOperation(Protocol):
    """A prepared document (`svc.api.graphql.Prepared`): its chosen operation."""

    @property
    def operation(self) -> OperationDefinitionNode: ...


def decode_json(body: bytes) -> Any:
    """A request body's JSON; raises 400 `invalid-json` when it is not JSON, not UTF-8
    (msgspec raises UnicodeDecodeError inside strings) or nested deeper than the decoder
    recurses (RecursionError)."""
    try:
        return msgspec.json.decode(body)
    except (msgspec.DecodeError, UnicodeDecodeError):
        raise SvcError("invalid-json", "invalid json", path="$") from None
    except RecursionError:
        raise SvcError("invalid-json", "invalid json: nested too deeply", path="$") from None


def decode_request(raw: Any) -> GraphQLRequest:
    """Validate one request object; raises `parse-failed` on a wrong shape."""
    try:
        return msgspec.convert(raw, GraphQLRequest)
    except msgspec.ValidationError as exc:
        raise SvcError("parse-failed", str(exc).split(" - at ")[0], path="$") from None


def coerce_variables(
    schema: GraphQLSchema,
    prepared: HasOperation,
    raw: dict[str, Any] | None,
    max_list_items: int = 0,
) -> dict[str, Any]:
    """Coerce the request's variables to the operation's declared types; raises
    `validation-failed` at `$.variableValues`, also when they hold more than
    `max_list_items` list items in all (0: no bound; checked before coercion, which
    costs ~14x a list's bytes)."""
    defs = prepared.operation.variable_definitions
    if not defs:
        return {}
    if max_list_items and raw:
        items = list_items(raw)
        if items > max_list_items:
            raise validation_failed(
                f"the variables hold {items} list items, more than the limit of "
                f"{max_list_items} (SVC_GRAPHQL_MAX_LIST_ITEMS)",
                "$.variableValues",
            )
    result = get_variable_values(schema, defs, raw or {})
    if isinstance(result, list):
        raise validation_failed(result[0].message, "$.variableValues")
    return result


def list_items(value: Any) -> int:
    """How many items the lists inside `value` (decoded JSON) hold in all."""
    total, pending = 0, [value]
    while pending:
        item = pending.pop()
        if isinstance(item, list):
            total += len(item)
            pending.extend(v for v in item if isinstance(v, list | dict))
        elif isinstance(item, dict):
            pending.extend(v for v in item.values() if isinstance(v, list | dict))
    return total


def errors_body(exc: SvcError, role: str) -> bytes:
    """`{"errors": [...]}` for a request that failed (internals shown to admin only)."""
    return _encode({"errors": [exc.to_graphql_error(admin=is_admin(role))]})
