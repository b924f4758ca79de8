"""Names of the boolean-expression operators (Hasura's `<Scalar>_comparison_exp`)."""

# Comparison operators (Hasura's `<Scalar>_comparison_exp`), by the types they apply to.
GENERAL_OPS = ("_eq", "_gt", "_gte", "_lt", "_lte", "_neq")
LIST_OPS = ("_in", "_nin")
TEXT_OPS = (
    "_like",
    "_nlike",
    "_ilike",
    "_nilike",
    "_similar",
    "_nsimilar",
    "_regex",
    "_nregex",
    "_iregex",
    "_niregex",
)
JSONB_OPS = ("_contains", "_contained_in", "_has_key", "_has_keys_all", "_has_keys_any")
COLUMN_COMPARISON_OPS = ("_ceq", "_cne", "_cneq", "_cgt", "_clt", "_cgte", "_clte")
POSTGIS_OPS = (
    "_st_contains",
    "_st_crosses",
    "_st_equals",
    "_st_intersects",
    "_st_overlaps",
    "_st_touches",
    "_st_within",
    "_st_d_within",
)
