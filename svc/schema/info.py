"""What a generated GraphQL field means, attached to it as `extensions["svc"]`."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, NamedTuple

from svc.ir.model import Column, ComputedField, Function, Relationship, Table


class FieldKind(StrEnum):
    """What a generated field is (`FieldInfo.kind`); a `StrEnum`, so each member is also
    its name as a string (error messages show it)."""

    SELECT = "select"
    SELECT_BY_PK = "select_by_pk"
    SELECT_AGGREGATE = "select_aggregate"
    SELECT_STREAM = "select_stream"
    SELECT_GROUPS = "select_groups"  # svc.schema.groups
    FUNCTION = "function"
    FUNCTION_AGGREGATE = "function_aggregate"
    COLUMN = "column"
    COMPUTED_SCALAR = "computed_scalar"
    COMPUTED_SET = "computed_set"
    OBJECT_REL = "object_rel"
    ARRAY_REL = "array_rel"
    ARRAY_AGG = "array_agg"
    ARRAY_GROUPS = "array_groups"  # svc.schema.groups
    GROUP_KEYS = "group_keys"
    AGG_COUNT = "agg_count"
    AGG_OP = "agg_op"
    AGG_COLUMN = "agg_column"
    AGG_NODES = "agg_nodes"
    AGG_AGGREGATE = "agg_aggregate"
    INSERT = "insert"
    INSERT_ONE = "insert_one"
    UPDATE = "update"
    UPDATE_BY_PK = "update_by_pk"
    UPDATE_MANY = "update_many"
    DELETE = "delete"
    DELETE_BY_PK = "delete_by_pk"
    AFFECTED_ROWS = "affected_rows"
    RETURNING = "returning"
    ACTION = "action"
    ACTION_RESULT = "action_result"
    ACTION_REL = "action_rel"
    ACTION_AGG = "action_agg"
    REMOTE_SCHEMA = "remote_schema"
    REMOTE_RELATIONSHIP = "remote_relationship"
    # The Relay API's (`svc.schema.relay`)
    NODE = "node"
    NODE_ID = "node_id"
    SELECT_CONNECTION = "select_connection"
    FUNCTION_CONNECTION = "function_connection"
    ARRAY_CONNECTION = "array_connection"


class FieldInfo(NamedTuple):
    """The meaning of one GraphQL field.

    `kind` (a `FieldKind`) is one of: `select`, `select_by_pk`, `select_aggregate` (root
    fields, `table` set); `column` (`column` set); `object_rel`, `array_rel`, `array_agg`
    (`relationship` and the target `table` set); `agg_count`, `agg_op` (`op` set: `sum`,
    `avg`, …), `agg_column` (`column`, `op`); `agg_nodes`, `agg_aggregate`; `function`,
    `function_aggregate` (`function` and its return `table` set); `computed_scalar`,
    `computed_set` (`computed` set; `table` is the target of a `SETOF` one); the mutation,
    action and remote kinds of `FieldKind`; the Relay API's (`svc.schema.relay`): `node`,
    `node_id`, `select_connection` (`table`), `function_connection` (`function`,
    `table`), `array_connection` (`relationship`, `table`).

    A named tuple, not a frozen dataclass: as immutable, and several times cheaper to
    create (a schema of 1,000 tables has 50,000 of them).
    """

    kind: FieldKind
    table: Table | None = None
    column: Column | None = None
    relationship: Relationship | None = None
    op: str = ""
    function: Function | None = None
    computed: ComputedField | None = None


def info(kind: FieldKind, **kw: Any) -> dict[str, Any]:
    """The `extensions` of a generated field: `{"svc": FieldInfo(kind, …)}`."""
    return {"svc": FieldInfo(kind, **kw)}


# Fields whose meaning involves no table, column or operator share one `extensions`
# (graphql-core keeps the dict it is given; nothing changes it once the schema is built).
AGG_AGGREGATE = info(FieldKind.AGG_AGGREGATE)
AGG_NODES = info(FieldKind.AGG_NODES)
AGG_COUNT = info(FieldKind.AGG_COUNT)
AFFECTED_ROWS = info(FieldKind.AFFECTED_ROWS)
RETURNING = info(FieldKind.RETURNING)
