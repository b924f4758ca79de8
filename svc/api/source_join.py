"""Joins from a remote schema's type to a table (`SourceJoin`, `definition.to_source`).

The reference answers a remote source relationship by one query of the target source per
join (`Hasura/GraphQL/Execute/RemoteJoin/Join.hs`, `RemoteSourceJoin`). svc does the same
through its own GraphQL pipeline, as the request's role: the relationship fields of one
selection are answered by ONE operation on the role's `select` (or `select_aggregate`)
root field of the table, with one aliased root field (`f0`, `f1`, …) per distinct set of
join values, each filtered by the mapped columns (`where: {_and: [$__svc_wN, <the
client's where>]}`) and taking the client's other arguments, so `limit`, `offset`,
`order_by` and `distinct_on` apply per parent object as the reference's per-row join
does. That operation is one SQL statement; relationships inside it are joined by the same
pipeline. An object relationship takes the first row (`limit: 1`) or null.
"""

from __future__ import annotations

from typing import Any

import msgspec
from graphql import (
    ArgumentNode,
    DocumentNode,
    FieldNode,
    IntValueNode,
    ListValueNode,
    NamedTypeNode,
    NameNode,
    NonNullTypeNode,
    ObjectFieldNode,
    ObjectValueNode,
    OperationDefinitionNode,
    OperationType,
    SelectionSetNode,
    ValueNode,
    VariableDefinitionNode,
    VariableNode,
    get_named_type,
    print_ast,
)

from svc.api.request import GraphQLRequest, decode_json
from svc.errors import ErrorCode, SvcError
from svc.metadata.remote_schemas import SourceJoin
from svc.plan.remote_fields import HIDDEN, used_names
from svc.schema.info import FieldKind

WHERE = "where"


def _variable(name: str) -> VariableNode:
    return VariableNode(name=NameNode(value=name))


def _where(var: str, given: ValueNode | None) -> ValueNode:
    """`$var`, or `{_and: [$var, given]}` when the client filters too."""
    if given is None:
        return _variable(var)
    items = ListValueNode(values=(_variable(var), given))
    return ObjectValueNode(fields=(ObjectFieldNode(name=NameNode(value="_and"), value=items),))


def _call(nodes: list[FieldNode], alias: str, root: str, var: str, single: bool) -> FieldNode:
    """`alias: root(where: …, <the client's other arguments>) { <selection> }`."""
    given = {a.name.value: a.value for a in nodes[0].arguments or ()}
    args = [
        ArgumentNode(name=NameNode(value=WHERE), value=_where(var, given.pop(WHERE, None))),
        *(ArgumentNode(name=NameNode(value=k), value=v) for k, v in given.items()),
    ]
    if single:
        args.append(ArgumentNode(name=NameNode(value="limit"), value=IntValueNode(value="1")))
    sub = [s for n in nodes if n.selection_set for s in n.selection_set.selections]
    return FieldNode(
        alias=NameNode(value=alias),
        name=NameNode(value=root),
        arguments=tuple(args),
        directives=(),
        selection_set=SelectionSetNode(selections=tuple(sub)),
    )


async def join_source(state: Any, work: Any, rel: SourceJoin, fdef: Any, items: list[Any]) -> None:
    """Answer every occurrence in `items` (`(object, alias, nodes, arguments)`) of the
    relationship field `fdef` (of `rel`) in one operation (see the module); raises the
    operation's first error as `SvcError` (its code)."""
    root_name: str = fdef.extensions["svc_source_root"]
    columns: tuple[str, ...] = fdef.extensions["svc_source_columns"]
    root = work.schema.query_type.fields[root_name]
    where_type = get_named_type(root.args[WHERE].type).name
    # by its kind, not its name (`xAggregate` under `graphql-default`, `svc.naming`)
    aggregate = getattr(root.extensions.get("svc"), "kind", None) == FieldKind.SELECT_AGGREGATE
    single = rel.kind == "object" and not aggregate
    sets: dict[str, int] = {}
    calls: list[FieldNode] = []
    variables: dict[str, Any] = {}
    placed: list[tuple[dict[str, Any], str, int | None]] = []
    for obj, alias, nodes, _ in items:
        values = [obj.get(f"\0{HIDDEN}{lhs}") for lhs in rel.svc_fields]
        if any(v is None for v in values):
            placed.append((obj, alias, None))
            continue
        key = msgspec.json.encode(values).decode()
        if key not in sets:
            n = sets[key] = len(calls)
            var = f"__svc_w{n}"
            variables[var] = {c: {"_eq": v} for c, v in zip(columns, values, strict=True)}
            calls.append(_call(nodes, f"f{n}", root_name, var, single))
        placed.append((obj, alias, sets[key]))
    answers = await _run(state, work, calls, variables, where_type) if calls else {}
    for obj, alias, at in placed:
        value = None if at is None else answers.get(f"f{at}")
        if single:
            value = value[0] if isinstance(value, list) and value else None
        elif value is None and at is None and not aggregate:
            value = []  # a list relationship of an object without join values: no rows
        obj[alias] = value


async def _run(
    state: Any, work: Any, calls: list[FieldNode], variables: dict[str, Any], where_type: str
) -> dict[str, Any]:
    """Run `calls` as one query of the request's role; its `data`."""
    frags, names = used_names(calls, work.fragments)
    names -= set(variables)  # the join's own (a join inside a join's answer reuses them)
    defs = [d for d in work.op.variable_definitions or () if d.variable.name.value in names]
    given = {k: work.raw_variables[k] for k in names if k in work.raw_variables}
    bool_exp = NonNullTypeNode(type=NamedTypeNode(name=NameNode(value=where_type)))
    defs += [VariableDefinitionNode(variable=_variable(v), type=bool_exp) for v in variables]
    op = OperationDefinitionNode(
        operation=OperationType.QUERY,
        variable_definitions=tuple(defs),
        directives=(),
        selection_set=SelectionSetNode(selections=tuple(calls)),
    )
    text = print_ast(DocumentNode(definitions=(op, *frags)))
    req = GraphQLRequest(text, {**given, **variables})
    body = await work.service.run(state, work.role, work.session, req, counted=True, internal=True)
    answer = decode_json(body)
    errors = answer.get("errors") if isinstance(answer, dict) else None
    if errors:
        first = errors[0] if isinstance(errors[0], dict) else {}
        code = (first.get("extensions") or {}).get("code") or ErrorCode.UNEXPECTED
        raise SvcError(code, str(first.get("message")))
    data = answer.get("data") if isinstance(answer, dict) else None
    return data if isinstance(data, dict) else {}
