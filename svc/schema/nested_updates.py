"""Input types of nested updates: the `_nested` argument of `update_x` and `update_x_by_pk`
(and field of `x_updates`, each update of `update_x_many`).

The reference has no nested updates (its users' long-standing request; its own design
note, `rfcs/nested-updates.md` in hasura/graphql-engine, proposes per-relationship
operations `_insert`, `_update`, `_delete`, `_link`, `_unlink`). svc offers the first three
with that note's operation names (README "Nested updates"):

    input x_nested_update_input {            # one field per relationship of x
      <object_rel>: y_obj_rel_update_input     # { _set, _inc, jsonb ops, _nested }
      <array_rel>:  z_arr_rel_update_input     # { _delete: z_bool_exp,
    }                                          #   _update: [z_arr_rel_updates!],
                                               #   _insert: z_arr_rel_insert_input }
    input z_arr_rel_updates { where: z_bool_exp!, _set, _inc, jsonb ops, _nested }

A role sees a relationship only when it may do something to the target
(`svc.ir.role_view.TableAccess`): `_update` and an object relationship need the target's
update permission (its columns only, presets excluded), `_insert` its insert permission,
`_delete` its delete permission. Remote relationships (`to_source`) are left out, as in
nested inserts. Each type exists only when it has a field (GraphQL allows no empty input
object), which is decided without recursion, so relationship cycles are fine: fields are
thunks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from graphql import GraphQLArgument, GraphQLInputField, GraphQLInputObjectType

from svc.ir.model import Relationship, Table

if TYPE_CHECKING:
    from svc.schema.mutations import MutationTypes

NESTED_ARG = "_nested"
NESTED_DESCRIPTION = "updates, inserts and deletes through relationships of the updated rows"


class NestedUpdateTypes:
    """Builds the nested update input types of one role's schema (through its
    `MutationTypes`, sharing the builder's memo of named types)."""

    def __init__(self, m: MutationTypes) -> None:
        self.m = m
        self.b = m.b

    # -- what the role may do through a relationship ---------------------------------
    def _target(self, table: Table, rel: Relationship) -> Table | None:
        """The relationship's target when it is a local, named table; else None."""
        if rel.to_source or rel.target_source != table.source:
            return None
        target = self.b.ir.tables.get(rel.target)
        return target if target is not None and target.gql_name else None

    def _can_update(self, target: Table) -> bool:
        return self.m.update_cols(target) is not None

    def _can_insert(self, target: Table) -> bool:
        return self.m.insert_cols(target) is not None

    def _rel_offered(self, table: Table, rel: Relationship) -> bool:
        target = self._target(table, rel)
        if target is None:
            return False
        if rel.kind == "object":
            return self._can_update(target)
        return self._can_update(target) or self._can_insert(target) or self.m.can_delete(target)

    def has_nested(self, table: Table) -> bool:
        """Whether `x_nested_update_input` has a field for this role."""
        return any(self._rel_offered(table, rel) for rel in table.relationships)

    # -- types ----------------------------------------------------------------------
    def argument(self, table: Table) -> GraphQLArgument | None:
        """The `_nested` argument of `table`'s update fields; None when the role may do
        nothing through any of its relationships."""
        if not self.has_nested(table):
            return None
        return self.m.t.argument(self.nested_input(table), NESTED_DESCRIPTION)

    def nested_input(self, table: Table) -> GraphQLInputObjectType:
        """`x_nested_update_input`: one field per offered relationship (a thunk)."""
        name = table.type_name("_nested_update_input")

        def fields() -> dict[str, GraphQLInputField]:
            out: dict[str, GraphQLInputField] = {}
            for rel in table.relationships:
                if not self._rel_offered(table, rel):
                    continue
                target = self._target(table, rel)
                assert target is not None
                rel_type = (
                    self.obj_input(target) if rel.kind == "object" else self.arr_input(target)
                )
                out[rel.name] = self.b.input_field(rel_type)
            return out

        return self.b._memo(  # type: ignore[no-any-return]
            name,
            lambda: self.m.t.input_type(
                name, fields, f'nested updates through the relationships of table "{table.name}"'
            ),
        )

    def _update_fields(self, target: Table) -> dict[str, GraphQLInputField]:
        """`_set`, `_inc`, the jsonb operators and (when offered) `_nested` of `target`."""
        out = {k: self.b.input_field(a.type) for k, a in self.m.update_args(target).items()}
        if self.has_nested(target):
            out[NESTED_ARG] = self.b.input_field(self.nested_input(target))
        return out

    def obj_input(self, target: Table) -> GraphQLInputObjectType:
        """`y_obj_rel_update_input`: updates the related row(s) of each updated row."""
        name = target.type_name("_obj_rel_update_input")
        return self.b._memo(  # type: ignore[no-any-return]
            name,
            lambda: self.m.t.input_type(
                name,
                lambda: self._update_fields(target),
                f'input type for updating object relation for table "{target.name}"',
            ),
        )

    def arr_updates(self, target: Table) -> GraphQLInputObjectType:
        """`z_arr_rel_updates`: one update of the related rows matching `where`."""
        name = target.type_name("_arr_rel_updates")
        b = self.b

        def fields() -> dict[str, GraphQLInputField]:
            return {
                "where": b.input_field(b.nn(b.bool_exp(target))),
                **self._update_fields(target),
            }

        return b._memo(  # type: ignore[no-any-return]
            name,
            lambda: self.m.t.input_type(
                name, fields, f'an update of related rows of table "{target.name}"'
            ),
        )

    def arr_input(self, target: Table) -> GraphQLInputObjectType:
        """`z_arr_rel_update_input {_delete, _update, _insert}`: what the role may do."""
        name = target.type_name("_arr_rel_update_input")
        b = self.b

        def fields() -> dict[str, GraphQLInputField]:
            out: dict[str, GraphQLInputField] = {}
            if self.m.can_delete(target):
                out["_delete"] = b.input_field(b.bool_exp(target))
            if self._can_update(target):
                out["_update"] = b.input_field(b.list_nn(self.arr_updates(target)))
            if self._can_insert(target):
                out["_insert"] = b.input_field(self.m.arr_rel_input(target))
            return out

        return b._memo(  # type: ignore[no-any-return]
            name,
            lambda: self.m.t.input_type(
                name,
                fields,
                f'input type for updating array relation for table "{target.name}"',
            ),
        )
