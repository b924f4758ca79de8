"""The aggregation predicates of `<rel>_aggregate` in a boolean expression, one table.

The reference (`aggregationFunctions` in `Hasura/Backends/Postgres/Instances/Schema.hs`,
schema in `Hasura/GraphQL/Schema/BoolExp/AggregationPredicates.hs`) offers, over an array
relationship's rows: `count` (any columns, or `*`), `bool_and` / `bool_or` (one boolean
column), `avg`, `max`, `min`, `sum`, `stddev_samp`, `var_samp` (one float8 column) and
`corr`, `covar_samp` (two float8 columns, arguments `Y` and `X`). Each compares the
aggregate's value (`predicate`) in the comparison type of what it returns. A predicate
is offered only when the role sees a column of its argument type (`count`: any column).
Schema (`svc.schema.agg_bool_exp`), planner (`svc.plan.build`) and SQL (`svc.sql.render`,
which writes `name` as the SQL function) read this table; nothing else names them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class AggPredicate:
    """One aggregation predicate.

    `name`: the GraphQL field and the Postgres aggregate. `arg_type`: the internal type
    name its argument columns must have (None: `count`, a list of any columns).
    `arg_names`: named arguments (`Y`, `X`: an input object of columns), empty for one
    column. `returns`: the Postgres type of its value, `returns_name` the internal name
    and `returns_scalar` the GraphQL scalar of `predicate`'s comparison type."""

    name: str
    arg_type: str | None
    arg_names: tuple[str, ...]
    returns: str
    returns_name: str
    returns_scalar: str


def _float(name: str, *args: str) -> AggPredicate:
    return AggPredicate(name, "float8", args, "double precision", "float8", "float8")


def _bool(name: str) -> AggPredicate:
    return AggPredicate(name, "bool", (), "boolean", "bool", "Boolean")


AGG_PREDICATES: dict[str, AggPredicate] = {
    p.name: p
    for p in (
        _float("avg"),
        _bool("bool_and"),
        _bool("bool_or"),
        AggPredicate("count", None, (), "integer", "int4", "Int"),
        _float("max"),
        _float("min"),
        _float("sum"),
        _float("corr", "Y", "X"),
        _float("covar_samp", "Y", "X"),
        _float("stddev_samp"),
        _float("var_samp"),
    )
}


def arguments_enum(table: str, fn: str) -> str:
    """The enum of predicate `fn`'s argument columns for the table whose type is `table`
    (the reference's `<t>_select_column_<t>_aggregate_bool_exp_<fn>_arguments_columns`)."""
    return f"{table}_select_column_{table}_aggregate_bool_exp_{fn}_arguments_columns"
