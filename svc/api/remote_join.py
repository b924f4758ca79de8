"""Remote relationships at execution (spec 2.6, 4.7).

Planning never sees a remote relationship field: `strip_relationships` replaces each by
the relationship's join columns under hidden aliases (`__svc_j_<column>`), so the
database statement returns them. After it ran, `stitch` walks the answer along the
operation's selections, gathers every object holding a relationship field, and per
relationship and selection sends ONE request to the remote with one aliased field
(`f0`, `f1`, …) per distinct argument set; the answers are written in place and walked
in turn (a remote's answer holds the join fields of the relationships inside it: one call
per relationship per level), and the hidden columns removed at the end. Under a remote's
interface or union the object's own type is read from a hidden `__typename`. A null join
column makes no call and answers null. Errors of the remote answer the whole request with
the reference's "Errors from remote server".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgspec
from graphql import (
    ArgumentNode,
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    GraphQLObjectType,
    GraphQLSchema,
    NameNode,
    NullValueNode,
    OperationDefinitionNode,
    OperationType,
    SelectionSetNode,
    ValueNode,
    ast_from_value,
    get_named_type,
    is_abstract_type,
    print_ast,
)
from graphql.execution.collect_fields import collect_fields
from graphql.execution.values import get_argument_values

from svc.api.remote_call import post_graphql, request_headers
from svc.api.remote_presets import apply_presets
from svc.api.remote_translate import Translation
from svc.api.source_join import join_source
from svc.errors import ErrorCode, SvcError
from svc.metadata.remote_schemas import RemoteRelationship, SourceJoin, find_remote
from svc.outbound import forwarded
from svc.plan.remote_fields import (
    HIDDEN,
    TYPENAME,
    Joined,
    field_chain,
    rel_of,
    strip_fragments,
    strip_selection,
    used_names,
)
from svc.schema.remote_custom import Customization


@dataclass
class JoinWork:
    """What stitching reads: the role's schema, the document's fragments, coerced
    variables, the operation, the session and client headers, and (for joins to a
    table, `svc.api.source_join`) the GraphQL service, the role and the request's own
    variables; `found` collects `(object, alias, relationship, field nodes, arguments,
    field definition)` per relationship occurrence."""

    schema: GraphQLSchema
    fragments: dict[str, FragmentDefinitionNode]
    variables: dict[str, Any]
    op: OperationDefinitionNode
    session: dict[str, str]
    client: list[tuple[str, str]] | None
    service: Any
    role: str
    raw_variables: dict[str, Any]
    found: list[tuple[dict[str, Any], str, Joined, list[FieldNode], Any, Any]] = field(
        default_factory=list
    )
    held: list[dict[str, Any]] = field(default_factory=list)  # objects with join values


def _walk(work: JoinWork, parent: Any, value: Any, sel: SelectionSetNode) -> None:
    if isinstance(value, list):
        for item in value:
            _walk(work, parent, item, sel)
        return
    if not isinstance(value, dict):
        return
    if any(k.startswith(HIDDEN) for k in value):
        work.held.append(value)
    if is_abstract_type(parent):  # a remote's interface or union: the object's own type
        name = value.get(TYPENAME, value.get("__typename"))
        parent = work.schema.get_type(name) if isinstance(name, str) else None
        if not isinstance(parent, GraphQLObjectType):
            _hold(value)
            return
    fields = collect_fields(work.schema, work.fragments, work.variables, parent, sel)
    for alias, nodes in fields.items():
        rel = rel_of(parent, nodes[0].name.value)
        if rel is not None:
            fdef = parent.fields[nodes[0].name.value]
            given = get_argument_values(fdef, nodes[0], work.variables)
            work.found.append((value, alias, rel, nodes, given, fdef))
            continue
        fdef = parent.fields.get(nodes[0].name.value)
        sub = [s for n in nodes if n.selection_set for s in n.selection_set.selections]
        if fdef is not None and sub and value.get(alias) is not None:
            _walk(
                work,
                get_named_type(fdef.type),
                value[alias],
                SelectionSetNode(selections=tuple(sub)),
            )
    _hold(value)


def _hold(value: dict[str, Any]) -> None:
    """Move the hidden join values out of the answer's keys (kept for the join, removed
    after)."""
    for key in [k for k in value if k.startswith(HIDDEN)]:
        value[f"\0{key}"] = value.pop(key)


async def stitch(
    state: Any, work: JoinWork, data: dict[str, Any], root: Any, fields: dict[str, list[FieldNode]]
) -> None:
    """Fetch and write every remote relationship field inside `data` (see the module),
    in the answers of database and remote root fields alike."""
    for alias, nodes in fields.items():
        fdef = root.fields.get(nodes[0].name.value)
        sub = [s for n in nodes if n.selection_set for s in n.selection_set.selections]
        if fdef is None or not sub:
            continue
        _walk(
            work,
            get_named_type(fdef.type),
            data.get(alias),
            SelectionSetNode(selections=tuple(sub)),
        )
    while work.found:  # a level at a time: a remote's answer may hold relationships too
        batch, work.found = work.found, []
        groups: dict[tuple[Any, ...], tuple[Joined, Any, list[Any]]] = {}
        for obj, alias, rel, nodes, given, fdef in batch:
            shape = tuple(print_ast(n.selection_set) if n.selection_set else "" for n in nodes)
            key = (str(rel.table), nodes[0].name.value, shape)
            groups.setdefault(key, (rel, fdef, []))[2].append((obj, alias, nodes, given))
        for rel, fdef, items in groups.values():
            if isinstance(rel, SourceJoin):
                await join_source(state, work, rel, fdef, items)
            else:
                await _join(state, work, rel, fdef, _translation(state, rel, fdef), items)
    for obj in work.held:
        for k in [k for k in obj if k.startswith("\0")]:
            del obj[k]


def _arguments(spec: dict[str, Any], obj: dict[str, Any]) -> Any:
    """`spec` with `$column` strings replaced by the row's join values."""
    if isinstance(spec, str) and spec.startswith("$"):
        return obj.get(f"\0{HIDDEN}{spec[1:]}")
    if isinstance(spec, dict):
        return {k: _arguments(v, obj) for k, v in spec.items()}
    if isinstance(spec, list):
        return [_arguments(v, obj) for v in spec]
    return spec


def _merge(client: Any, fixed: Any) -> Any:
    """The client's arguments with the relationship's fixed ones merged in (objects
    merged key by key; the relationship's value wins elsewhere)."""
    if isinstance(client, dict) and isinstance(fixed, dict):
        out = dict(client)
        for k, v in fixed.items():
            out[k] = _merge(client.get(k), v) if k in client else v
        return out
    return fixed


def _literal(value: Any, type_: Any) -> ValueNode:
    node = ast_from_value(value, type_) if type_ is not None else None
    if node is None:
        return NullValueNode()
    return node


@dataclass(frozen=True)
class Target:
    """Where one relationship's calls go: the remote as the role sees it (customized
    names, the relationship field's `svc_remote_schema`) and, for a customized remote, the
    `Translation` into the remote's own names (`svc.api.remote_translate`)."""

    schema: GraphQLSchema
    tr: Translation | None
    chain: list[tuple[str, dict[str, Any]]]  # remote_field's levels, customized names


def _translation(state: Any, rel: RemoteRelationship, fdef: Any) -> Target:
    schema, path = fdef.extensions["svc_remote_schema"], fdef.extensions["svc_remote_path"]
    entry = find_remote(state.metadata, rel.remote_schema)
    if entry is None:
        raise SvcError(ErrorCode.NOT_EXISTS, f"remote schema {rel.remote_schema} does not exist")
    custom = Customization.of(entry)
    found = state.remotes.lookup(entry)
    chain = field_chain(path)
    if custom is None or found is None or found.data is None:
        return Target(schema, None, chain)
    names = [t["name"] for t in found.data["__schema"]["types"]]
    return Target(schema, Translation(schema, custom, custom.original_types(names)), chain)


def _call_field(
    schema: GraphQLSchema,
    target: Target,
    rel: RemoteRelationship,
    args_per_level: list[Any],
    nodes: list[FieldNode],
    alias: str,
) -> FieldNode:
    """`alias: f(args) { g(args) { <selection> } }` for one argument set, in the remote's
    own names (deeper levels aliased to their customized names when those differ), the
    relationships inside the selection asked for as their join fields (`schema`: the
    role's)."""
    chain = target.chain
    parent: Any = target.schema.query_type
    levels = []
    for (name, _), args in zip(chain, args_per_level, strict=True):
        named = get_named_type(parent)
        fdef = named.fields[name]
        arg_nodes = tuple(
            ArgumentNode(
                name=NameNode(value=k),
                value=_literal(v, fdef.args[k].type if k in fdef.args else None),
            )
            for k, v in (args or {}).items()
        )
        sent = target.tr.original_field(named.name, name) if target.tr else name
        levels.append((name, sent, arg_nodes))
        parent = fdef.type
    sub = [s for n in nodes if n.selection_set for s in n.selection_set.selections]
    inner = SelectionSetNode(selections=tuple(sub)) if sub else None
    inner = strip_selection(schema, inner, get_named_type(parent))
    if target.tr is not None:
        inner = target.tr.selection(inner, get_named_type(parent))
    for i, (name, sent, arg_nodes) in reversed(list(enumerate(levels))):
        key = alias if i == 0 else name
        inner_node = FieldNode(
            alias=NameNode(value=key) if key != sent else None,
            name=NameNode(value=sent),
            arguments=arg_nodes,
            directives=(),
            selection_set=inner,
        )
        inner = SelectionSetNode(selections=(inner_node,))
    assert inner is not None
    return inner.selections[0]  # type: ignore[return-value]


async def _join(
    state: Any,
    work: JoinWork,
    rel: RemoteRelationship,
    fdef: Any,
    target: Target,
    items: list[tuple[dict[str, Any], str, list[FieldNode], Any]],
) -> None:
    """One remote call answering every occurrence in `items` of relationship field
    `fdef`; the answers are walked for the relationships inside them (the next level)."""
    chain = target.chain
    sets: dict[str, int] = {}
    calls: list[FieldNode] = []
    placed: list[tuple[dict[str, Any], str, int | None]] = []
    for obj, alias, nodes, given in items:
        if any(obj.get(f"\0{HIDDEN}{c}") is None for c in rel.svc_fields):
            placed.append((obj, alias, None))
            continue
        args = [_arguments(a, obj) for _, a in chain]
        args[-1] = _merge(given or {}, args[-1] or {})
        key = msgspec.json.encode(args).decode()
        if key not in sets:
            sets[key] = len(calls)
            calls.append(_call_field(work.schema, target, rel, args, nodes, f"f{len(calls)}"))
        placed.append((obj, alias, sets[key]))
    answers: dict[str, Any] = {}
    if calls:
        answers = await _send(state, work, rel, target.tr, calls)
    named = get_named_type(fdef.type)
    for obj, alias, n in placed:
        if n is None:
            obj[alias] = None
            continue
        value = answers.get(f"f{n}")
        for name, _ in chain[1:]:
            value = _descend(value, name)
        obj[alias] = value
    for obj, alias, nodes, _ in items:
        sub = [s for n in nodes if n.selection_set for s in n.selection_set.selections]
        if sub and obj.get(alias) is not None:
            _walk(work, named, obj[alias], SelectionSetNode(selections=tuple(sub)))


def _descend(value: Any, name: str) -> Any:
    if isinstance(value, list):
        return [_descend(v, name) for v in value]
    return value.get(name) if isinstance(value, dict) else None


async def _send(
    state: Any,
    work: JoinWork,
    rel: RemoteRelationship,
    tr: Translation | None,
    calls: list[FieldNode],
) -> dict[str, Any]:
    """Send `calls` (in the remote's names) as one query; the answer's `data`, with
    `__typename` values customized back when `tr` is given."""
    entry = find_remote(state.metadata, rel.remote_schema)
    if entry is None:
        raise SvcError(ErrorCode.NOT_EXISTS, f"remote schema {rel.remote_schema} does not exist")
    stripped = strip_fragments(work.schema, work.fragments)
    frags, names = used_names(calls, stripped)
    defs = tuple(d for d in work.op.variable_definitions or () if d.variable.name.value in names)
    if tr is not None:
        frags = [tr.fragment(f) for f in frags]
        defs = tuple(tr.variable(d) for d in defs)
    # the role's presets, as on the remote's root fields (the reference's
    # `derive_remote_relationship_with_joining_field_containing_preset`)
    calls, with_presets = apply_presets(
        entry,
        work.role,
        work.session,
        calls,
        {f.name.value: f for f in frags},
        parents=state.ir.inherited_roles,
        variables=work.raw_variables,
        definitions=defs,
    )
    frags, names = used_names(calls, with_presets)  # a preset may replace a variable
    defs = tuple(d for d in defs if d.variable.name.value in names)
    op = OperationDefinitionNode(
        operation=OperationType.QUERY,
        variable_definitions=defs,
        directives=(),
        selection_set=SelectionSetNode(selections=tuple(calls)),
    )
    body: dict[str, Any] = {"query": print_ast(DocumentNode(definitions=(op, *frags)))}
    if names:
        body["variables"] = {k: work.raw_variables.get(k) for k in names}
    answer, response = await post_graphql(
        entry, body, request_headers(entry, work.session, work.client)
    )
    for name, value in response.headers:
        if name == "set-cookie":  # passed to the client, as for remote root fields
            forwarded.pass_back("Set-Cookie", value)
    errors = answer.get("errors") if isinstance(answer, dict) else None
    if errors or not isinstance(answer, dict):
        raise SvcError(
            ErrorCode.UNEXPECTED, "Errors from remote server", internal={"errors": errors}
        )
    data = answer.get("data")
    if not isinstance(data, dict):
        return {}
    return tr.forward(data) if tr is not None else data
