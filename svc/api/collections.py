"""Metadata operations for query collections, the allow-list and REST endpoints, and the
check that keeps stored queries consistent with the schema (`Check.COLLECTIONS`).

The operations are pure transitions of `svc.metadata.collections`, `allowlist` and
`endpoints` applied to the request's
`Context`; none of them changes what the IR is built from, so the IR is kept. Every
metadata operation declaring `Check.COLLECTIONS` (these and most of the others) is then
checked as the reference does after each schema-cache build: a stored query that no longer
validates against the admin schema, or an endpoint that no longer resolves, refuses the
operation with 500 `unexpected` "cannot continue due to newly found inconsistent metadata"
(the new inconsistent objects in `internal`); inconsistencies that existed before do not.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from graphql import (
    DocumentNode,
    FieldNode,
    GraphQLError,
    GraphQLSchema,
    Visitor,
    parse,
    validate,
    visit,
)

from svc.api.op_context import SUCCESS, Before, Context, Handler, QueryBody
from svc.api.op_registry import STANDARD, Operation, pg
from svc.api.validate import RULES
from svc.errors import ErrorCode, SvcError
from svc.ir import Ir
from svc.metadata import allowlist as ma
from svc.metadata import collections as mc
from svc.metadata import endpoints as me
from svc.metadata.args import parse_args
from svc.metadata.model import JSON, Metadata
from svc.metadata.query_text import operations, strip_cached
from svc.schema import build_schema
from svc.session_vars import ADMIN_ROLE

T = TypeVar("T")


# --------------------------------------------------------------------------------------------
# Stored queries against the schema


def admin_schema(ir: Ir) -> GraphQLSchema:
    """The admin GraphQL schema of `ir`, built once per IR (`Ir.derived`: a check compares
    the IR before and after one operation, each asked more than once)."""
    if __name__ not in ir.derived:
        ir.derived[__name__] = build_schema(ir, ADMIN_ROLE)
    schema: GraphQLSchema = ir.derived[__name__]
    return schema


def _field_paths(document: DocumentNode) -> dict[int, str]:
    """`$.a.b` (response keys) of every field node, by node identity."""
    paths: dict[int, str] = {}
    stack: list[str] = []

    class Paths(Visitor):
        def enter_field(self, node: FieldNode, *_: Any) -> None:
            stack.append((node.alias or node.name).value)
            paths[id(node)] = "$." + ".".join(stack)

        def leave_field(self, node: FieldNode, *_: Any) -> None:
            stack.pop()

    visit(document, Paths())
    return paths


def _message(err: GraphQLError, paths: dict[int, str]) -> str:
    """The reference's wording where it differs: `$.a: field 'a' not found in object 'T'`."""
    text = err.message
    if text.startswith("Cannot query field "):
        parts = text.split("'")
        if len(parts) >= 5:
            text = f"field '{parts[1]}' not found in object '{parts[3]}'"
    where = paths.get(id(err.nodes[0])) if err.nodes else None
    return f"{where}: {text}" if where else text


def query_errors(schema: GraphQLSchema, text: str) -> list[str]:
    """Why a stored query does not run against `schema` (`[]` when it does): it must parse,
    hold exactly one operation (none is named when it runs) and validate; `@cached` is
    allowed (see `strip_cached`)."""
    try:
        document = parse(text)
    except GraphQLError as exc:
        return [f"not a valid graphql query: {exc.message}"]
    document, _ = strip_cached(document)
    if len(operations(document)) != 1:
        return [
            "exactly one operation has to be present in the document when operationName "
            "is not specified"
        ]
    errors = validate(schema, document, RULES)
    paths = _field_paths(document) if errors else {}
    return [_message(e, paths) for e in errors]


@dataclass(frozen=True)
class Issue:
    """An inconsistent collection query or endpoint; `key` identifies it across builds."""

    key: tuple[Any, ...]
    internal: JSON = field(default_factory=dict)


def query_issues(md: Metadata, schema: GraphQLSchema) -> list[Issue]:
    """Every collection query that does not run against `schema`, with the reference's
    reason (`In query collection "c" the query "q" is invalid with the following error(s):
    …`, naming the REST endpoints that use it and whether it is allow-listed)."""
    out: list[Issue] = []
    for collection in md.query_collections:
        cname = collection.name
        for listed in collection.definition.queries:
            qname, text = listed.name, listed.query
            errors = query_errors(schema, text)
            if not errors:
                continue
            reason = (
                f'Inconsistent object: In query collection "{cname}" the query "{qname}" is '
                "invalid with the following error(s): " + ", ".join(f'"{e}"' for e in errors)
            )
            endpoints = mc.dependent_endpoints(md, cname, qname)
            if endpoints:
                reason += ". This query is being used in the following REST endpoint(s): "
                reason += ", ".join(f'"{e}"' for e in endpoints)
            if mc.allowlisted(md, cname):
                reason += ". This query is in allowlist."
            internal = {
                "definition": {"name": qname, "query": text},
                "reason": reason,
                "name": f"query_collections {qname} in {cname}",
                "type": "query_collections",
            }
            out.append(Issue(("query", cname, qname, text), internal))
    return out


def issues(md: Metadata, ir: Ir) -> list[Issue]:
    """Every inconsistent endpoint and collection query of `md` served over `ir`."""
    found = [Issue(i.key, i.internal) for i in me.endpoint_issues(md)]
    if md.query_collections:
        found.extend(query_issues(md, admin_schema(ir)))
    return found


def check_new_issues(before: tuple[Metadata, Ir], after: tuple[Metadata, Ir]) -> None:
    """Raise 500 `unexpected` "cannot continue due to newly found inconsistent metadata"
    when `after` has an inconsistent query or endpoint that `before` did not have (Hasura's
    `withNewInconsistentObjsCheck`)."""
    md, ir = after
    if not md.query_collections and not md.rest_endpoints:
        return
    new = issues(md, ir)
    if not new:
        return
    old = {i.key for i in issues(*before)}
    fresh = [i for i in new if i.key not in old]
    if fresh:
        raise SvcError(
            ErrorCode.UNEXPECTED,
            "cannot continue due to newly found inconsistent metadata",
            status=500,
            path="$.args",
            internal=[i.internal for i in fresh],
        )


async def check_collections(ctx: Context, body: QueryBody, before: Before, result: Any) -> Any:
    """`Check.COLLECTIONS`: `check_new_issues` when the operation changed the metadata or
    the IR; the answer unchanged."""
    if ctx.metadata is not before.metadata or ctx.ir is not before.ir:
        check_new_issues((before.metadata, before.ir), (ctx.metadata, ctx.ir))
    return result


# --------------------------------------------------------------------------------------------
# Operations


def _adopt(ctx: Context, md: Metadata) -> None:
    """Take `md` as the request's document. These transitions do not touch what the IR is
    built from (tables, functions), so the IR stays as it is."""
    ctx.metadata, ctx.metadata_changed = md, True


def _step(kind: type[T], step: Callable[[Metadata, T], Metadata]) -> Handler:
    async def handler(ctx: Context, body: QueryBody) -> Any:
        _adopt(ctx, step(ctx.metadata, parse_args(kind, body.args)))
        return SUCCESS

    handler.__doc__ = step.__doc__
    return handler


async def add_collection_to_allowlist(ctx: Context, body: QueryBody) -> Any:
    """`add_collection_to_allowlist`; a collection listed already answers the reference's
    `{"message": …}` and changes nothing."""
    args = parse_args(ma.AllowlistEntry, body.args)
    md, message = ma.add_collection_to_allowlist(ctx.metadata, args)
    if message is not None:
        return {"message": message}
    _adopt(ctx, md)
    return SUCCESS


def _op(name: str, kind: Any, handler: Handler) -> Operation:
    return Operation(
        name=name, handler=handler, args=kind, read_only=False, checks=STANDARD, aliases=pg(name)
    )


OPERATIONS = [
    _op(
        "create_query_collection",
        mc.CreateQueryCollection,
        _step(mc.CreateQueryCollection, mc.create_query_collection),
    ),
    _op(
        "drop_query_collection",
        mc.DropQueryCollection,
        _step(mc.DropQueryCollection, mc.drop_query_collection),
    ),
    _op(
        "add_query_to_collection",
        mc.AddQueryToCollection,
        _step(mc.AddQueryToCollection, mc.add_query_to_collection),
    ),
    _op(
        "drop_query_from_collection",
        mc.DropQueryFromCollection,
        _step(mc.DropQueryFromCollection, mc.drop_query_from_collection),
    ),
    _op("add_collection_to_allowlist", ma.AllowlistEntry, add_collection_to_allowlist),
    _op(
        "drop_collection_from_allowlist",
        ma.DropCollectionFromAllowlist,
        _step(ma.DropCollectionFromAllowlist, ma.drop_collection_from_allowlist),
    ),
    _op(
        "update_scope_of_collection_in_allowlist",
        ma.AllowlistEntry,
        _step(ma.AllowlistEntry, ma.update_scope_of_collection_in_allowlist),
    ),
    _op(
        "create_rest_endpoint",
        me.CreateRestEndpoint,
        _step(me.CreateRestEndpoint, me.create_rest_endpoint),
    ),
    _op(
        "drop_rest_endpoint", me.DropRestEndpoint, _step(me.DropRestEndpoint, me.drop_rest_endpoint)
    ),
]
"""The collection, allow-list and REST-endpoint operations (`/v1/query`, `/v1/metadata`,
inside `bulk`; also `pg_`-prefixed)."""
