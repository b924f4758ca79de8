"""Action root fields and custom types in a role's schema (spec 2.2, 2.3, 4.3).

`ActionTypes(builder).fields(operation)` gives the root fields of the actions the role's
view lets it call (`RoleView.actions`): `type: query` actions on `query_root`, the others
on `mutation_root`; an asynchronous action's mutation answers `uuid!` and adds the query
`<action>(id: uuid!): <action>` (`id`, `created_at`, `errors`, `output`). Custom types
enter a role's schema only through the actions it sees (as in the reference). A custom
object's relationship is a field of the target table's object type (a list with the
select arguments for `array`, plus `<name>_aggregate` when the role may aggregate),
shown only when the role may select that table.

Each action root field carries `FieldInfo("action")` in `extensions["svc"]` and the
`ResolvedAction` in `extensions["action"]`; a relationship field of a custom object
`FieldInfo("action_rel"|"action_agg", table=…)` and its `ObjectRelationship` in
`extensions["action_rel"]` (`svc.api.actions` reads them).
"""

from __future__ import annotations

from typing import Any

from graphql import (
    GraphQLField,
    GraphQLID,
    GraphQLScalarType,
    ListTypeNode,
    NonNullTypeNode,
    TypeNode,
)

from svc.ir.actions import ObjectRelationship, ResolvedAction, base_name, parse_gql_type
from svc.metadata.action_model import CustomTypes, ObjectType
from svc.schema.info import FieldInfo, FieldKind

ASYNC_FIELDS = ("id", "created_at", "errors", "output")


class ActionTypes:
    """Builds the action part of one role's schema with the table builder `b`
    (`svc.schema.build.SchemaBuilder`: memoised types, scalars, table object types)."""

    def __init__(self, b: Any) -> None:
        self.b = b
        self.t = b.t
        resolved = b.ir.actions
        self.types: CustomTypes = resolved.types if resolved is not None else CustomTypes()
        self.kinds = self.types.type_names()
        self.objects = resolved.objects if resolved is not None else {}
        self.relationships = resolved.relationships if resolved is not None else {}
        self.inputs = {i.name: i for i in self.types.input_objects or ()}
        self.enums = {e.name: e for e in self.types.enums or ()}

    def fields(self, operation: str) -> dict[str, GraphQLField]:
        """Root fields of `operation` (`query`/`mutation`) for the role's actions."""
        out: dict[str, GraphQLField] = {}
        for resolved in self.b.view.actions():
            d = resolved.action.definition
            if operation == "query" and d.asynchronous:
                out[resolved.name] = self._async_query(resolved)
            if d.operation != operation:
                continue
            args = {
                a.name: self.t.argument(self.type_of(parse_gql_type(a.type)), a.description or None)
                for a in d.args
            }
            output = (
                self.b.nn(self.b.scalar("uuid"))
                if d.asynchronous
                else self.type_of(resolved.output)
            )
            extensions = {"svc": FieldInfo(FieldKind.ACTION), "action": resolved}
            out[resolved.name] = self.t.field(
                output, args, resolved.action.comment or None, extensions
            )
        return out

    def _async_query(self, resolved: ResolvedAction) -> GraphQLField:
        """`<action>(id: uuid!): <action>`: a stored call and its result."""
        b = self.b
        name = resolved.name

        def fields() -> dict[str, GraphQLField]:
            return {
                "id": self.t.field(b.nn(b.scalar("uuid"))),
                "created_at": self.t.field(b.nn(b.scalar("timestamptz"))),
                "errors": self.t.field(b.scalar("json")),
                "output": self.t.field(self.type_of(resolved.output, nullable=True)),
            }

        obj = b._memo(name, lambda: self.t.object_type(name, fields, None))
        args = {"id": self.t.argument(b.nn(b.scalar("uuid")))}
        extensions = {"svc": FieldInfo(FieldKind.ACTION_RESULT), "action": resolved}
        found: GraphQLField = self.t.field(obj, args, None, extensions)
        return found

    # -- types ------------------------------------------------------------------------
    def type_of(self, node: TypeNode | None, *, nullable: bool = False) -> Any:
        """The graphql-core type of a parsed type (`nullable`: drop an outer `!`)."""
        assert node is not None  # resolved types parse (svc.ir.actions)
        if isinstance(node, NonNullTypeNode):
            inner = self.type_of(node.type)
            return inner if nullable else self.b.nn(inner)
        if isinstance(node, ListTypeNode):
            return self.t.list_of(self.type_of(node.type))
        return self.named(base_name(node))

    def named(self, name: str) -> Any:
        """The named type `name`: a built-in or Postgres scalar, or a custom type."""
        if name == "ID":
            return GraphQLID
        kind = self.kinds.get(name)
        if kind == "object":
            return self.b._memo(name, lambda: self._object(self.objects[name]))
        if kind == "input_object":
            item = self.inputs[name]
            return self.b._memo(
                name,
                lambda: self.t.input_type(
                    name,
                    lambda: {
                        f.name: self.t.input_field(self.type_of(parse_gql_type(f.type)))
                        for f in item.fields
                    },
                    item.description or None,
                ),
            )
        if kind == "enum":
            enum = self.enums[name]
            values = {
                v.value: self.t.enum_value(v.value, v.description or None) for v in enum.values
            }
            return self.b._memo(
                name, lambda: self.t.enum_type(name, values, enum.description or None)
            )
        found: GraphQLScalarType = self.b.scalar(name)
        return found

    def _object(self, obj: ObjectType) -> Any:
        return self.t.object_type(
            obj.name, lambda: self._object_fields(obj), obj.description or None
        )

    def _object_fields(self, obj: ObjectType) -> dict[str, GraphQLField]:
        out = {
            f.name: self.t.field(self.type_of(parse_gql_type(f.type)), None, f.description or None)
            for f in obj.fields
        }
        for rel in self.relationships.get(obj.name, ()):
            out.update(self._relationship(rel))
        return out

    def _relationship(self, rel: ObjectRelationship) -> dict[str, GraphQLField]:
        """The fields of one relationship, when the role may select its table."""
        b = self.b
        table = b.tables.get(rel.table)
        if table is None:
            return {}
        if rel.kind == "object":
            ext = {"svc": FieldInfo(FieldKind.ACTION_REL, table=table), "action_rel": rel}
            return {rel.name: self.t.field(b.object_type(table), None, None, ext)}
        args = b.select_args(table)
        ext = {"svc": FieldInfo(FieldKind.ACTION_REL, table=table), "action_rel": rel}
        out = {rel.name: self.t.field(b.rows(b.object_type(table)), args, None, ext)}
        if b.aggregations(table):
            agg = {"svc": FieldInfo(FieldKind.ACTION_AGG, table=table), "action_rel": rel}
            out[f"{rel.name}_aggregate"] = self.t.field(
                b.nn(b.aggregate_type(table)), args, None, agg
            )
        return out
