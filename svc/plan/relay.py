"""Plan operations of the Relay API (`/v1beta1/relay`, schemas of `svc.schema.relay`).

`RelayPlanner` is the GraphQL planner plus the Relay fields:

- `node(id:)`: the id is decoded when planning (it names the table, so its value shapes
  the plan: a variable given for it is structural) and becomes a single-row `Select` of
  that table by its primary key, with the role's filter, the fields selected for the
  table's type (fragments on other types ignored). Bad ids are the reference's errors
  (`Hasura/GraphQL/Schema/Relay.hs` `nodeField`, `Hasura/GraphQL/Schema/Node.hs`
  `parseNodeIdV1`): 200 with `validation-failed` at `$.selectionSet.<node>.args.id`, or
  `parse-failed` at `$.selectionSet.<node>` for a key value of the wrong JSON type.
- `<table>_connection`, `<fn>_connection`, `<rel>_connection`: a `Connection` over the
  rows `where`, `order_by` and `distinct_on` select, the primary key appended to the
  order (`tableConnectionArgs` `appendPrimaryKeyOrderBy`; without `order_by`, the
  primary key alone, so pages are stable); `after`/`before` decoded into one value per
  order key, each read as its column's type (`parseConnectionSplit` with
  `parseScalarValueColumnType`: `validation-failed` with aeson's message), `first`/`last`
  as parameters, never negative (`nonNegativeInt`). `first` with `last`, or `after` with
  `before`: `validation-failed` at `$.selectionSet.<field>.args`. Cursors, node ids and
  `first`/`last` are read when planning (structural: a plan per value), since their
  checks answer before execution; a cursor or id over `MAX_ENCODED` characters, or
  nested too deeply for Python's decoder, is refused as invalid.
- `id` of a node type: a `NodeId` of the row's primary key.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from graphql import (
    FieldNode,
    GraphQLObjectType,
    get_named_type,
)
from graphql.execution.collect_fields import collect_sub_fields

from svc.errors import SvcError
from svc.ir.model import Table
from svc.metadata.model import QualifiedName
from svc.plan.build import Planner, plain_leaf
from svc.plan.nested_update import NestedUpdatePlanner
from svc.plan.nodes import (
    And,
    Compare,
    Connection,
    Const,
    EdgeCursor,
    EdgeNode,
    Edges,
    Field,
    FnCall,
    NodeId,
    OrderKey,
    PageInfo,
    Param,
    RelField,
    Rows,
    Select,
    Typename,
)
from svc.schema.info import FieldInfo, FieldKind

PAGE_INFO_FIELDS = frozenset({"startCursor", "endCursor", "hasPreviousPage", "hasNextPage"})
# Postgres types whose node-id values are JSON strings / numbers (the reference parses
# a key value with the column type's JSON parser: `parseScalarValueColumnType`).
TEXT_TYPES = frozenset(
    {
        "text",
        "varchar",
        "bpchar",
        "char",
        "name",
        "citext",
        "uuid",
        "character varying",
        "character",
    }
)
INT_TYPES = {
    "int2": "Int16",
    "smallint": "Int16",
    "int4": "Int32",
    "integer": "Int32",
    "int8": "Int64",
    "bigint": "Int64",
}
NUMBER_TYPES = frozenset({"float4", "float8", "numeric", "real", "double precision"})
BOOL_TYPES = frozenset({"bool", "boolean"})
AGG_TYPES = {"count": "bigint", "max": "", "min": ""}  # "": the column's own type
BASE64_ALPHABET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
# The longest cursor or node id read (characters): a real one is the base64 of a few key
# values; a longer text is refused before it is decoded (the reference's messages).
MAX_ENCODED = 8192
# Bounds of the integer types a key value is read as (aeson's `Int16`/`Int32`/`Int64`).
INT_BOUNDS = {"Int16": 2**15, "Int32": 2**31, "Int64": 2**63}


def lenient_base64(text: str) -> bytes:
    """`text` decoded as base64 leniently, as the reference's `base64Decode`
    (`Data.ByteString.Base64.decodeLenient`): characters outside the alphabet are
    skipped (a trailing newline, say), a missing padding is assumed."""
    kept = "".join(c for c in text.split("=", 1)[0] if c in BASE64_ALPHABET)
    if len(kept) % 4 == 1:
        kept = kept[:-1]
    kept += "=" * (-len(kept) % 4)
    try:
        return base64.b64decode(kept)
    except (binascii.Error, ValueError):
        return b""


def _json_kind(value: Any) -> str:
    """Aeson's name for the JSON type of `value` (its error messages)."""
    if isinstance(value, bool):
        return "Boolean"
    if isinstance(value, int | float):
        return "Number"
    if isinstance(value, str):
        return "String"
    if value is None:
        return "Null"
    return "Array" if isinstance(value, list) else "Object"


def _aeson_decode(data: bytes) -> Any:
    """`data` as JSON; raises `ValueError` with aeson's message (`Error in $: …`), also
    for a document nested too deeply to decode (`RecursionError`)."""
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        shown = data.decode("latin-1")
        raise ValueError(
            f"Error in $: Failed reading: not a valid json value at '{shown}'"
        ) from None


def decode_node_id(text: str) -> tuple[QualifiedName, list[Any]]:
    """The table and key values of a global id (Note [Relay Node Id], version 1);
    raises `ValueError` with the reference's message after `invalid node id: ` (a text
    over `MAX_ENCODED` characters: aeson's message for a value it cannot read)."""
    if len(text) > MAX_ENCODED:
        raise ValueError("Error in $: Failed reading: not a valid json value")
    value = _aeson_decode(lenient_base64(text))
    if not isinstance(value, list):
        raise ValueError(
            f"Error in $: parsing node id failed, expected Array, but encountered "
            f"{_json_kind(value)}"
        )
    if not value:
        raise ValueError("Error in $: unexpected GUID format, found empty list")
    version = value[0]
    if isinstance(version, bool) or not isinstance(version, int | float):
        raise ValueError("Error in $: unexpected GUID format, needs to start with a version number")
    if version != 1:
        raise ValueError(f"Error in $: unsupported GUID version: {float(version)}")
    rest = value[1:]
    if len(rest) < 3:
        raise ValueError(
            "Error in $: GUID version 1: expecting schema name, table name and at least "
            "one column value"
        )
    schema, name = rest[0], rest[1]
    for part in (schema, name):
        if not isinstance(part, str):
            raise ValueError(
                f"Error in $: parsing Text failed, expected String, but encountered "
                f"{_json_kind(part)}"
            )
    return QualifiedName(name, schema), rest[2:]


def _node_value(value: Any, pg_type: str) -> Any:
    """A key value (of a node id or a cursor) read as the column's type, as the
    reference's `parseScalarValueColumnType` does with aeson: a string for a text type,
    a number for a numeric type, an integer in range for an integer type. Raises
    `ValueError` with aeson's message otherwise."""
    base = pg_type.rsplit(".", 1)[-1]
    if base in TEXT_TYPES and not isinstance(value, str):
        raise ValueError(
            f"parsing Text failed, expected String, but encountered {_json_kind(value)}"
        )
    number = INT_TYPES.get(base) or ("Scientific" if base in NUMBER_TYPES else None)
    if number and (isinstance(value, bool) or not isinstance(value, int | float)):
        raise ValueError(
            f"parsing {number} failed, expected Number, but encountered {_json_kind(value)}"
        )
    bound = INT_BOUNDS.get(number or "")
    if bound is not None:
        if isinstance(value, float) and not value.is_integer():
            raise ValueError(f"parsing {number} failed, unexpected floating number {value}")
        if not -bound <= value < bound:
            raise ValueError(
                f"parsing {number} failed, value is either floating or will cause over or "
                f"underflow {value}"
            )
        return int(value)
    if base in BOOL_TYPES and not isinstance(value, bool):
        raise ValueError(
            f"parsing Bool failed, expected Boolean, but encountered {_json_kind(value)}"
        )
    return value


class RelayPlanner(Planner):
    """The GraphQL planner with the Relay fields (module docstring)."""

    # -- roots --------------------------------------------------------------------------
    def _root(self, info: FieldInfo, field: Any, nodes: list[FieldNode]) -> Any:
        alias = (nodes[0].alias or nodes[0].name).value
        if info.kind == FieldKind.NODE:
            return self._node(field, nodes, alias)
        if info.kind in (FieldKind.SELECT_CONNECTION, FieldKind.FUNCTION_CONNECTION):
            table = info.table
            assert table is not None
            args = self._args(field, nodes[0])
            call = None
            if info.function is not None:
                fn = info.function
                call = self.call(fn.name, fn.args, fn.arg_order, args.get("args"))
            return self.connection(table, field, nodes, args, call, alias)
        return super()._root(info, field, nodes)

    def _node(self, field: Any, nodes: list[FieldNode], alias: str) -> Select:
        path = f"$.selectionSet.{alias}"
        given = self.reader.concrete(self._args(field, nodes[0]).get("id"))
        try:
            name, values = decode_node_id(str(given))
        except ValueError as error:
            raise SvcError(
                "validation-failed", f"invalid node id: {error}", path=f"{path}.args.id"
            ) from None
        table = self._node_table(name)
        if table is None:
            raise SvcError(
                "validation-failed",
                f"invalid node id: no such table found: {name.quoted()}",
                path=f"{path}.args.id",
            )
        keys = table.primary_key
        if len(values) < len(keys):
            missing = ", ".join(f'"{c}"' for c in keys[len(values) :])
            raise SvcError(
                "validation-failed",
                f"invalid node id: primary key columns {missing} are missing",
                path=f"{path}.args.id",
            )
        if len(values) > len(keys):
            extra = json.dumps(values[len(keys) :], separators=(",", ":"))
            raise SvcError(
                "validation-failed",
                f"invalid node id: unexpected column values {extra}",
                path=f"{path}.args.id",
            )
        items = []
        for column, value in zip(keys, values, strict=True):
            pg_type = table.column_map[column].pg_type
            try:
                parsed = _node_value(value, pg_type)
            except ValueError as error:
                raise SvcError(
                    "parse-failed", f'value of column "{column}" in node id: {error}', path=path
                ) from None
            items.append(Compare(column, "_eq", Param(Const(parsed), pg_type)))
        rows = Rows(table.name, self._restricted(table, And(tuple(items))))
        obj = self.schema.get_type(table.type_name())
        assert isinstance(obj, GraphQLObjectType)
        return Select(rows, self._fields_of(table, obj, nodes), single=True)

    def _node_table(self, name: QualifiedName) -> Table | None:
        """The table of a node id when the role sees it as a `Node` type (one lookup in
        the role's view, not a list of its tables)."""
        table = self.tables.get(name)
        if table is None or not table.primary_key or not table.gql_name:
            return None
        return table if self.view.selectable(name) else None

    # -- connections --------------------------------------------------------------------
    def connection(
        self,
        table: Table,
        field: Any,
        nodes: list[FieldNode],
        args: dict[str, Any],
        function: FnCall | None,
        alias: str,
    ) -> Connection:
        """The `Connection` of a connection field with its arguments read (module
        docstring). Raises `validation-failed` for `first` with `last`, `after` with
        `before`, or a cursor that does not fit the order."""
        path = f"$.selectionSet.{alias}.args"
        # `first`/`last` by variable are read here (structural: a plan per page size) so
        # a negative one is refused before Postgres sees it (the reference's
        # `nonNegativeInt`); `after`/`before` likewise (module docstring: a plan per
        # cursor, since a cursor's values are checked against the order's column types
        # and decoded from base64 when planning; README "Relay API", "Not yet").
        first = self.reader.concrete(args.get("first"))
        last = self.reader.concrete(args.get("last"))
        if first is not None and last is not None:
            raise SvcError(
                "validation-failed", '"first" and "last" are not allowed at once', path=path
            )
        after = self.reader.concrete(args.get("after"))
        before = self.reader.concrete(args.get("before"))
        if after is not None and before is not None:
            raise SvcError(
                "validation-failed", '"after" and "before" are not allowed at once', path=path
            )
        rows = self._rows(table, {k: args.get(k) for k in ("where", "distinct_on")}, function)
        keys = list(self._order_by(table, args.get("order_by")))
        paths = self._cursor_paths(table, args.get("order_by"))
        assert len(paths) == len(keys)
        if not keys:  # `DISTINCT ON` needs its columns first in the order
            for column in self.reader.concrete(args.get("distinct_on")) or ():
                keys.append(OrderKey((), self.redact(table, column), False, False))
                paths.append(((column,), table.column_map[column].pg_type))
        ordered = {plain_leaf(k.leaf) for k in keys if not k.path}
        for column in table.primary_key:
            if column not in ordered:
                keys.append(OrderKey((), self.redact(table, column), False, False))
                paths.append(((column,), table.column_map[column].pg_type))
        rows = Rows(
            rows.table,
            rows.where,
            tuple(keys),
            None,
            None,
            rows.distinct_on,
            rows.limit_cap,
            rows.function,
        )
        cursor = after if after is not None else before
        split: tuple[Param, ...] = ()
        if cursor is not None:
            split = self._split(str(cursor), paths, path)
        return Connection(
            rows,
            tuple(p for p, _ in paths),
            self._connection_fields(table, field, nodes),
            split,
            before is not None,
            self._window(first, "first"),
            self._window(last, "last"),
        )

    def _split(
        self, cursor: str, paths: list[tuple[tuple[str, ...], str]], path: str
    ) -> tuple[Param, ...]:
        """The cursor's value per order key; `validation-failed` when it is not a JSON
        object holding every key path (the reference's `throwInvalidCursor`; also for a
        cursor over `MAX_ENCODED` characters or nested too deeply to decode) or when a
        value does not parse as its column's type (`parseScalarValueColumnType`'s
        message, as `parseConnectionSplit` reports it)."""
        invalid = SvcError(
            "validation-failed", 'the "after" or "before" cursor is invalid', path=path
        )
        if len(cursor) > MAX_ENCODED:
            raise invalid
        try:
            value = json.loads(lenient_base64(cursor).decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
            raise invalid from None
        out: list[Param] = []
        for steps, pg_type in paths:
            found = value
            for step in steps:
                if not isinstance(found, dict) or step not in found:
                    raise invalid
                found = found[step]
            if isinstance(found, dict | list) and pg_type not in ("json", "jsonb"):
                raise invalid
            if found is not None:
                try:
                    found = _node_value(found, pg_type)
                except ValueError as error:
                    raise SvcError("validation-failed", str(error), path=path) from None
            out.append(Param(Const(found), pg_type))
        return tuple(out)

    def _cursor_paths(self, table: Table, value: Any) -> list[tuple[tuple[str, ...], str]]:
        """Per order key `_order_by` makes of `value`, in the same order: its path in the
        cursor object (Postgres names: columns, relationships, `<rel>_aggregate`,
        operators; the reference's `getPathFromOrderBy`) and the type of its value."""
        value = self.reader.concrete(value)
        if value is None:
            return []
        if isinstance(value, dict):
            value = [value]
        out: list[tuple[tuple[str, ...], str]] = []
        for item in value:
            out += self._item_paths(table, self.reader.concrete(item) or {}, ())
        return out

    def _item_paths(
        self, table: Table, item: dict[str, Any], prefix: tuple[str, ...]
    ) -> list[tuple[tuple[str, ...], str]]:
        out: list[tuple[tuple[str, ...], str]] = []
        by_gql = {c.gql_name: c for c in table.columns}
        for key, sub in item.items():
            sub = self.reader.concrete(sub)
            if sub is None:
                continue
            if key in by_gql:
                out.append(((*prefix, by_gql[key].name), by_gql[key].pg_type))
            elif key in table.computed_field_map:
                out.append(((*prefix, key), table.computed_field_map[key].pg_type or "text"))
            elif (
                key.endswith("_aggregate") and key[: -len("_aggregate")] in table.computed_field_map
            ):
                cf = table.computed_field_map[key[: -len("_aggregate")]]
                assert cf.returns_table is not None
                out += self._agg_paths(self.tables[cf.returns_table], (*prefix, key), sub)
            elif key in table.relationship_map:
                target = self._target(table.relationship_map[key])
                out += self._item_paths(target, sub, (*prefix, key))
            elif key.endswith("_aggregate") and key[: -len("_aggregate")] in table.relationship_map:
                target = self._target(table.relationship_map[key[: -len("_aggregate")]])
                out += self._agg_paths(target, (*prefix, key), sub)
        return out

    def _agg_paths(
        self, target: Table, prefix: tuple[str, ...], sub: dict[str, Any]
    ) -> list[tuple[tuple[str, ...], str]]:
        out: list[tuple[tuple[str, ...], str]] = []
        for op, cols in sub.items():
            cols = self.reader.concrete(cols)
            if cols is None:
                continue
            if op == "count":
                out.append(((*prefix, "count"), "bigint"))
                continue
            tcols = {c.gql_name: c for c in target.columns}
            for col_name, direction in (cols or {}).items():
                if self.reader.concrete(direction) is None:
                    continue
                column = tcols[col_name]
                pg_type = column.pg_type if op in ("max", "min") else "numeric"
                out.append(((*prefix, op, column.name), pg_type))
        return out

    def _connection_fields(
        self, table: Table, field: Any, nodes: list[FieldNode]
    ) -> tuple[tuple[str, Edges | PageInfo | Typename], ...]:
        conn_type = get_named_type(field.type)
        out: list[tuple[str, Edges | PageInfo | Typename]] = []
        for alias, sub_nodes in self._sub(field, nodes).items():
            name = sub_nodes[0].name.value
            if name == "__typename":
                out.append((alias, Typename(conn_type.name)))
            elif name == "pageInfo":
                sub = conn_type.fields[name]
                items: list[tuple[str, str | Typename]] = []
                for item_alias, item_nodes in self._sub(sub, sub_nodes).items():
                    item = item_nodes[0].name.value
                    if item == "__typename":
                        items.append((item_alias, Typename("PageInfo")))
                    elif item in PAGE_INFO_FIELDS:
                        items.append((item_alias, item))
                out.append((alias, PageInfo(tuple(items))))
            else:
                out.append((alias, self._edges(table, conn_type.fields[name], sub_nodes)))
        return tuple(out)

    def _edges(self, table: Table, field: Any, nodes: list[FieldNode]) -> Edges:
        edge_type = get_named_type(field.type)
        items: list[tuple[str, EdgeCursor | EdgeNode | Typename]] = []
        for alias, sub_nodes in self._sub(field, nodes).items():
            name = sub_nodes[0].name.value
            if name == "__typename":
                items.append((alias, Typename(edge_type.name)))
            elif name == "cursor":
                items.append((alias, EdgeCursor()))
            else:
                obj = get_named_type(edge_type.fields[name].type)
                items.append((alias, EdgeNode(self._fields_of(table, obj, sub_nodes))))
        return Edges(tuple(items))

    # -- selections ---------------------------------------------------------------------
    def _fields(
        self, table: Table, field: Any, nodes: list[FieldNode]
    ) -> tuple[tuple[str, Field], ...]:
        return self._fields_of(table, get_named_type(field.type), nodes)

    def _fields_of(
        self, table: Table, obj_type: Any, nodes: list[FieldNode]
    ) -> tuple[tuple[str, Field], ...]:
        """The fields selected on `obj_type` (the table's object type: a `node` field's
        fragments on other types are ignored)."""
        selected = collect_sub_fields(self.schema, self.fragments, self.variables, obj_type, nodes)
        out: list[tuple[str, Field]] = []
        for alias, sub_nodes in selected.items():
            name = sub_nodes[0].name.value
            if name == "__typename":
                out.append((alias, Typename(obj_type.name)))
                continue
            sub_field = obj_type.fields[name]
            info: FieldInfo = sub_field.extensions["svc"]
            if info.kind == FieldKind.NODE_ID:
                out.append((alias, NodeId(table.name, table.primary_key)))
            elif info.kind == FieldKind.ARRAY_CONNECTION:
                target, rel = info.table, info.relationship
                assert target is not None and rel is not None
                args = self._args(sub_field, sub_nodes[0])
                conn = self.connection(target, sub_field, sub_nodes, args, None, alias)
                out.append((alias, RelField(rel.mapping, conn)))
            else:
                f = self._field(info, sub_field, sub_nodes)
                out.append((alias, self._cased(table, info, f)))
        return tuple(out)


class RelayMutationPlanner(RelayPlanner, NestedUpdatePlanner):
    """Mutations of the Relay schema: the mutation planner (nested updates included),
    whose `returning` and `<table>_by_pk` rows select Relay fields (`id`,
    `<rel>_connection`)."""
