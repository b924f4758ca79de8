"""Actions and custom types resolved against the tracked tables (spec 2.2, 2.3).

`build_actions(md, tables, pg_types)` returns `ActionsIr`: each action with its parsed
output type, the custom object types with their relationships resolved to tables, and an
`Inconsistency` per problem, with the reference's wording (`type` `custom_types` named
`custom_types custom_types`, `type` `action` named `action <name>`; reasons start
"Inconsistent object: "). A type is known when it is a GraphQL built-in scalar, a custom
type of the right kind, or a Postgres type (`pg_types`: the catalog's column types and
Postgres's base types), as the reference reuses Postgres scalars.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

from graphql import GraphQLError, ListTypeNode, NonNullTypeNode, TypeNode, parse_type

from svc.catalog.introspect import DbCatalog
from svc.ir.action_issues import action_definition, custom_types_definition
from svc.ir.model import Inconsistency, Table
from svc.metadata.action_model import Action, CustomTypes, ObjectType, TypeRelationship
from svc.metadata.actions import names_of
from svc.metadata.model import Metadata, QualifiedName, qualify
from svc.metadata.names import is_graphql_name, name_message

BUILTIN_SCALARS = frozenset({"Int", "Float", "String", "Boolean", "ID"})
# Postgres base types an action may name without a table column of that type.
PG_BASE_TYPES = frozenset(
    """bool int2 int4 int8 smallint integer bigint numeric decimal float4 float8 real money
    text varchar char bpchar citext name uuid json jsonb date time timetz timestamp
    timestamptz interval bytea inet cidr macaddr bit varbit tsvector tsquery xml oid
    geometry geography point line lseg box path polygon circle ltree""".split()  # noqa: SIM905
)


@dataclass(frozen=True, slots=True)
class ObjectRelationship:
    """A custom object's relationship to a table: `kind` `object` or `array`, `mapping`
    pairs (object field, table column)."""

    name: str
    kind: str
    table: QualifiedName
    mapping: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class ResolvedAction:
    """An action whose types resolve: its metadata entry and parsed output type."""

    action: Action
    output: TypeNode

    @property
    def name(self) -> str:
        """The action's name (its root field)."""
        return self.action.name


@dataclass(frozen=True, slots=True)
class ActionsIr:
    """The resolved actions (by name, document order) and custom types."""

    types: CustomTypes = field(default_factory=CustomTypes)
    actions: dict[str, ResolvedAction] = field(default_factory=dict)
    objects: dict[str, ObjectType] = field(default_factory=dict)
    relationships: dict[str, tuple[ObjectRelationship, ...]] = field(default_factory=dict)
    issues: tuple[Inconsistency, ...] = ()


EMPTY = ActionsIr()


def catalog_types(catalog: DbCatalog) -> frozenset[str]:
    """The type names of every column in the catalog (Postgres scalars actions may use)."""
    return frozenset(c.type_name for t in catalog.tables for c in t.columns)


def base_name(node: TypeNode) -> str:
    """The named type inside list and non-null wrappers."""
    while isinstance(node, ListTypeNode | NonNullTypeNode):
        node = node.type
    return str(node.name.value)  # type: ignore[attr-defined]


def is_list(node: TypeNode) -> bool:
    """Whether the type is a list (possibly non-null)."""
    if isinstance(node, NonNullTypeNode):
        node = node.type
    return isinstance(node, ListTypeNode)


def parse_gql_type(text: str) -> TypeNode | None:
    """`"[UserId!]!"` parsed, or None when it is not a GraphQL type."""
    try:
        return parse_type(text, no_location=True)
    except GraphQLError:
        return None


def build_actions(
    md: Metadata, tables: dict[QualifiedName, Table], catalog: DbCatalog
) -> ActionsIr:
    """Resolve `md`'s custom types and actions (never raises; problems are issues)."""
    types = md.custom_types if isinstance(md.custom_types, CustomTypes) else CustomTypes()
    if not md.actions and types == CustomTypes():
        return EMPTY
    pg_types = catalog_types(catalog)
    kinds = types.type_names()
    issues: list[Inconsistency] = []
    objects = {o.name: o for o in types.objects or ()}
    relationships: dict[str, tuple[ObjectRelationship, ...]] = {}
    problem = _names_problem(names_of(types=types))
    problem = problem or _clash_problem(types, tables)
    problem = problem or _types_problem(types, kinds, pg_types)
    culprit: str | None = None  # `<object>.<relationship>` when one relationship is at fault
    if problem is None:
        problem, culprit = _relationships(objects, tables, relationships)
    if problem is not None:
        issues.append(
            Inconsistency(
                "custom_types",
                custom_types_definition(types),
                "Inconsistent object: validation for the given custom types failed because "
                + problem,
                name="custom_types custom_types",
                relationship=culprit,
            )
        )
    resolved: dict[str, ResolvedAction] = {}
    for action in md.actions:
        output, reason = _resolve_action(action, kinds, objects, relationships, pg_types)
        bad_name = _names_problem(names_of(action))
        if bad_name is not None:
            output, reason = None, bad_name
        if output is None:
            issues.append(
                Inconsistency(
                    "action",
                    action_definition(action),
                    f'Inconsistent object: in action "{action.name}"; {reason}',
                    name=f"action {action.name}",
                    relationship=action.name,  # what `svc.metadata.drop` removes
                )
            )
        else:
            resolved[action.name] = ResolvedAction(action, output)
    return ActionsIr(types, resolved, objects, relationships, tuple(issues))


def _clash_problem(types: CustomTypes, tables: dict[QualifiedName, Table]) -> str | None:
    """Custom objects, inputs and enums named like a table's type (custom scalars may
    reuse a Postgres scalar's name)."""
    taken = {t.gql_name for t in tables.values() if t.gql_name}
    clashes = sorted(
        item.name
        for items in (types.objects, types.input_objects, types.enums)
        for item in items or ()
        if item.name in taken
    )
    if clashes:
        return "the following types already exist in the schema: " + ", ".join(clashes)
    return None


def _names_problem(names: list[tuple[str, str]]) -> str | None:
    """The first name the schema cannot take (documents that did not come through the
    operations: `replace_metadata`, the metadata directory)."""
    for name, _ in names:
        if not is_graphql_name(name):
            return name_message(name)
    return None


def _known(name: str, allowed: tuple[str, ...], kinds: dict[str, str], pg: Collection[str]) -> bool:
    if name in BUILTIN_SCALARS:
        return True
    kind = kinds.get(name)
    if kind is not None:
        return kind in allowed
    return name in pg or name in PG_BASE_TYPES


def _types_problem(types: CustomTypes, kinds: dict[str, str], pg: Collection[str]) -> str | None:
    """The first custom-type field whose type does not exist, in the reference's words."""
    for where, items, allowed in (
        ("input object type", types.input_objects, ("scalar", "enum", "input_object")),
        ("object type", types.objects, ("scalar", "enum", "object")),
    ):
        for item in items or ():
            for f in item.fields:
                node = parse_gql_type(f.type)
                base = base_name(node) if node is not None else f.type
                if node is None or not _known(base, allowed, kinds, pg):
                    return (
                        f'the type "{base}" for field "{f.name}" in  {where} "{item.name}" '
                        "does not exist"
                    )
    return None


def _relationships(
    objects: dict[str, ObjectType],
    tables: dict[QualifiedName, Table],
    out: dict[str, tuple[ObjectRelationship, ...]],
) -> tuple[str | None, str | None]:
    """Resolve every object's relationships into `out`; the first problem, if any, and
    the relationship at fault (`<object>.<relationship>`)."""
    for obj in objects.values():
        problem = _object_relationships(obj, tables, out)
        if problem is not None:
            return problem[0], problem[1]
    return None, None


def _object_relationships(
    obj: ObjectType,
    tables: dict[QualifiedName, Table],
    out: dict[str, tuple[ObjectRelationship, ...]],
) -> tuple[str, str] | None:
    """Resolve `obj`'s relationships into `out`; the first problem and its relationship."""
    fields = {f.name: f.type for f in obj.fields}
    found: list[ObjectRelationship] = []
    for rel in obj.relationships or ():
        table_name = qualify(rel.remote_table)
        problem = _relationship_problem(obj.name, rel, fields, tables.get(table_name))
        if problem is not None:
            return problem, f"{obj.name}.{rel.name}"
        mapping = tuple(rel.field_mapping.items())
        found.append(ObjectRelationship(rel.name, rel.type, table_name, mapping))
    out[obj.name] = tuple(found)
    return None


def _relationship_problem(
    obj: str, rel: TypeRelationship, fields: dict[str, str], table: Table | None
) -> str | None:
    """Why relationship `rel` of object type `obj` (field name → type text) does not
    resolve against its `table` (None: not tracked), in the reference's words."""
    where = f'for relationship "{rel.name}" in object type "{obj}"'
    if table is None:
        return f'the remote table "{qualify(rel.remote_table)}" {where} does not exist'
    if rel.name in fields:
        return f'the relationship "{rel.name}" of object type "{obj}" conflicts with a field'
    for field_name, column in rel.field_mapping.items():
        type_text = fields.get(field_name)
        if type_text is None:
            return f'the field "{field_name}" {where} does not exist'
        node = parse_gql_type(type_text)
        if node is not None and is_list(node):
            return f'the type of the field "{field_name}" {where} is a list type'
        if table.column(column) is None:
            return f'the column "{column}" of table "{table.name}" {where} does not exist'
    return None


def _resolve_action(
    action: Action,
    kinds: dict[str, str],
    objects: dict[str, ObjectType],
    relationships: dict[str, tuple[ObjectRelationship, ...]],
    pg: Collection[str],
) -> tuple[TypeNode | None, str]:
    """The parsed output type, or None and the reason the action does not resolve."""
    d = action.definition
    for arg in d.args:
        node = parse_gql_type(arg.type)
        base = base_name(node) if node is not None else arg.type
        if node is None or not _known(base, ("scalar", "enum", "input_object"), kinds, pg):
            return None, (
                f'the type: "{base}" is not defined in custom types or it is not a '
                "scalar/enum/input_object"
            )
    if not isinstance(d.output_type, str):
        return None, "the action has no output_type"
    output = parse_gql_type(d.output_type)
    base = base_name(output) if output is not None else d.output_type
    if output is None or not _known(base, ("scalar", "enum", "object"), kinds, pg):
        return None, f'the type: "{base}" is not an object or scalar type defined in custom types'
    if d.asynchronous and relationships.get(base):
        fields = objects[base].fields
        nested = [f.name for f in fields if kinds.get(_field_base(f.type)) == "object"]
        if nested:
            return None, (
                "Async action relations cannot be used with object fields : "
                + ", ".join(f'"{n}"' for n in nested)
            )
    return output, ""


def _field_base(text: str) -> str:
    node = parse_gql_type(text)
    return base_name(node) if node is not None else text
