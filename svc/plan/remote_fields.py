"""Remote-schema fields of an operation, read from its AST (no I/O): the document sent
for a remote's root fields, and remote relationships replaced by their join columns.

Planning (`svc.plan.operation`) and execution (`svc.api.remote_exec`,
`svc.api.remote_join`) both read these, so they live below both. A remote relationship
field is never planned as SQL: `strip_relationships` replaces it by the relationship's
join columns under hidden aliases (`__svc_j_<column>`), which the database step returns
and the join step reads (spec 2.6, 4.7).
"""

from __future__ import annotations

from typing import Any

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    GraphQLSchema,
    InlineFragmentNode,
    NameNode,
    OperationDefinitionNode,
    SelectionSetNode,
    VariableNode,
    Visitor,
    get_named_type,
    is_abstract_type,
    print_ast,
    visit,
)

from svc.metadata.model import Metadata
from svc.metadata.remote_schemas import RemoteRelationship, SourceJoin

HIDDEN = "__svc_j_"
TYPENAME = HIDDEN + "__typename"  # the object's type, asked for under abstract types
Joined = RemoteRelationship | SourceJoin  # what a relationship field of another place is


def has_remote_relationships(md: Metadata) -> bool:
    """Whether any table of `md` has a remote relationship."""
    return any(entry.remote_relationships for entry in md.tables)


def rel_of(parent: Any, name: str) -> Joined | None:
    """The remote relationship field `name` of type `parent` answers (of a table or of a
    remote schema's type; to a remote or to a table), None for others."""
    fields = getattr(parent, "fields", None)
    f = fields.get(name) if fields else None
    if f is None:
        return None
    rel = f.extensions.get("svc_remote_rel")
    return rel if isinstance(rel, RemoteRelationship | SourceJoin) else None


def used_names(
    nodes: list[Any], fragments: dict[str, FragmentDefinitionNode]
) -> tuple[list[FragmentDefinitionNode], set[str]]:
    """The fragment definitions `nodes` use (transitively) and the variables they read."""
    frags: dict[str, FragmentDefinitionNode] = {}
    names: set[str] = set()

    class Finder(Visitor):
        def enter_fragment_spread(self, node: Any, *_: Any) -> None:
            name = node.name.value
            if name not in frags and name in fragments:
                frags[name] = fragments[name]
                visit(fragments[name], self)

        def enter_variable(self, node: VariableNode, *_: Any) -> None:
            names.add(node.name.value)

    finder = Finder()
    for node in nodes:
        visit(node, finder)
    return list(frags.values()), names


def remote_document(
    op: OperationDefinitionNode,
    nodes: list[FieldNode],
    fragments: dict[str, FragmentDefinitionNode],
) -> tuple[str, set[str]]:
    """The text of the request sending `nodes` (root fields of `op`) to a remote, and the
    variables it reads."""
    frags, names = used_names(nodes, fragments)
    defs = tuple(d for d in op.variable_definitions or () if d.variable.name.value in names)
    only = OperationDefinitionNode(
        operation=op.operation,
        name=op.name,
        variable_definitions=defs,
        directives=(),
        selection_set=SelectionSetNode(selections=tuple(nodes)),
    )
    return print_ast(DocumentNode(definitions=(only, *frags))), names


def _rewrite(
    schema: GraphQLSchema, sel: SelectionSetNode, parent: Any, found: list[Joined]
) -> SelectionSetNode:
    out: list[Any] = []
    for node in sel.selections:
        if isinstance(node, FieldNode):
            rel = rel_of(parent, node.name.value)
            if rel is not None:
                found.append(rel)
                # Selected by their GraphQL names (a column's custom name), returned under
                # the column's own name, which the join reads.
                names = parent.fields[node.name.value].extensions.get("svc_join_fields")
                out.extend(
                    FieldNode(
                        alias=NameNode(value=HIDDEN + c),
                        name=NameNode(value=gql),
                        arguments=(),
                        directives=(),
                    )
                    for c, gql in zip(rel.svc_fields, names or rel.svc_fields, strict=True)
                )
                continue
            if node.selection_set is not None:
                fdef = getattr(parent, "fields", {}).get(node.name.value)
                if fdef is not None:
                    before = len(found)
                    named = get_named_type(fdef.type)
                    inner = _rewrite(schema, node.selection_set, named, found)
                    if len(found) > before and is_abstract_type(named):
                        # the join must know each object's own type to find its fields
                        kind = FieldNode(
                            alias=NameNode(value=TYPENAME), name=NameNode(value="__typename")
                        )
                        inner = SelectionSetNode(selections=(*inner.selections, kind))
                    if len(found) > before:
                        node = FieldNode(
                            alias=node.alias,
                            name=node.name,
                            arguments=node.arguments,
                            directives=node.directives,
                            selection_set=inner,
                        )
            out.append(node)
        elif isinstance(node, InlineFragmentNode):
            cond = (
                schema.get_type(node.type_condition.name.value) if node.type_condition else parent
            )
            inner = _rewrite(schema, node.selection_set, cond, found)
            out.append(
                InlineFragmentNode(
                    type_condition=node.type_condition,
                    directives=node.directives,
                    selection_set=inner,
                )
            )
        else:
            out.append(node)
    return SelectionSetNode(selections=tuple(out))


def strip_holes(
    schema: GraphQLSchema,
    fragments: dict[str, FragmentDefinitionNode],
    holes: list[tuple[Any, list[FieldNode]]],
) -> tuple[list[list[FieldNode]], dict[str, FragmentDefinitionNode], list[Joined]]:
    """The field nodes of each `(field, nodes)` (a relationship field answered by SQL
    outside the operation's statement, an action's relationship) and `fragments` with the
    remote relationships inside replaced by their join columns, and those found."""
    found: list[Joined] = []
    out: list[list[FieldNode]] = []
    for fdef, nodes in holes:
        target = get_named_type(fdef.type)
        out.append(
            [
                n
                if n.selection_set is None
                else FieldNode(
                    alias=n.alias,
                    name=n.name,
                    arguments=n.arguments,
                    directives=n.directives,
                    selection_set=_rewrite(schema, n.selection_set, target, found),
                )
                for n in nodes
            ]
        )
    return out, _rewrite_fragments(schema, fragments, found), found


def strip_selection(
    schema: GraphQLSchema, sel: SelectionSetNode | None, parent: Any
) -> SelectionSetNode | None:
    """`sel` (on type `parent`) with the remote relationships inside replaced by their
    join fields under hidden aliases (a remote relationship's own result, sent to the
    remote, the join continuing inside it)."""
    return None if sel is None else _rewrite(schema, sel, parent, [])


def strip_fragments(
    schema: GraphQLSchema, fragments: dict[str, FragmentDefinitionNode]
) -> dict[str, FragmentDefinitionNode]:
    """`fragments` as `strip_selection` leaves selections."""
    return _rewrite_fragments(schema, fragments, [])


def _rewrite_fragments(
    schema: GraphQLSchema, fragments: dict[str, FragmentDefinitionNode], found: list[Joined]
) -> dict[str, FragmentDefinitionNode]:
    """`fragments` rewritten as `_rewrite` does selections."""
    out: dict[str, FragmentDefinitionNode] = {}
    for name, frag in fragments.items():
        inner = _rewrite(
            schema, frag.selection_set, schema.get_type(frag.type_condition.name.value), found
        )
        out[name] = FragmentDefinitionNode(
            name=frag.name,
            type_condition=frag.type_condition,
            directives=frag.directives,
            selection_set=inner,
            variable_definitions=frag.variable_definitions,
        )
    return out


def remote_relationships(
    schema: GraphQLSchema,
    fragments: dict[str, FragmentDefinitionNode],
    op: OperationDefinitionNode,
) -> tuple[OperationDefinitionNode, dict[str, FragmentDefinitionNode], list[Joined]]:
    """`op` and `fragments` with remote relationship fields replaced by their join
    columns, and the relationships found (one per occurrence, in document order)."""
    root = {
        "mutation": schema.mutation_type,
        "subscription": schema.subscription_type,
    }.get(op.operation.value, schema.query_type)
    found: list[Joined] = []
    sel = _rewrite(schema, op.selection_set, root, found)
    out = _rewrite_fragments(schema, fragments, found)
    new_op = OperationDefinitionNode(
        operation=op.operation,
        name=op.name,
        variable_definitions=op.variable_definitions,
        directives=op.directives,
        selection_set=sel,
    )
    return new_op, out, found


def strip_nodes(
    schema: GraphQLSchema,
    fragments: dict[str, FragmentDefinitionNode],
    root: Any,
    nodes: list[FieldNode],
) -> tuple[list[FieldNode], dict[str, FragmentDefinitionNode], list[Joined]]:
    """Root fields `nodes` (of type `root`, sent to a remote) and `fragments` with the
    relationship fields of the remote's types replaced by their join fields under hidden
    aliases (the remote answers those; the join fills the relationship in), and the
    relationships found."""
    found: list[Joined] = []
    sel = _rewrite(schema, SelectionSetNode(selections=tuple(nodes)), root, found)
    out = _rewrite_fragments(schema, fragments, found)
    return [n for n in sel.selections if isinstance(n, FieldNode)], out, found


def strip_relationships(
    schema: GraphQLSchema, prepared: Any, op: OperationDefinitionNode
) -> tuple[OperationDefinitionNode, dict[str, FragmentDefinitionNode], bool]:
    """`op` and `prepared.fragments` with remote relationship fields replaced by their
    join columns, and whether there was any (`remote_relationships`)."""
    new_op, fragments, found = remote_relationships(schema, prepared.fragments, op)
    return new_op, fragments, bool(found)


def field_chain(spec: Any) -> list[tuple[str, dict[str, Any]]]:
    """A remote relationship's `remote_field` (`{name: {arguments, field: {...}}}`) as
    its path: `(field name, arguments)` from the remote's root down."""
    chain = []
    while isinstance(spec, dict) and spec:
        name, inner = next(iter(spec.items()))
        inner = inner if isinstance(inner, dict) else {}
        chain.append((name, inner.get("arguments") or {}))
        spec = inner.get("field")
    return chain
