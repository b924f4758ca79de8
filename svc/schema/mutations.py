"""Mutation types and root fields (reference notes, "Generated GraphQL names"):
`insert_x`, `insert_x_one`, `update_x`, `update_x_by_pk`, `update_x_many`, `delete_x`,
`delete_x_by_pk`, with `x_insert_input`, `x_obj_rel_insert_input`,
`x_arr_rel_insert_input`, `x_on_conflict`, `x_constraint`, `x_update_column`,
`x_set_input`, `x_inc_input`, jsonb operator inputs, `x_pk_columns_input`, `x_updates`
and `x_mutation_response`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from graphql import (
    GraphQLArgument,
    GraphQLEnumType,
    GraphQLField,
    GraphQLInputField,
    GraphQLInputObjectType,
    GraphQLInt,
    GraphQLObjectType,
    GraphQLString,
)

from svc.ir.model import Column, Table
from svc.schema.info import AFFECTED_ROWS, RETURNING, FieldKind
from svc.schema.info import info as _info
from svc.schema.nested_updates import NESTED_ARG, NestedUpdateTypes

if TYPE_CHECKING:
    from svc.schema.build import SchemaBuilder

JSONB_UPDATE_OPS = ("_append", "_prepend", "_delete_key", "_delete_elem", "_delete_at_path")
# The reference's descriptions of the generated input types (`{table}`: the table's name).
INPUT_DESCRIPTIONS = {
    "set_input": 'input type for updating data in table "{table}"',
    "inc_input": 'input type for incrementing numeric columns in table "{table}"',
    "append_input": "append existing jsonb value of filtered columns with new jsonb value",
    "prepend_input": "prepend existing jsonb value of filtered columns with new jsonb value",
    "delete_key_input": "delete key/value pair or string element. key/value pairs are "
    "matched based on their key value",
    "delete_elem_input": "delete the array element with specified index (negative integers "
    "count from the end). throws an error if top level container is not an array",
    "delete_at_path_input": "delete the field or element with specified path (for JSON "
    "arrays, negative integers count from the end)",
}
UPDATE_WHERE = "filter the rows which have to be updated"
SET_ARG = "sets the columns of the filtered rows to the given values"
UPDATES_ARG = "updates to execute, in order"
DELETE_WHERE = "filter the rows which have to be deleted"


class MutationTypes:
    """Builds mutation types for one `SchemaBuilder` (shares its memo, scalars and
    factory)."""

    def __init__(self, b: SchemaBuilder) -> None:
        self.b = b
        self.t = b.t
        self.view = b.view

    # -- what the role may write (`RoleView`: Hasura's rules) -----------------------------
    def insert_cols(self, table: Table) -> tuple[Column, ...] | None:
        """Columns the role may give on insert (presets excluded); None: no insert."""
        return self.view.table(table.name).insert_columns

    def update_cols(self, table: Table) -> tuple[Column, ...] | None:
        """Columns the role may set on update (presets excluded); None: no update. Updates
        need a select permission too (their `where` reads the table)."""
        return self.view.table(table.name).update_columns

    def can_delete(self, table: Table) -> bool:
        """Whether the role may delete (which needs a select permission too)."""
        return self.view.table(table.name).can_delete

    def can_select(self, table: Table) -> bool:
        """Whether the role may read rows back (`returning`, `_one`, `_by_pk`)."""
        return self.view.table(table.name).selectable

    def pk_visible(self, table: Table) -> bool:
        """Whether every primary key column is selectable (needed by `_by_pk` fields)."""
        return self.view.table(table.name).pk_visible

    # -- input types ----------------------------------------------------------------------
    def _input(
        self, name: str, fields: Callable[[], dict[str, Any]], description: str | None = None
    ) -> GraphQLInputObjectType:
        """The input type `name`, its fields computed now on first use (not a thunk)."""
        return self.b._memo(  # type: ignore[no-any-return]
            name, lambda: self.t.input_type(name, fields(), description)
        )

    def insert_input(self, table: Table) -> GraphQLInputObjectType:
        """`x_insert_input`: every column, plus relationship inserts (a thunk: relationships
        may form cycles)."""
        name = table.type_name("_insert_input")
        return self.b._memo(  # type: ignore[no-any-return]
            name,
            lambda: self.t.input_type(
                name,
                lambda: self._insert_fields(table),
                f'input type for inserting data into table "{table.name}"',
            ),
        )

    def _insert_fields(self, table: Table) -> dict[str, GraphQLInputField]:
        b = self.b
        cols = self.insert_cols(table) or ()
        f = {c.gql_name: b.input_field(b.column_type(table, c)) for c in cols}
        for rel in table.relationships:
            target = b.ir.tables.get(rel.target)
            if target is None or not target.gql_name or self.insert_cols(target) is None:
                continue
            if rel.to_source:  # a remote relationship is not inserted through
                continue
            if rel.kind == "object":
                f[rel.name] = b.input_field(self.obj_rel_input(target))
            else:
                f[rel.name] = b.input_field(self.arr_rel_input(target))
        return f

    def obj_rel_input(self, table: Table) -> GraphQLInputObjectType:
        """`x_obj_rel_insert_input {data, on_conflict}`."""
        return self._rel_input(table, "obj_rel_insert_input", self.b.nn, "object")

    def arr_rel_input(self, table: Table) -> GraphQLInputObjectType:
        """`x_arr_rel_insert_input {data, on_conflict}`."""
        return self._rel_input(table, "arr_rel_insert_input", self.b.rows, "array")

    def _rel_input(
        self, table: Table, suffix: str, wrap: Callable[[Any], Any], kind: str
    ) -> GraphQLInputObjectType:
        def fields() -> dict[str, GraphQLInputField]:
            out = {"data": self.b.input_field(wrap(self.insert_input(table)))}
            conflict = self.on_conflict(table)
            if conflict is not None:
                out["on_conflict"] = self.b.input_field(conflict)
            return out

        description = f'input type for inserting {kind} relation for remote table "{table.name}"'
        return self._input(table.type_name(f"_{suffix}"), fields, description)

    def on_conflict(self, table: Table) -> GraphQLInputObjectType | None:
        """`x_on_conflict {constraint, update_columns, where}`: only with a unique key, and
        for a role only with an update permission (an upsert updates)."""
        if not table.unique_constraints or self.update_cols(table) is None:
            return None
        b = self.b
        return self._input(
            table.type_name("_on_conflict"),
            lambda: {
                "constraint": b.input_field(b.nn(self.constraint(table))),
                "update_columns": self.t.input_field(
                    b.rows(self.update_column(table)), default_value=[]
                ),
                "where": b.input_field(b.bool_exp(table)),
            },
            f'on_conflict condition type for table "{table.name}"',
        )

    def constraint(self, table: Table) -> GraphQLEnumType:
        """`x_constraint`: the table's unique and primary key constraints."""
        name = table.type_name("_constraint")
        t = self.t
        return self.b._memo(  # type: ignore[no-any-return]
            name,
            lambda: t.enum_type(
                name,
                {c: self.b.enum_value(c) for c, _ in table.unique_constraints},
                f'unique or primary key constraints on table "{table.name}"',
            ),
        )

    def update_column(self, table: Table) -> GraphQLEnumType:
        """`x_update_column`: the columns an upsert may update."""
        name = table.type_name("_update_column")
        b, t = self.b, self.t

        def make() -> GraphQLEnumType:
            cols = self.update_cols(table) or ()
            values = {c.gql_name: b.enum_value(c.name, "column name") for c in cols}
            placeholder = {"_PLACEHOLDER": b.enum_value("", "placeholder (do not use)")}
            return t.enum_type(
                name, values or placeholder, f'update columns of table "{table.name}"'
            )

        return self.b._memo(name, make)  # type: ignore[no-any-return]

    def _columns_input(
        self, table: Table, suffix: str, cols: list[Column], scalar: Any = None
    ) -> GraphQLInputObjectType:
        b = self.b
        return self._input(
            table.type_name(f"_{suffix}"),
            lambda: {c.gql_name: b.input_field(scalar or b.column_type(table, c)) for c in cols},
            INPUT_DESCRIPTIONS[suffix].format(table=table.name),
        )

    def update_args(self, table: Table) -> dict[str, GraphQLArgument]:
        """`_set`, `_inc` and the jsonb operators an update takes."""

        def arg(of: Any) -> GraphQLArgument:  # a jsonb operator: described as its type
            return self.t.argument(of, of.description)

        cols = list(self.update_cols(table) or ())
        set_ = self._columns_input(table, "set_input", cols)
        args = {
            "_set": self.t.argument(
                set_, "sets the columns of the filtered rows to the given values"
            )
        }
        numeric = [c for c in cols if c.is_numeric and not c.is_array]
        if numeric:
            inc = self._columns_input(table, "inc_input", numeric)
            args["_inc"] = self.t.argument(
                inc, "increments the numeric columns with given value of the filtered values"
            )
        jsonb = [c for c in cols if c.type_name == "jsonb"]
        if jsonb:
            strings = self.b.list_nn(GraphQLString)
            args["_append"] = arg(self._columns_input(table, "append_input", jsonb))
            args["_prepend"] = arg(self._columns_input(table, "prepend_input", jsonb))
            args["_delete_key"] = arg(
                self._columns_input(table, "delete_key_input", jsonb, GraphQLString)
            )
            args["_delete_elem"] = arg(
                self._columns_input(table, "delete_elem_input", jsonb, GraphQLInt)
            )
            args["_delete_at_path"] = arg(
                self._columns_input(table, "delete_at_path_input", jsonb, strings)
            )
        return args

    def pk_columns(self, table: Table) -> GraphQLInputObjectType:
        """`x_pk_columns_input`."""
        b = self.b

        def fields() -> dict[str, GraphQLInputField]:
            out = {}
            for name in table.primary_key:
                col = table.column_map[name]
                out[col.gql_name] = b.input_field(b.nn(b.column_type(table, col)))
            return out

        return self._input(
            table.type_name("_pk_columns_input"),
            fields,
            f"primary key columns input for table: {table.name}",
        )

    def updates(self, table: Table, upd: dict[str, GraphQLArgument]) -> GraphQLInputObjectType:
        """`x_updates`: one update of `update_x_many` (its `_set`, … and `where`)."""
        b = self.b
        return self._input(
            table.type_name("_updates"),
            lambda: {
                **{k: b.input_field(a.type) for k, a in upd.items()},
                "where": b.input_field(b.nn(b.bool_exp(table))),
            },
        )

    # -- output types and root fields -----------------------------------------------------
    def response(self, table: Table) -> GraphQLObjectType:
        """`x_mutation_response {affected_rows, returning}`; `returning` only for a role that
        may select the table."""
        name = table.type_name("_mutation_response")
        b, t = self.b, self.t

        def fields() -> dict[str, GraphQLField]:
            f = {
                "affected_rows": t.field(
                    b.nn(GraphQLInt),
                    None,
                    "number of rows affected by the mutation",
                    extensions=AFFECTED_ROWS,
                )
            }
            if self.can_select(table):
                f["returning"] = t.field(
                    b.rows(b.object_type(table)),
                    None,
                    "data from the rows affected by the mutation",
                    extensions=RETURNING,
                )
            return f

        return self.b._memo(  # type: ignore[no-any-return]
            name,
            lambda: t.object_type(
                name, fields, f'response of any mutation on the table "{table.name}"'
            ),
        )

    def fields(self, table: Table) -> dict[str, GraphQLField]:
        """The mutation root fields of one table (those its `TableAccess.root_fields` has)."""
        out: dict[str, GraphQLField] = {}
        roots = self.view.table(table.name).root_fields
        if "insert" in roots:
            out.update(self._insert_fields_of(table, "insert_one" in roots))
        if "update" in roots:
            out.update(self._update_fields_of(table, "update_by_pk" in roots))
        if "delete" in roots:
            out.update(self._delete_fields_of(table, "delete_by_pk" in roots))
        return out

    def _insert_fields_of(self, table: Table, one_row: bool) -> dict[str, GraphQLField]:
        b, t = self.b, self.t
        rf = table.root_fields
        row = self.insert_input(table)
        args = {"objects": t.argument(b.rows(row), "the rows to be inserted")}
        one = {"object": t.argument(b.nn(row), "the row to be inserted")}
        conflict = self.on_conflict(table)
        if conflict is not None:
            args["on_conflict"] = one["on_conflict"] = t.argument(conflict, "upsert condition")
        out = {
            rf.insert: t.field(
                self.response(table),
                args,
                f'insert data into the table: "{table.name}"',
                _info(FieldKind.INSERT, table=table),
            )
        }
        if one_row:
            out[rf.insert_one] = t.field(
                b.object_type(table),
                one,
                f'insert a single row into the table: "{table.name}"',
                _info(FieldKind.INSERT_ONE, table=table),
            )
        return out

    def _update_fields_of(self, table: Table, has_pk: bool) -> dict[str, GraphQLField]:
        b, t = self.b, self.t
        rf = table.root_fields
        upd = self.update_args(table)
        nested = NestedUpdateTypes(self).argument(table)  # `_nested` (nested updates)
        one = {**upd, NESTED_ARG: nested} if nested is not None else upd
        out = {
            rf.update: t.field(
                self.response(table),
                {**one, "where": t.argument(b.nn(b.bool_exp(table)), UPDATE_WHERE)},
                f'update data of the table: "{table.name}"',
                _info(FieldKind.UPDATE, table=table),
            )
        }
        if has_pk:
            out[rf.update_by_pk] = t.field(
                b.object_type(table),
                {**one, "pk_columns": t.argument(b.nn(self.pk_columns(table)))},
                f'update single row of the table: "{table.name}"',
                _info(FieldKind.UPDATE_BY_PK, table=table),
            )
        out[rf.update_many] = t.field(
            t.list_of(self.response(table)),
            {
                "updates": t.argument(
                    b.rows(self.updates(table, one)), "updates to execute, in order"
                )
            },
            f'update multiples rows of table: "{table.name}"',
            _info(FieldKind.UPDATE_MANY, table=table),
        )
        return out

    def _delete_fields_of(self, table: Table, has_pk: bool) -> dict[str, GraphQLField]:
        b, t = self.b, self.t
        rf = table.root_fields
        out = {
            rf.delete: t.field(
                self.response(table),
                {"where": t.argument(b.nn(b.bool_exp(table)), DELETE_WHERE)},
                f'delete data from the table: "{table.name}"',
                _info(FieldKind.DELETE, table=table),
            )
        }
        if has_pk:
            columns = [table.column_map[c] for c in table.primary_key]
            out[rf.delete_by_pk] = t.field(
                b.object_type(table),
                {c.gql_name: b.argument(b.nn(b.column_type(table, c))) for c in columns},
                f'delete single row from the table: "{table.name}"',
                _info(FieldKind.DELETE_BY_PK, table=table),
            )
        return out
