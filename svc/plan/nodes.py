"""Plan nodes (frozen dataclasses with slots; children are tuples)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from svc.metadata.model import QualifiedName

# -- values ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Const:
    """A value known when planning (a literal of the query)."""

    value: Any


@dataclass(frozen=True, slots=True)
class VarRef:
    """The value of GraphQL variable `name` (after coercion), read at execution."""

    name: str


@dataclass(frozen=True, slots=True)
class SessionRef:
    """The session variable `name` (lower-case, `x-svc-user-id`), read at execution.

    A missing variable is a `not-found` error, except an `optional` one (an array operand
    of `_in`/`_has_keys_all`…, which the reference reads as null)."""

    name: str
    optional: bool = False


@dataclass(frozen=True, slots=True)
class SessionJson:
    """All session variables as one JSON object (a function's `session_argument`)."""


@dataclass(frozen=True, slots=True)
class CursorRef:
    """A streaming subscription's cursor value for `column`: what its cohort last reached
    (`svc.plan.stream`); only the multiplexed statement reads it (`svc.sql.stream`)."""

    column: str


Source = Const | VarRef | SessionRef | SessionJson | CursorRef


@dataclass(frozen=True, slots=True)
class Param:
    """A typed parameter: sent as text (or text[] when `is_list`), cast to `pg_type` in SQL.
    `max_chars` (0: none): the longest string it may be (a regular expression's bound,
    checked when the value is known: `svc.execute.params.resolve`)."""

    source: Source
    pg_type: str
    is_list: bool = False
    max_chars: int = 0


@dataclass(frozen=True, slots=True)
class RowArg:
    """The current row, passed to a computed field's function as its table argument."""


@dataclass(frozen=True, slots=True)
class FnCall:
    """A call of a SQL function; each argument is `(name, value)`, `name` "" = positional."""

    function: QualifiedName
    args: tuple[tuple[str, Param | RowArg], ...]


@dataclass(frozen=True, slots=True)
class Cast:
    """A compared value cast to another type (`_cast` of a comparison expression):
    `(column)::pg_type`. `pg_type` comes from `svc.ir.operators.CASTS`, never the request."""

    column: Compared
    pg_type: str


@dataclass(frozen=True, slots=True)
class Redacted:
    """An inherited role's column or scalar computed field as that role may read it: the
    value in the rows `case` admits (those of a parent granting it), `null` elsewhere —
    `CASE WHEN case THEN column ELSE NULL END`. Whatever the role's request reads it
    through (`where`, `order_by`, `distinct_on`, aggregates, aggregation predicates) sees
    this value, as the reference's redaction expressions (`ColumnRedactionSpec`)."""

    column: str | FnCall
    case: BoolExp


# What a comparison reads: a column name, a scalar computed field's call, either cast,
# or either redacted.
Compared = str | FnCall | Cast | Redacted

# -- boolean expressions --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class And:
    """Conjunction; `And(())` is true."""

    items: tuple[BoolExp, ...]


@dataclass(frozen=True, slots=True)
class Or:
    """Disjunction; `Or(())` is false."""

    items: tuple[BoolExp, ...]


@dataclass(frozen=True, slots=True)
class Not:
    """Negation."""

    item: BoolExp


@dataclass(frozen=True, slots=True)
class Compare:
    """`column <op> value`; `op` is the GraphQL operator name (`_eq`, `_in`, `_like`, …).

    `column` is a column name, a scalar computed field's call, or either cast."""

    column: Compared
    op: str
    value: Param


@dataclass(frozen=True, slots=True)
class DWithin:
    """PostGIS `ST_DWithin(column, from, distance[, use_spheroid])` (`_st_d_within`)."""

    column: Compared
    origin: Param
    distance: Param
    use_spheroid: Param | None = None


@dataclass(frozen=True, slots=True)
class ColCompare:
    """`column <op> other_column` (`_ceq`, `_cgt`, … of permission filters)."""

    column: str
    op: str
    other: str


@dataclass(frozen=True, slots=True)
class IsNull:
    """`column IS NULL` (or `IS NOT NULL` when `negated`)."""

    column: Compared
    negated: bool


@dataclass(frozen=True, slots=True)
class Exists:
    """A filter through a relationship: some row of `table` joined by `mapping` matches.

    With `function`, the rows come from that call (a `SETOF` computed field) instead."""

    table: QualifiedName
    mapping: tuple[tuple[str, str], ...]
    where: BoolExp
    function: FnCall | None = None


@dataclass(frozen=True, slots=True)
class CountFilter:
    """A filter on an array relationship's count (`<rel>_aggregate: {count: …}`, the
    reference's `<table>_aggregate_bool_exp`): the rows of `table` joined by `mapping`
    and matching `where` are counted (`count(*)`, or the non-null values of `columns`,
    `distinct` ones when set) and `predicate` holds over that count, a row with one
    column named `count`. Another `function` of `svc.ir.agg_predicates.AGG_PREDICATES`
    (`<rel>_aggregate: {bool_and | avg | corr …: …}`) aggregates `columns` as its
    arguments instead (the row's column is still named `count`)."""

    table: QualifiedName
    mapping: tuple[tuple[str, str], ...]
    where: BoolExp
    columns: tuple[Compared, ...]
    distinct: bool
    predicate: BoolExp
    function: str = "count"


BoolExp = And | Or | Not | Compare | DWithin | ColCompare | IsNull | Exists | CountFilter
TRUE = And(())

# -- ordering -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Hop:
    """One object-relationship step of an order-by path; `where` is the role's filter on
    the target (a hidden row orders as null, as in the reference)."""

    table: QualifiedName
    mapping: tuple[tuple[str, str], ...]
    where: BoolExp = TRUE


@dataclass(frozen=True, slots=True)
class AggLeaf:
    """Order by an aggregate of an array relationship (`count`, or `op` of `column`)."""

    table: QualifiedName
    mapping: tuple[tuple[str, str], ...]
    op: str
    column: Compared | None
    function: FnCall | None = None  # a `SETOF` computed field instead of a relationship
    where: BoolExp = TRUE  # the role's filter on the target: only visible rows count


@dataclass(frozen=True, slots=True)
class OrderKey:
    """One `ORDER BY` item: follow `path`, then a column or an aggregate."""

    path: tuple[Hop, ...]
    leaf: str | AggLeaf | FnCall | Redacted
    descending: bool
    nulls_first: bool


# -- selections -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ColumnField:
    """A column value; `as_text` when numbers are stringified; `json_path` for json(b)."""

    column: str
    as_text: bool = False
    json_path: Param | None = None
    geojson: bool = False  # PostGIS geometry/geography, answered as GeoJSON
    case: BoolExp | None = None  # an inherited role's rows where it shows (else null)


@dataclass(frozen=True, slots=True)
class ComputedValue:
    """A scalar computed field's value: its function called on the row."""

    call: FnCall
    as_text: bool = False
    case: BoolExp | None = None  # an inherited role's rows where it shows (else null)


@dataclass(frozen=True, slots=True)
class Typename:
    """`__typename`: a constant string."""

    name: str


@dataclass(frozen=True, slots=True)
class RelField:
    """A relationship field: an object (single row), array or array-aggregate selection."""

    mapping: tuple[tuple[str, str], ...]
    select: Select | Aggregate | Connection
    unique: bool = False  # object relationship onto a key: a plain (flattenable) join


@dataclass(frozen=True, slots=True)
class Rows:
    """Which rows of `table`: filter, order, window and distinct."""

    table: QualifiedName
    where: BoolExp = TRUE
    order_by: tuple[OrderKey, ...] = ()
    limit: Param | None = None
    offset: Param | None = None
    distinct_on: tuple[Compared, ...] = ()
    limit_cap: int | None = None  # a permission's row limit
    function: FnCall | None = None  # rows of a function call (tracked function, computed field)


@dataclass(frozen=True, slots=True)
class Select:
    """Rows as JSON objects; `single` answers one object or null (by pk, object rel)."""

    rows: Rows
    fields: tuple[tuple[str, Field], ...]
    single: bool = False


@dataclass(frozen=True, slots=True)
class AggCount:
    """`count`, optionally over `columns`, optionally `distinct`."""

    columns: tuple[Compared, ...] = ()
    distinct: bool = False


@dataclass(frozen=True, slots=True)
class AggOp:
    """`<op> { col … }`: one JSON object of `op(column)` values."""

    op: str
    # (alias, column or "" for __typename, as_text)
    columns: tuple[tuple[str, Compared, bool], ...]
    typename: str = ""


AggItem = AggCount | AggOp | Typename


@dataclass(frozen=True, slots=True)
class AggAggregate:
    """The `aggregate { … }` object."""

    items: tuple[tuple[str, AggItem], ...]


@dataclass(frozen=True, slots=True)
class AggNodes:
    """The `nodes { … }` list."""

    fields: tuple[tuple[str, Field], ...]


@dataclass(frozen=True, slots=True)
class Aggregate:
    """An `x_aggregate` selection over `rows`.

    `nodes_limit`: a permission's row limit kept off `rows` because `aggregate` is
    selected; it caps `nodes` only (the reference's `PLSQRequired`,
    `Hasura/Backends/Postgres/Translate/Select/Internal/Process.hs`
    `mkPermissionLimitSubQuery` and `Internal/Extractor.hs` `withJsonAggExtr`)."""

    rows: Rows
    fields: tuple[tuple[str, AggAggregate | AggNodes | Typename], ...]
    nodes_limit: int | None = None


# -- the Relay API (`svc.plan.relay`, `svc.sql.relay`) ---------------------------------


@dataclass(frozen=True, slots=True)
class NodeId:
    """A row's Relay global id: base64 of the JSON `[1, "<schema>", "<table>", <key
    values…>]` (the reference's `mkNodeId`, Note [Relay Node Id])."""

    table: QualifiedName
    columns: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class EdgeCursor:
    """An edge's `cursor`."""


@dataclass(frozen=True, slots=True)
class EdgeNode:
    """An edge's `node`: the row's fields."""

    fields: tuple[tuple[str, Field], ...]


@dataclass(frozen=True, slots=True)
class Edges:
    """A connection's `edges` list: per row `cursor`, `node`, `__typename` items."""

    items: tuple[tuple[str, EdgeCursor | EdgeNode | Typename], ...]


@dataclass(frozen=True, slots=True)
class PageInfo:
    """A connection's `pageInfo`: (alias, `startCursor` | `endCursor` | `hasNextPage` |
    `hasPreviousPage`) items, or a `Typename`."""

    items: tuple[tuple[str, str | Typename], ...]


@dataclass(frozen=True, slots=True)
class Connection:
    """A Relay connection over `rows` (filter, order with the primary key appended,
    `DISTINCT ON`, a permission's limit; no window of its own).

    `cursor`: per order key of `rows`, its path in the cursor object (`("title",)`,
    `("articles_aggregate", "count")`); `split`: per order key the cursor value of
    `after` (`before` when `before` is set), none without a cursor (the reference's
    `ConnectionSplit`); `first`/`last`: the slice (`ConnectionSlice`)."""

    rows: Rows
    cursor: tuple[tuple[str, ...], ...]
    fields: tuple[tuple[str, Edges | PageInfo | Typename], ...]
    split: tuple[Param, ...] = ()
    before: bool = False
    first: Param | None = None
    last: Param | None = None


Field = ColumnField | ComputedValue | Typename | RelField | NodeId

# -- operations -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RootField:
    """A root field of a query: a table selection, or `__typename`, or introspection."""

    alias: str
    select: (
        Select | Aggregate | Connection | Typename | None
    )  # None: introspection (graphql-core runs it)


# The start of a root alias inside a source's namespace (`svc.plan.namespaces.flat_alias`).
NAMESPACE_ALIAS_PREFIX = "__svc_ns_"


@dataclass(frozen=True, slots=True)
class QueryPlan:
    """A planned query operation, its root fields in response order."""

    kind: str  # "query" | "subscription"
    roots: tuple[RootField, ...]

    @property
    def namespaced(self) -> bool:
        """Whether a root is inside a source's namespace (`svc.plan.namespaces`)."""
        return any(root.alias.startswith(NAMESPACE_ALIAS_PREFIX) for root in self.roots)
