"""The Relay API's schema (`/v1beta1/relay`): one per role, built from the same `RoleView`
as the role's GraphQL schema, with the reference's Relay shape
(`Hasura/GraphQL/Schema/Relay.hs` `nodeInterface`/`nodeField`,
`Hasura/GraphQL/Schema/Select.hs` `selectTableConnection`, `tableConnectionArgs`,
`tableConnectionSelectionSet`):

- the interface `Node { id: ID! }`, implemented by the object type of every table with a
  primary key; its `id` field is the row's global id (`svc.plan.relay`), in place of a
  column named `id`;
- query root: `node(id: ID!): Node`, `<table>_connection` (the table's custom name or
  name) per table with a primary key the role may select from the query root,
  `<function>_connection` per tracked function returning a set of such a table; no other
  root field;
- subscription root: the same for the role's subscription root fields
  (`buildRelayQueryAndSubscriptionFields`); mutation root: the GraphQL schema's mutations
  (their rows of the Relay types), without actions;
- `<type>Connection { edges: [<type>Edge!]!, pageInfo: PageInfo! }`,
  `<type>Edge { cursor: String!, node: <type>! }`, `PageInfo { endCursor: String!,
  hasNextPage: Boolean!, hasPreviousPage: Boolean!, startCursor: String! }`;
- connection arguments `after`, `before`, `distinct_on`, `first`, `last`, `order_by`,
  `where` (a function's `args` first);
- array relationships: the list field, `<rel>_aggregate` and, onto a table with a
  primary key, `<rel>_connection`; object relationships as in the GraphQL schema.

The schema carries `extensions[RELAY_KEY] = True`, which makes the planner plan it with
`svc.plan.relay`. Built with graphql-core's own constructors (`CheckedTypes`): object
types implement an interface here, which the unchecked constructors do not set up.
"""

from __future__ import annotations

import sys

from graphql import (
    GraphQLArgument,
    GraphQLBoolean,
    GraphQLField,
    GraphQLID,
    GraphQLInt,
    GraphQLInterfaceType,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLSchema,
    GraphQLString,
)

from svc.gc_pause import gc_paused
from svc.ir.model import Function, Ir, Table
from svc.ir.role_view import RoleView
from svc.naming import field_case
from svc.schema.build import RECURSION_LIMIT, VIEW_KEY, SchemaBuilder
from svc.schema.directives import DIRECTIVES
from svc.schema.info import FieldKind
from svc.schema.info import info as _info
from svc.schema.mutations import MutationTypes
from svc.schema.naming import apply_naming
from svc.schema.types import CheckedTypes, Fields

# The schema extension marking a Relay schema (`is_relay_schema`).
RELAY_KEY = "svc_relay"
NODE_ID = _info(FieldKind.NODE_ID)


class RelayTypes(CheckedTypes):
    """graphql-core's constructors; the object types named in `nodes` implement `Node`."""

    def __init__(self, node: GraphQLInterfaceType) -> None:
        super().__init__()
        self.node = node
        self.nodes: set[str] = set()

    def object_type(
        self, name: str, fields: Fields, description: str | None = None
    ) -> GraphQLObjectType:
        """An object type, implementing `Node` when its name is in `nodes`."""
        interfaces = [self.node] if name in self.nodes else None
        return GraphQLObjectType(name, fields, interfaces, description=description)

    def relay_schema(
        self,
        query: GraphQLObjectType,
        mutation: GraphQLObjectType | None,
        subscription: GraphQLObjectType | None,
    ) -> GraphQLSchema:
        """The schema, the `Node` interface listed so it exists without a `node` field."""
        return GraphQLSchema(
            query, mutation, subscription, types=[self.node], directives=DIRECTIVES
        )


def node_interface() -> GraphQLInterfaceType:
    """`interface Node { id: ID! }` (the reference's `nodeInterface` descriptions)."""
    return GraphQLInterfaceType(
        "Node",
        {"id": GraphQLField(GraphQLNonNull(GraphQLID), description="A globally unique identifier")},
        description="An object with globally unique ID",
    )


class RelaySchemaBuilder(SchemaBuilder):
    """`SchemaBuilder` with the Relay shape (module docstring)."""

    def __init__(self, ir: Ir, view: RoleView) -> None:
        self.node = node_interface()
        self.relay_types = RelayTypes(self.node)
        # No grouped aggregates (`x_groups`, `<rel>_groups`): the reference's Relay schema
        # has no aggregates of its own kind to group (README "Grouped aggregates").
        super().__init__(
            ir, view.role, view=view, types=self.relay_types, streaming=False, groups=False
        )
        for table in self.tables.values():
            if table.primary_key and table.gql_name:
                self.relay_types.nodes.add(table.type_name())
        t = self.t
        self._page_info: GraphQLObjectType | None = None
        self._pagination = {
            "after": t.argument(GraphQLString),
            "before": t.argument(GraphQLString),
            "first": t.argument(GraphQLInt),
            "last": t.argument(GraphQLInt),
        }

    # -- object types -------------------------------------------------------------------
    def _object_fields(self, table: Table) -> dict[str, GraphQLField]:
        fields = super()._object_fields(table)
        if table.primary_key:
            fields["id"] = self.t.field(self.nn(GraphQLID), None, None, NODE_ID)
        for rel in table.relationships:
            target = self.tables.get(rel.target)
            if rel.kind == "object" or target is None or not target.gql_name:
                continue
            if target.primary_key:
                fields[f"{rel.name}_connection"] = self.t.field(
                    self.nn(self.connection_type(target)),
                    self.connection_args(target),
                    rel.comment or "An array relationship connection",
                    _info(FieldKind.ARRAY_CONNECTION, table=target, relationship=rel),
                )
        return dict(sorted(fields.items()))

    def page_info(self) -> GraphQLObjectType:
        """`PageInfo` (one per schema)."""
        if self._page_info is None:
            t = self.t
            self._page_info = t.object_type(
                "PageInfo",
                {
                    "endCursor": t.field(self.nn(GraphQLString)),
                    "hasNextPage": t.field(self.nn(GraphQLBoolean)),
                    "hasPreviousPage": t.field(self.nn(GraphQLBoolean)),
                    "startCursor": t.field(self.nn(GraphQLString)),
                },
            )
        return self._page_info

    def connection_type(self, table: Table) -> GraphQLObjectType:
        """`<type>Connection { edges, pageInfo }` and its `<type>Edge { cursor, node }`."""
        name = table.type_name("Connection")

        def make() -> GraphQLObjectType:
            t = self.t
            edge = t.object_type(
                table.type_name("Edge"),
                lambda: {
                    "cursor": t.field(self.nn(GraphQLString)),
                    "node": t.field(self.nn(self.object_type(table))),
                },
            )
            return t.object_type(
                name,
                lambda: {
                    "edges": t.field(self.rows(edge)),
                    "pageInfo": t.field(self.nn(self.page_info())),
                },
                f'A Relay connection object on "{table.name}"',
            )

        return self._memo(name, make)  # type: ignore[no-any-return]

    def connection_args(self, table: Table) -> dict[str, GraphQLArgument]:
        """`after`, `before`, `distinct_on`, `first`, `last`, `order_by`, `where`."""
        plain = self.select_args(table)
        out = {**self._pagination, **plain}
        out.pop("limit", None)
        out.pop("offset", None)
        return dict(sorted(out.items()))

    # -- roots --------------------------------------------------------------------------
    def relay_roots(self, roots: str = "query") -> dict[str, GraphQLField]:
        """The root fields of `roots` (`query` or `subscription`): `<table>_connection`
        per table the role may select with that root kind (`RoleView` `query_roots` /
        `subscription_roots`: the reference's `QRFTSelect` / `SRFTSelect` in
        `buildRelayQueryAndSubscriptionFields`), `<fn>_connection` per function and
        `node` in both. The connection's name is the table's identifier (custom name
        or name, `getTableIdentifierName`) then `_connection`
        (`mkRelayConnectionField`), whatever its custom select root field."""
        t = self.t
        fields: dict[str, GraphQLField] = {}
        for table in sorted(self.tables.values(), key=lambda x: x.gql_name):
            access = self.view.table(table.name)
            allowed = access.query_roots if roots == "query" else access.subscription_roots
            if not table.primary_key or "select" not in allowed:
                continue
            name = field_case(table.naming, f"{table.gql_name}_connection")
            fields[name] = t.field(  # `authorConnection` under graphql-default (`svc.naming`)
                self.nn(self.connection_type(table)),
                self.connection_args(table),
                f'fetch data from the table: "{table.name}"',
                _info(FieldKind.SELECT_CONNECTION, table=table),
            )
        for fn in self.functions("query"):
            target = self.tables[fn.returns]
            if fn.returns_set and target.primary_key:
                fields[fn.root_name("_connection")] = self._function_connection(fn, target)
        if self.relay_types.nodes:
            fields["node"] = t.field(
                self.node,
                {"id": t.argument(self.nn(GraphQLID), "A globally unique id")},
                None,
                _info(FieldKind.NODE),
            )
        return fields

    def _function_connection(self, fn: Function, table: Table) -> GraphQLField:
        args = self._args_argument(fn.type_name("_args"), fn.args)
        return self.t.field(
            self.nn(self.connection_type(table)),
            {**args, **self.connection_args(table)},
            fn.comment or f'execute function "{fn.name}" which returns "{table.name}"',
            _info(FieldKind.FUNCTION_CONNECTION, function=fn, table=table),
        )

    def relay_mutations(self) -> dict[str, GraphQLField]:
        """The mutation root fields of the GraphQL schema (the role's writes, functions
        exposed as mutations), their `returning` rows of the Relay types; no actions."""
        types = MutationTypes(self)
        fields: dict[str, GraphQLField] = {}
        tables = [t for t in self.ir.tables.values() if t.gql_name]
        for table in sorted(tables, key=lambda t: t.gql_name):
            fields.update(types.fields(table))
        fields.update(self.function_fields("mutation"))
        return fields

    def build_relay(self) -> GraphQLSchema:
        """The finished Relay schema: `query_root` and `subscription_root`."""
        sys.setrecursionlimit(max(sys.getrecursionlimit(), RECURSION_LIMIT))
        t = self.relay_types
        roots = self.relay_roots("query") or {
            "no_queries_available": self.t.field(self.nn(GraphQLString))
        }
        query = t.object_type("query_root", roots)
        subscriptions = self.relay_roots("subscription")
        subscription = t.object_type("subscription_root", subscriptions) if subscriptions else None
        mf = self.relay_mutations()
        mutation = t.object_type("mutation_root", mf) if mf else None
        schema = t.relay_schema(query, mutation, subscription)
        schema.extensions[VIEW_KEY] = self.view
        schema.extensions[RELAY_KEY] = True
        return schema


def build_relay_schema(ir: Ir, view: RoleView) -> GraphQLSchema:
    """The Relay schema of `view.role` (module docstring): what the role's `RoleView`
    allows, in the Relay shape. The planner finds the view with `schema_view` and knows
    the schema by `is_relay_schema`."""
    with gc_paused(file_away=True):
        return apply_naming(RelaySchemaBuilder(ir, view).build_relay(), ir)  # `svc.naming`


def is_relay_schema(schema: GraphQLSchema) -> bool:
    """Whether `schema` was made by `build_relay_schema`."""
    return bool(schema.extensions.get(RELAY_KEY))
