"""Merge remote schemas into a role's schema (spec 4.1 `add_remote_schema`).

`merge_remotes(schema, md, role, remotes)` returns `schema` unchanged when the document has no
remote schemas; otherwise a new `GraphQLSchema` whose root types hold the database's
fields and, for every remote the registry has an introspection of, the remote's query
fields (on `query_root` and `subscription_root`, where a subscription is then refused at
execution) and mutation fields (on `mutation_root`), each marked
`extensions["svc"] = FieldInfo("remote_schema")`, `extensions["svc_remote"] = name`.
The remote's other types join the schema by name; a remote scalar named like one of
svc's (`timestamptz`) is svc's. Remote relationships become fields of their table's
object type (`FieldInfo("remote_relationship")`, `extensions["svc_remote_rel"]`), for
roles that see every join column. The remote's types are rebuilt from the introspection
for every merge, so each role's schema owns its objects.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from graphql import (
    GraphQLArgument,
    GraphQLField,
    GraphQLInputField,
    GraphQLInputObjectType,
    GraphQLList,
    GraphQLNamedType,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLSchema,
    GraphQLUnionType,
    build_client_schema,
    get_named_type,
    is_input_object_type,
    is_interface_type,
    is_object_type,
)

from svc.config import remote_schema_permissions
from svc.ir.role_view import remote_access
from svc.metadata.inherited_roles import parents as inherited_parents
from svc.metadata.model import Metadata
from svc.metadata.remote_schemas import (
    RemoteRelationship,
    RemoteType,
    SourceJoin,
    remote_relationships,
    remote_schemas,
    type_relationships,
)
from svc.schema.info import FieldInfo, FieldKind
from svc.schema.remote_custom import Customization
from svc.schema.remote_permission_check import permission_problem
from svc.schema.remote_permissions import role_introspection
from svc.schema.remote_registry import RemoteRegistry

REMOTE_INFO = FieldInfo(FieldKind.REMOTE_SCHEMA)
REMOTE_REL_INFO = FieldInfo(FieldKind.REMOTE_RELATIONSHIP)


def permissions_enabled() -> bool:
    """Whether remote schema permissions apply (`SVC_GRAPHQL_ENABLE_REMOTE_SCHEMA_PERMISSIONS`
    true; `svc.config.remote_schema_permissions`): then a role other than admin sees only
    the remotes it has a permission on."""
    return remote_schema_permissions()


def _retype(t: Any, swap: dict[str, GraphQLNamedType]) -> Any:
    """`t` with named types found in `swap` replaced (wrappers rebuilt)."""
    if isinstance(t, GraphQLNonNull):
        return GraphQLNonNull(_retype(t.of_type, swap))
    if isinstance(t, GraphQLList):
        return GraphQLList(_retype(t.of_type, swap))
    return swap.get(t.name, t)


def _swap_types(types: list[GraphQLNamedType], swap: dict[str, GraphQLNamedType]) -> None:
    """Point every field, argument, input field, interface and union member of `types`
    at `swap`'s types."""
    for t in types:
        if isinstance(t, GraphQLUnionType):
            t.types = [swap.get(m.name, m) for m in t.types]
        if is_object_type(t) or is_interface_type(t):
            t.interfaces = [swap.get(i.name, i) for i in t.interfaces]  # type: ignore[attr-defined]
            for field in t.fields.values():  # type: ignore[attr-defined]
                field.type = _retype(field.type, swap)
                for arg in field.args.values():
                    arg.type = _retype(arg.type, swap)
        elif is_input_object_type(t):
            for input_field in t.fields.values():  # type: ignore[attr-defined]
                input_field.type = _retype(input_field.type, swap)


class _Remote:
    """One remote's schema for this merge: root fields and the types to add."""

    def __init__(
        self,
        name: str,
        remote: GraphQLSchema,
        ours: dict[str, GraphQLNamedType],
        namespace: str | None = None,
        custom: Customization | None = None,
        original: dict[str, Any] | None = None,
    ):
        roots = {remote.query_type, remote.mutation_type, remote.subscription_type}
        self.types = [
            t
            for n, t in remote.type_map.items()
            if not n.startswith("__") and t not in roots and n not in ours
        ]
        # A type svc (or an earlier remote) already has is that one: the reference
        # accepts a scalar of the same name, or an identical definition (two remotes
        # sharing `Character`); `add_remote_schema` refuses other clashes.
        swap = {n: ours[n] for n in remote.type_map if n in ours and not n.startswith("__")}
        if swap:
            _swap_types(list(remote.type_map.values()), swap)
        self.name = name
        self.query = self._fields(name, remote.query_type, namespace, "query")
        self.mutation = self._fields(name, remote.mutation_type, namespace, "mutation")
        self.schema = remote
        self.custom, self.original = custom, original  # to read remote_field paths

    def path(self, spec: Any) -> Any:
        """A relationship's `remote_field` (the remote's own names) in this schema's
        customized names (`Customization.field_path`)."""
        if self.custom is None or self.original is None:
            return spec
        return self.custom.field_path(spec, self.original)

    @staticmethod
    def _fields(
        name: str, root: GraphQLObjectType | None, namespace: str | None, kind: str
    ) -> dict[str, GraphQLField]:
        """The remote's root fields as svc's root fields (under one field `namespace`,
        of type `<namespace>_<kind>`, when the remote has a root fields namespace)."""
        if root is None:
            return {}
        ext = {"svc": REMOTE_INFO, "svc_remote": name}
        if namespace is not None:
            inner = _Remote._fields(name, root, None, kind)
            holder = GraphQLObjectType(f"{namespace}_{kind}", inner)
            ns_ext = {**ext, "svc_namespace": namespace}
            return {namespace: GraphQLField(holder, extensions=ns_ext)}
        return {
            n: GraphQLField(
                f.type,
                f.args,
                description=f.description,
                deprecation_reason=f.deprecation_reason,
                extensions=ext,
            )
            for n, f in root.fields.items()
        }


def _remote_schema(
    role: str,
    data: dict[str, Any],
    entry: Any,
    parents: Mapping[str, tuple[str, ...]],
    original: dict[str, Any] | None = None,
) -> GraphQLSchema | None:
    """The remote as `role` sees it (the role view decides): whole, or its permission's
    subset (None: nothing, also when the remote's `original` introspection refutes the
    permission, an inconsistency); `parents`: the inherited roles."""
    access = remote_access(entry, role, enforced=permissions_enabled(), parents=parents)
    if access.whole:
        return build_client_schema(data)  # type: ignore[arg-type]
    # The permission is in the remote's own names: customized like the remote's schema.
    if access.sdl is None or (original is not None and permission_problem(access.sdl, original)):
        return None
    own = role_introspection(access.sdl)
    if own is None:
        return None
    custom = Customization.of(entry)
    return build_client_schema(custom.customize(own) if custom is not None else own)  # type: ignore[arg-type]


def merge_remotes(
    schema: GraphQLSchema,
    md: Metadata,
    role: str,
    remotes: RemoteRegistry,
    unresolved: list[tuple[RemoteRelationship, str]] | None = None,
) -> GraphQLSchema:
    """`schema` with the remote schemas of `md` merged in for `role`, as introspected in
    `remotes` (see the module); the role view stays reachable (`schema_view`). Remote
    relationships whose remote field the role's remote schema lacks are not added and,
    with `unresolved`, appended to it with the reason."""
    if not md.remote_schemas:
        return schema
    ours: dict[str, GraphQLNamedType] = dict(schema.type_map)
    merged: list[_Remote] = []
    parents = inherited_parents(md)
    for entry in remote_schemas(md):
        found = remotes.lookup(entry)
        if found is None or found.data is None:
            continue
        custom = Customization.of(entry)
        data = custom.customize(found.data) if custom is not None else found.data
        remote = _remote_schema(role, data, entry, parents, found.data)
        if remote is None:
            continue
        namespace = custom.namespace if custom is not None else None
        part = _Remote(entry.name, remote, ours, namespace, custom, found.data)
        ours.update({t.name: t for t in part.types})
        merged.append(part)
    query = _root("query_root", schema.query_type, [p.query for p in merged])
    mutation = _root("mutation_root", schema.mutation_type, [p.mutation for p in merged])
    subscription = _root("subscription_root", schema.subscription_type, [p.query for p in merged])
    _add_relationships(schema, md, merged, unresolved)
    _add_type_relationships(schema, md, merged, unresolved, ours)
    new = GraphQLSchema(
        query,
        mutation,
        subscription,
        types=[t for p in merged for t in p.types],
        directives=schema.directives,
        extensions=schema.extensions,
    )
    return new


def _root(
    name: str, ours: GraphQLObjectType | None, parts: list[dict[str, GraphQLField]]
) -> GraphQLObjectType | None:
    extra = {n: f for part in parts for n, f in part.items()}
    if not extra:
        return ours
    fields = dict(ours.fields) if ours is not None else {}
    fields.pop("no_queries_available", None)
    fields.update(extra)
    return GraphQLObjectType(name, fields, description=ours.description if ours else None)


def _table_types(schema: GraphQLSchema) -> dict[Any, tuple[GraphQLObjectType, Any]]:
    """Each table's object type and IR table, found through the `select` root fields."""
    out: dict[Any, tuple[GraphQLObjectType, Any]] = {}
    root = schema.query_type
    for field in root.fields.values() if root else ():
        info = field.extensions.get("svc")
        if isinstance(info, FieldInfo) and info.kind == FieldKind.SELECT and info.table is not None:
            named = get_named_type(field.type)
            if isinstance(named, GraphQLObjectType):
                out[info.table.name] = (named, info.table)
    return out


def join_field_names(table: Any, fields: tuple[str, ...]) -> tuple[str, ...]:
    """The GraphQL field names of a remote relationship's join fields: a column's custom
    name when it has one (the join fields name columns, as in the reference), a computed
    field's own name."""
    out = []
    for name in fields:
        column = table.column(name) if table is not None else None
        out.append(column.gql_name if column is not None else name)
    return tuple(out)


def _target_field(remote: GraphQLSchema, path: Any) -> Any:
    """`(innermost field of a relationship's remote_field `path` (customized names) in the
    remote, its fixed arguments)`, or None when the path does not exist."""
    parent: Any = remote.query_type
    spec: Any = path
    found: Any = None
    while isinstance(spec, dict) and spec:
        name, inner = next(iter(spec.items()))
        named = get_named_type(parent) if parent is not None else None
        fields = getattr(named, "fields", None)
        if not fields or name not in fields:
            return None
        inner = inner if isinstance(inner, dict) else {}
        found = (fields[name], inner.get("arguments") or {})
        parent = fields[name].type
        spec = inner.get("field")
    return found


def _field_path(spec: Any) -> list[str]:
    """The field names of a relationship's `remote_field`, from the remote's root down."""
    out = []
    while isinstance(spec, dict) and spec:
        name, inner = next(iter(spec.items()))
        out.append(str(name))
        spec = inner.get("field") if isinstance(inner, dict) else None
    return out


def _add_relationships(
    schema: GraphQLSchema,
    md: Metadata,
    merged: list[_Remote],
    unresolved: list[tuple[RemoteRelationship, str]] | None = None,
) -> None:
    """Add each remote relationship as a field of its table's type (see the module)."""
    rels = remote_relationships(md)
    if not rels:
        return
    by_name = {p.name: p for p in merged}
    tables = _table_types(schema)
    for rel in rels:
        part, found_table = by_name.get(rel.remote_schema), tables.get(rel.table)
        if part is None or found_table is None:
            continue
        obj, table = found_table
        joins = join_field_names(table, rel.svc_fields)
        if not all(c in obj.fields for c in joins):
            continue  # the role does not see every join field
        path = part.path(rel.remote_field)
        found = _target_field(part.schema, path)
        if found is None:
            if unresolved is not None:
                path = ".".join(name for name in _field_path(rel.remote_field))
                reason = f'field "{path}" not found in remote schema "{rel.remote_schema}"'
                unresolved.append((rel, reason))
            continue
        field, fixed = found
        obj.fields[rel.name] = _remote_rel_field(rel, obj, field, fixed, part, path, joins)
        # The reference lists the fields of a type with remote relationships by name.
        ordered = sorted(obj.fields.items())
        obj.fields.clear()
        obj.fields.update(ordered)


def _remote_rel_field(
    rel: RemoteRelationship,
    obj: GraphQLObjectType,
    target: GraphQLField,
    fixed: dict[str, Any],
    part: _Remote,
    path: Any,
    joins: tuple[str, ...],
) -> GraphQLField:
    """The field of relationship `rel` on `obj`, answered by remote field `target` of
    remote `part` (`path`: its remote_field in the customized names, `joins`: the join
    fields' GraphQL names, `svc_fields` order). The remote field's other arguments stay
    the client's to give; an input object the relationship fills in part is merged with
    the client's at execution."""
    suffix = f"_remote_rel_{obj.name}{rel.name}"
    args: dict[str, GraphQLArgument] = {}
    for n, a in sorted(target.args.items()):
        if n not in fixed:
            args[n] = a
        elif isinstance(fixed[n], dict):
            partial = _partial(a.type, fixed[n], suffix)
            if partial is not None:
                args[n] = GraphQLArgument(partial, a.default_value)
    # the remote as this role sees it, in customized names: what execution sends in
    ext = {
        "svc": REMOTE_REL_INFO,
        "svc_remote_rel": rel,
        "svc_remote_schema": part.schema,
        "svc_remote_path": path,
        "svc_join_fields": joins,
    }
    return GraphQLField(target.type, args, extensions=ext)


def _partial(t: Any, fixed: Any, suffix: str) -> Any:
    """Input type `t` without the fields a relationship fixes (`<Type><suffix>`, the
    reference's name for it; nullable, the client may leave it out), `t` itself when
    nothing inside it is fixed, None when nothing is left."""
    if isinstance(t, GraphQLNonNull):
        t = t.of_type
    if not isinstance(t, GraphQLInputObjectType) or not isinstance(fixed, dict):
        return None
    fields: dict[str, GraphQLInputField] = {}
    for n, f in t.fields.items():
        if n not in fixed:
            fields[n] = f
        elif isinstance(fixed[n], dict):
            inner = _partial(f.type, fixed[n], suffix)
            if inner is not None:
                fields[n] = GraphQLInputField(inner, f.default_value)
    return GraphQLInputObjectType(t.name + suffix, fields) if fields else None


def add_source_joins(schema: GraphQLSchema, joins: tuple[SourceJoin, ...]) -> None:
    """Add each relationship from a table to a table of another source
    (`svc.ir.source_joins`) as a field of the owner's type in `schema` (a role's), as
    `_add_source_join` adds a remote type's: left out when the role does not see the
    owner, a join column, the target's `select` field or a mapped column in its filter."""
    if not joins:
        return
    tables = _table_types(schema)
    roots = _select_roots(schema)
    for rel in joins:
        found = tables.get(rel.table)
        if found is None:
            continue
        obj, table = found
        names = join_field_names(table, rel.svc_fields)
        if all(n in obj.fields for n in names):
            _add_source_join(obj, rel, names, roots.get(rel.target) or {})


def _select_roots(schema: GraphQLSchema) -> dict[Any, dict[FieldKind, tuple[str, GraphQLField]]]:
    """Each table's `select` and `select_aggregate` root fields in `schema` (name, field)."""
    out: dict[Any, dict[FieldKind, tuple[str, GraphQLField]]] = {}
    root = schema.query_type
    kinds = (FieldKind.SELECT, FieldKind.SELECT_AGGREGATE)
    for name, field in root.fields.items() if root else ():
        info = field.extensions.get("svc")
        if isinstance(info, FieldInfo) and info.kind in kinds and info.table is not None:
            out.setdefault(info.table.name, {})[info.kind] = (name, field)
    return out


def _add_type_relationships(
    schema: GraphQLSchema,
    md: Metadata,
    merged: list[_Remote],
    unresolved: list[tuple[Any, str]] | None,
    types: Mapping[str, GraphQLNamedType],
) -> None:
    """Add each relationship of a remote schema's type (`type_relationships`) as a field
    of that type as the role sees it, in the customized names: to a table, the table's
    object (object relationship) or its list with the `select` field's arguments and
    `<name>_aggregate` (array relationship, when the role may aggregate), as the
    reference's `remoteRelationshipToSourceField`; to another remote, as a table's
    relationship to a remote. Left out when the role does not see the type, a join field,
    the table (its `select` field) or a mapped column in its filter; one whose type,
    field or target does not exist is reported to `unresolved`."""
    rels = type_relationships(md)
    if not rels:
        return
    by_name = {p.name: p for p in merged}
    roots = _select_roots(schema)
    for rel in rels:
        owner = rel.table
        part = by_name.get(owner.remote_schema) if isinstance(owner, RemoteType) else None
        if part is None or not isinstance(owner, RemoteType):
            continue
        custom = part.custom
        name = custom.type_name(owner.type_name) if custom else owner.type_name
        # the type the role's schema holds: an earlier remote's when both have it
        obj = types.get(name) or part.schema.get_type(name)
        if not isinstance(obj, GraphQLObjectType):
            if unresolved is not None:
                unresolved.append((rel, f"object with name {owner.type_name!r} not found"))
            continue
        joins = tuple(
            custom.field_name(owner.type_name, f) if custom else f for f in rel.svc_fields
        )
        if not all(j in obj.fields for j in joins):
            continue
        if isinstance(rel, SourceJoin):
            # a target that is not tracked, or lacks a column, is the IR's to report
            # (`svc.ir.unsupported_issues.remote_type_relationship_issues`)
            _add_source_join(obj, rel, joins, roots.get(rel.target) or {})
        else:
            target = by_name.get(rel.remote_schema)
            if target is None:
                continue
            path = target.path(rel.remote_field)
            found = _target_field(target.schema, path)
            if found is None:
                if unresolved is not None:
                    names = ".".join(_field_path(rel.remote_field))
                    reason = f'field "{names}" not found in remote schema "{rel.remote_schema}"'
                    unresolved.append((rel, reason))
                continue
            field, fixed = found
            obj.fields[rel.name] = _remote_rel_field(rel, obj, field, fixed, target, path, joins)


def _add_source_join(
    obj: GraphQLObjectType,
    rel: SourceJoin,
    joins: tuple[str, ...],
    roots: dict[FieldKind, tuple[str, GraphQLField]],
) -> None:
    """The fields of one relationship from a remote type to a table (see above), none
    when the role cannot select the table or filter by a mapped column."""
    select = roots.get(FieldKind.SELECT)
    if select is None:
        return
    root_name, root = select
    where = root.args.get("where")
    where_type = get_named_type(where.type) if where is not None else None
    filterable = where_type.fields if isinstance(where_type, GraphQLInputObjectType) else {}
    info = root.extensions["svc"].table
    columns = [info.column(c) for _, c in rel.field_mapping]
    if any(c is None or c.gql_name not in filterable for c in columns):
        return  # the join could not run
    ext = {
        "svc": REMOTE_REL_INFO,
        "svc_remote_rel": rel,
        "svc_join_fields": joins,
        "svc_source_root": root_name,
        "svc_source_columns": tuple(c.gql_name for c in columns if c is not None),
    }
    if rel.kind == "object":
        named: Any = get_named_type(root.type)
        obj.fields[rel.name] = GraphQLField(named, extensions=ext)
        return
    obj.fields[rel.name] = GraphQLField(root.type, root.args, extensions=ext)
    aggregate = roots.get(FieldKind.SELECT_AGGREGATE)
    if aggregate is not None:
        agg_ext = {**ext, "svc_source_root": aggregate[0]}
        agg = aggregate[1]
        obj.fields[f"{rel.name}_aggregate"] = GraphQLField(agg.type, agg.args, extensions=agg_ext)
