"""Steps for root fields answered outside the database: remote schemas, actions, and the
joins of their relationships (`svc.plan.steps`). Read from the role's schema: a remote
root field carries `extensions["svc_remote"]` (the remote's name), an action root field
`extensions["action"]` (its `ResolvedAction`), an action output's relationship field
`extensions["action_rel"]`, a remote relationship field `extensions["svc_remote_rel"]`.
"""

from __future__ import annotations

from typing import Any

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    GraphQLObjectType,
    GraphQLSchema,
    ListValueNode,
    ObjectValueNode,
    OperationDefinitionNode,
    ValueNode,
    VariableNode,
    get_named_type,
    print_ast,
    value_from_ast_untyped,
)
from graphql.execution.collect_fields import collect_fields

from svc.metadata.remote_schemas import RemoteSchema, SourceJoin
from svc.outbound.headers import HeaderConf
from svc.plan.nodes import Param, SessionJson, VarRef
from svc.plan.remote_fields import Joined, field_chain, remote_document
from svc.plan.steps import ActionLogStep, HttpStep, JoinStep, StepKind
from svc.schema.info import FieldKind

JSON = "json"  # the `pg_type` of a `Param` that is a JSON value of an HTTP body


def outside_kind(field: Any) -> StepKind | None:
    """The step kind answering root field `field` (a `GraphQLField`, None for
    `__typename`), None for a database field."""
    if field is None:
        return None
    ext = field.extensions
    if "svc_remote" in ext:
        return StepKind.REMOTE_SCHEMA
    if "action" in ext:
        return StepKind.ACTION
    return None


def selects_outside(
    schema: GraphQLSchema,
    root: GraphQLObjectType,
    op: OperationDefinitionNode,
    fragments: dict[str, FragmentDefinitionNode],
    variables: dict[str, Any],
) -> bool:
    """Whether a root field of `op` is a remote or action field (a look at the root's
    field names; fragments are collected only when the root selection has them)."""
    selections = op.selection_set.selections
    if all(isinstance(sel, FieldNode) for sel in selections):
        names = [sel.name.value for sel in selections]  # type: ignore[attr-defined]
    else:
        fields = collect_fields(schema, fragments, variables, root, op.selection_set)
        names = [nodes[0].name.value for nodes in fields.values()]
    return any(outside_kind(root.fields.get(name)) is not None for name in names)


def _template_headers(confs: Any) -> tuple[tuple[str, str], ...]:
    """Configured headers as templates: `value`, or `{{VAR}}` for `value_from_env`."""
    out = []
    for conf in confs or ():
        assert isinstance(conf, HeaderConf)
        value = (
            conf.value or "" if conf.value_from_env is None else f"{{{{{conf.value_from_env}}}}}"
        )
        out.append((conf.name, value))
    return tuple(out)


def _json(node: ValueNode) -> Any:
    """An argument's value as JSON, variables as `Param(VarRef)` leaves."""
    if isinstance(node, VariableNode):
        return Param(VarRef(node.name.value), JSON)
    if isinstance(node, ObjectValueNode):
        return {f.name.value: _json(f.value) for f in node.fields}
    if isinstance(node, ListValueNode):
        return [_json(v) for v in node.values]
    return value_from_ast_untyped(node)


def action_step(
    field: Any, alias: str, nodes: list[FieldNode], op: OperationDefinitionNode
) -> HttpStep | ActionLogStep:
    """The step answering action root field `alias`: the handler call of a synchronous
    action (`svc.api.actions.sync.make_call` sends it), else the stored call."""
    resolved = field.extensions["action"]
    action = resolved.action
    d = action.definition
    if field.extensions["svc"].kind == FieldKind.ACTION_RESULT:
        return ActionLogStep(action.name, alias, store=False)
    if d.asynchronous:
        return ActionLogStep(action.name, alias, store=True)
    body = {
        "action": {"name": action.name},
        "input": {a.name.value: _json(a.value) for a in nodes[0].arguments or ()},
        "session_variables": Param(SessionJson(), JSON),
        "request_query": print_ast(op),
    }
    headers = (*_template_headers(d.headers), ("Content-Type", "application/json"))
    return HttpStep(StepKind.ACTION, action.name, d.handler, "POST", headers, body, (alias,))


def remote_step(
    entry: RemoteSchema,
    aliases: tuple[str, ...],
    nodes: list[FieldNode],
    op: OperationDefinitionNode,
    fragments: dict[str, FragmentDefinitionNode],
) -> HttpStep:
    """The GraphQL request sending root fields `nodes` to remote `entry`."""
    text, names = remote_document(op, nodes, fragments)
    body: dict[str, Any] = {"query": text}
    if names:
        body["variables"] = {n: Param(VarRef(n), JSON) for n in sorted(names)}
    if op.name is not None:
        body["operationName"] = op.name.value
    d = entry.definition
    url = d.url or "" if d.url_from_env is None else f"{{{{{d.url_from_env}}}}}"
    headers = _template_headers(d.headers)
    return HttpStep(StepKind.REMOTE_SCHEMA, entry.name, url, "POST", headers, body, aliases)


def remote_joins(
    rels: list[Joined], remotes: tuple[RemoteSchema, ...], source: int
) -> list[JoinStep]:
    """One `REMOTE_JOIN` step per remote relationship found (each once), reading the
    rows of step `source`."""
    urls = {r.name: (r.definition.url or f"{{{{{r.definition.url_from_env}}}}}") for r in remotes}
    out: dict[tuple[str, str], JoinStep] = {}
    for rel in rels:
        key = (str(rel.table), rel.name)
        if key in out:
            continue
        if isinstance(rel, SourceJoin):
            out[key] = JoinStep(
                StepKind.REMOTE_JOIN,
                source,
                f"{rel.table}.{rel.name}",
                f"source {rel.source}",
                rel.field_mapping,
                "",
                {"to_source": {"table": str(rel.target), "relationship_type": rel.kind}},
            )
            continue
        chain = field_chain(rel.remote_field)
        args = chain[-1][1] if chain else {}
        mapping = tuple(_dollar_args(args))
        out[key] = JoinStep(
            StepKind.REMOTE_JOIN,
            source,
            f"{_table_name(rel.table)}.{rel.name}",
            rel.remote_schema,
            mapping,
            urls.get(rel.remote_schema, ""),
            rel.remote_field,
        )
    return list(out.values())


def _table_name(name: Any) -> str:
    schema, table = getattr(name, "schema", None), getattr(name, "name", name)
    return f"{schema}.{table}" if schema else str(table)


def _dollar_args(spec: Any, path: str = "") -> list[tuple[str, str]]:
    """`(column, argument path)` for every `$column` in a relationship's arguments."""
    if isinstance(spec, str) and spec.startswith("$"):
        return [(spec[1:], path)]
    if isinstance(spec, dict):
        return [p for k, v in spec.items() for p in _dollar_args(v, f"{path}.{k}" if path else k)]
    return []


def action_joins(
    schema: GraphQLSchema,
    fragments: dict[str, FragmentDefinitionNode],
    variables: dict[str, Any],
    field: Any,
    nodes: list[FieldNode],
    source: int,
) -> list[JoinStep]:
    """One `ACTION_JOIN` step per relationship field selected inside the answer of the
    action root field `field` (answered by step `source`)."""
    out: dict[str, JoinStep] = {}

    def walk(type_: Any, selection_nodes: list[FieldNode]) -> None:
        named = get_named_type(type_)
        if not isinstance(named, GraphQLObjectType):
            return
        for node in selection_nodes:
            if node.selection_set is None:
                continue
            fields = collect_fields(schema, fragments, variables, named, node.selection_set)
            for sub in fields.values():
                fdef = named.fields.get(sub[0].name.value)
                if fdef is None:
                    continue
                rel = fdef.extensions.get("action_rel")
                if rel is not None:
                    key = f"{named.name}.{sub[0].name.value}"
                    out.setdefault(
                        key,
                        JoinStep(
                            StepKind.ACTION_JOIN,
                            source,
                            key,
                            _table_name(rel.table),
                            tuple(rel.mapping),
                        ),
                    )
                else:
                    walk(fdef.type, sub)

    walk(field.type, nodes)
    return list(out.values())
