"""The boolean-expression operators: one table read by every layer.

Per operator name (`_eq`, `_in`, `_like`, `_has_key`, `_st_within`, `_ceq`, …) an `Operator`
says what its operand is, which column types it applies to and how SQL spells it. IR
normalisation (`svc.ir.permissions`) accepts exactly these names, the schema
(`svc.schema.build`) offers a `<Scalar>_comparison_exp` field for each one that applies to
the scalar, the planners (`svc.plan.build`, `svc.plan.permissions`) make the operand's
parameter from `operand`, and the renderer (`svc.sql.render`) composes `sql`/`form` (string
tokens from this table, never a user value).

Sources: Hasura v2's `<Scalar>_comparison_exp` (generic, text, jsonb and PostGIS operators)
and its permission syntax (`$op` spellings, `_ne`, column comparisons `_ceq`…`_clte`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

# PostGIS column types (`type_name`); their values travel as GeoJSON.
GEO_TYPES = frozenset({"geometry", "geography"})
# GraphQL scalars of text columns (`citext`, `bpchar` and `name` keep their own scalar).
TEXT_SCALARS = frozenset({"String", "citext", "bpchar", "name"})


class Operand(StrEnum):
    """What an operator's operand is."""

    SCALAR = "scalar"  # one value of the column's type
    LIST = "list"  # a list of values of the column's type
    BOOLEAN = "boolean"  # true/false (`_is_null`)
    TEXT = "text"  # one string (`_has_key`)
    TEXT_LIST = "text_list"  # a list of strings (`_has_keys_any`, `_has_keys_all`)
    D_WITHIN = "d_within"  # `{distance, from, use_spheroid?}` (`_st_d_within`)
    COLUMN = "column"  # the name of another column of the same table (permissions only)


class Applies(StrEnum):
    """Which columns an operator applies to."""

    ALL = "all"
    TEXT = "text"  # GraphQL scalar in `TEXT_SCALARS` (String, citext, bpchar, name)
    JSONB = "jsonb"  # Postgres type `jsonb`
    GEO = "geo"  # Postgres type in `GEO_TYPES`
    CONTAINER = "container"  # Postgres type `jsonb`, or an array column


class Form(StrEnum):
    """How the renderer composes an operator with its column (`c`) and operand (`v`)."""

    INFIX = "infix"  # `c [NOT ]<sql> v`
    QUANTIFIED = "quantified"  # `c <sql>(v)`: sql is `= ANY` / `<> ALL`, v an array
    FUNCTION = "function"  # `<sql>(c, v)`
    IS_NULL = "is_null"  # `c IS [NOT ]NULL`, by the operand (`IsNull` node)
    D_WITHIN = "d_within"  # `<sql>(c, from, distance[, use_spheroid])`
    COLUMNS = "columns"  # `c <sql> other_column`


@dataclass(frozen=True, slots=True)
class Operator:
    """One boolean-expression operator.

    `sql` is the SQL operator or function name the renderer emits, `negated` puts `NOT`
    before an infix `sql` (`_nlike` is `NOT LIKE`). `permission_only` operators exist in
    permission filters only, not in the GraphQL schema; `canonical` names the operator a
    permission spelling stands for (`_ne` is `_neq`)."""

    name: str
    operand: Operand
    applies: Applies
    form: Form
    sql: str
    negated: bool = False
    permission_only: bool = False
    canonical: str | None = None
    pattern: bool = False  # a regular expression Postgres compiles (bounded in length)


def _infix(name: str, sql: str, applies: Applies = Applies.ALL, negated: bool = False) -> Operator:
    return Operator(name, Operand.SCALAR, applies, Form.INFIX, sql, negated)


def _pattern(name: str, sql: str, negated: bool = False) -> Operator:
    return Operator(name, Operand.SCALAR, Applies.TEXT, Form.INFIX, sql, negated, pattern=True)


def _geo(name: str, function: str) -> Operator:
    return Operator(name, Operand.SCALAR, Applies.GEO, Form.FUNCTION, function)


def _columns(name: str, sql: str) -> Operator:
    return Operator(name, Operand.COLUMN, Applies.ALL, Form.COLUMNS, sql, permission_only=True)


_T, _J = Applies.TEXT, Applies.JSONB
_TABLE = (
    _infix("_eq", "="),
    _infix("_neq", "<>"),
    _infix("_gt", ">"),
    _infix("_lt", "<"),
    _infix("_gte", ">="),
    _infix("_lte", "<="),
    Operator(
        "_ne", Operand.SCALAR, Applies.ALL, Form.INFIX, "<>", permission_only=True, canonical="_neq"
    ),
    Operator("_in", Operand.LIST, Applies.ALL, Form.QUANTIFIED, "= ANY"),
    Operator("_nin", Operand.LIST, Applies.ALL, Form.QUANTIFIED, "<> ALL"),
    Operator("_is_null", Operand.BOOLEAN, Applies.ALL, Form.IS_NULL, "IS NULL"),
    _infix("_like", "LIKE", _T),
    _infix("_nlike", "LIKE", _T, negated=True),
    _infix("_ilike", "ILIKE", _T),
    _infix("_nilike", "ILIKE", _T, negated=True),
    _pattern("_similar", "SIMILAR TO"),
    _pattern("_nsimilar", "SIMILAR TO", negated=True),
    _pattern("_regex", "~"),
    _pattern("_nregex", "!~"),
    _pattern("_iregex", "~*"),
    _pattern("_niregex", "!~*"),
    # jsonb and arrays (the reference's `AContains`/`AContainedIn` for `PGArray` columns)
    _infix("_contains", "@>", Applies.CONTAINER),
    _infix("_contained_in", "<@", Applies.CONTAINER),
    Operator("_has_key", Operand.TEXT, _J, Form.INFIX, "?"),
    Operator("_has_keys_any", Operand.TEXT_LIST, _J, Form.INFIX, "?|"),
    Operator("_has_keys_all", Operand.TEXT_LIST, _J, Form.INFIX, "?&"),
    _geo("_st_contains", "ST_Contains"),
    _geo("_st_crosses", "ST_Crosses"),
    _geo("_st_equals", "ST_Equals"),
    _geo("_st_intersects", "ST_Intersects"),
    _geo("_st_overlaps", "ST_Overlaps"),
    _geo("_st_touches", "ST_Touches"),
    _geo("_st_within", "ST_Within"),
    Operator("_st_d_within", Operand.D_WITHIN, Applies.GEO, Form.D_WITHIN, "ST_DWithin"),
    _columns("_ceq", "="),
    _columns("_cne", "<>"),
    _columns("_cneq", "<>"),
    _columns("_cgt", ">"),
    _columns("_clt", "<"),
    _columns("_cgte", ">="),
    _columns("_clte", "<="),
)
# Every operator by name.
OPERATORS: dict[str, Operator] = {op.name: op for op in _TABLE}


@dataclass(frozen=True)
class CastTarget:
    """A type `_cast` converts a value to: its Postgres name (the SQL cast), internal
    name and GraphQL scalar."""

    pg_type: str
    type_name: str
    scalar: str


# `_cast` of a comparison expression, by the compared type's internal name: each target by
# its field name (the reference's `comparisonExps`, `castExp`:
# jsonb -> `String`, geometry -> `geography`, geography -> `geometry`).
CAST_OPERATOR = "_cast"
CASTS: dict[str, dict[str, CastTarget]] = {
    "jsonb": {"String": CastTarget("text", "text", "String")},
    "geometry": {"geography": CastTarget("geography", "geography", "geography")},
    "geography": {"geometry": CastTarget("geometry", "geometry", "geometry")},
}
# `_cast` in a permission filter (metadata): the targets are Postgres type names, as the
# reference's `parseBoolExpOperations` reads them (`textToPGScalarType`, `checkValidCast`
# in `Hasura/Backends/Postgres/Translate/BoolExp.hs`): jsonb -> `text`, geometry ->
# `geography`, geography -> `geometry`.
PERMISSION_CASTS: dict[str, dict[str, CastTarget]] = {
    "jsonb": {"text": CASTS["jsonb"]["String"]},
    "geometry": {"geography": CASTS["geometry"]["geography"]},
    "geography": {"geometry": CASTS["geography"]["geometry"]},
}
# Operand kinds that are not a value of the column's own type.
_UNTYPED = frozenset({Operand.BOOLEAN, Operand.TEXT, Operand.TEXT_LIST, Operand.COLUMN})


def applies_to(op: Operator, scalar: str, type_name: str, *, is_array: bool = False) -> bool:
    """True when `op` applies to a column of GraphQL scalar `scalar` and Postgres type
    `type_name` (`int4`, `jsonb`, `geography`); `is_array` for an array column."""
    if op.applies is Applies.ALL:
        return True
    if op.applies is Applies.TEXT:
        return scalar in TEXT_SCALARS
    if op.applies is Applies.JSONB:
        return type_name == "jsonb"
    if op.applies is Applies.CONTAINER:
        return type_name == "jsonb" or is_array
    return type_name in GEO_TYPES


def schema_operators(
    scalar: str, type_name: str, *, is_array: bool = False
) -> tuple[Operator, ...]:
    """The operators of `<scalar>_comparison_exp` for a column of that scalar and type
    (`is_array`: an array column), in table order."""
    return tuple(
        op
        for op in _TABLE
        if not op.permission_only and applies_to(op, scalar, type_name, is_array=is_array)
    )


# An enum column's operators (the reference's `equalityOperators`; an enum reference is
# not a scalar, so none of the ordering, text, jsonb or PostGIS ones apply).
_EQUALITY = frozenset({"_eq", "_neq", "_in", "_nin", "_is_null"})


def enum_operators() -> tuple[Operator, ...]:
    """The operators of `<table>_enum_comparison_exp`, in table order."""
    return tuple(op for op in _TABLE if op.name in _EQUALITY)


def is_column_operator(name: str) -> bool:
    """True for a column comparison (`_ceq`, …): its operand names another column."""
    op = OPERATORS.get(name)
    return op is not None and op.operand is Operand.COLUMN


def typed_operand(name: str) -> bool:
    """True unless `name` is a known operator whose operand is not a value of the column's
    type (`_is_null`, `_has_key*`, column comparisons); unknown names count as typed."""
    op = OPERATORS.get(name)
    return op is None or op.operand not in _UNTYPED
