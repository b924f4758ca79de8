"""One query that describes every user table, view and function, and its decoded model.

`INTROSPECTION_SQL` returns a single JSON text (one row, one column); `decode_catalog`
turns it into a frozen `DbCatalog`. Tables are listed by (schema, name), columns in
attribute order, constraints, unique indexes and foreign keys by name, their columns in
key order, functions by (schema, name, oid).

The statement is set-based (ARCHITECTURE.md "Catalog introspection"): every part is a CTE
joining whole catalogs and grouped by relation, never a subquery per table, so it stays
linear in the number of tables and its estimated cost below `jit_above_cost`. Reported:
relations of kinds `r v m f p` and functions of kind `f` outside `pg_catalog`,
`information_schema`, `hdb_catalog` and the toast/temp schemas; `updatable` is
`pg_relation_is_updatable(oid, true)`, called for views and foreign tables only (a table's
answer is always 28: insert, update and delete, Postgres's `relation_is_updatable`); a
unique index is reported when it has no expression, no predicate and backs no constraint
(not even as a foreign key's referenced index).
"""

from __future__ import annotations

import hashlib

import msgspec

INTROSPECTION_SQL = r"""
-- the reported relations; every other part joins to them
WITH rel AS MATERIALIZED (
  SELECT c.oid, n.nspname, c.relname, c.relkind
  FROM pg_class c
  JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE c.relkind IN ('r', 'v', 'm', 'f', 'p')
    AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'hdb_catalog')
    AND n.nspname NOT LIKE 'pg\_toast%' AND n.nspname NOT LIKE 'pg\_temp%'
),
con AS MATERIALIZED (
  SELECT k.oid, k.conrelid, k.confrelid, k.conname, k.contype, k.conkey, k.confkey
  FROM rel r JOIN pg_constraint k ON k.conrelid = r.oid
  WHERE k.contype IN ('p', 'u', 'f')
),
-- live user columns of the relations and of the tables their foreign keys reference
att AS MATERIALIZED (
  SELECT a.attrelid, a.attnum, a.attname, a.atttypid, a.attnotnull, a.atthasdef,
    a.attidentity, a.attgenerated
  FROM pg_attribute a
  WHERE a.attrelid IN (SELECT oid FROM rel UNION SELECT confrelid FROM con)
    AND a.attnum > 0 AND NOT a.attisdropped
),
col AS (
  SELECT a.attrelid AS oid, json_agg(json_build_object(
      'name', a.attname, 'attnum', a.attnum,
      'type', format_type(a.atttypid, NULL),
      'type_name', ty.typname,
      'type_schema', tn.nspname,
      'type_kind', ty.typtype,
      'type_category', ty.typcategory,
      'elem_type_name', et.typname,
      'nullable', NOT a.attnotnull,
      'has_default', a.atthasdef OR a.attidentity <> '' OR a.attgenerated <> '',
      'generated', a.attgenerated <> '' OR a.attidentity = 'a',
      'comment', d.description
    ) ORDER BY a.attnum) AS columns
  FROM rel r
  JOIN att a ON a.attrelid = r.oid
  JOIN pg_type ty ON ty.oid = a.atttypid
  JOIN pg_namespace tn ON tn.oid = ty.typnamespace
  LEFT JOIN pg_type et ON et.oid = ty.typelem AND ty.typcategory = 'A'
  LEFT JOIN pg_description d ON d.objoid = a.attrelid
    AND d.classoid = 'pg_catalog.pg_class'::regclass AND d.objsubid = a.attnum
  GROUP BY a.attrelid
),
-- the column names of every key, its own (`referenced` false) and a foreign key's target's
con_key AS (
  SELECT u.con, u.referenced, json_agg(a.attname ORDER BY u.ord) AS columns
  FROM (
    SELECT k.oid AS con, false AS referenced, k.conrelid AS relid, u.attnum, u.ord
    FROM con k CROSS JOIN LATERAL unnest(k.conkey) WITH ORDINALITY AS u(attnum, ord)
    UNION ALL
    SELECT k.oid, true, k.confrelid, u.attnum, u.ord
    FROM con k CROSS JOIN LATERAL unnest(k.confkey) WITH ORDINALITY AS u(attnum, ord)
    WHERE k.contype = 'f'
  ) u
  JOIN att a ON a.attrelid = u.relid AND a.attnum = u.attnum
  GROUP BY u.con, u.referenced
),
uniq AS (
  SELECT k.conrelid AS oid, json_agg(json_build_object(
      'name', k.conname, 'kind', k.contype, 'columns', kc.columns
    ) ORDER BY k.conname) AS constraints
  FROM con k
  LEFT JOIN con_key kc ON kc.con = k.oid AND NOT kc.referenced
  WHERE k.contype IN ('p', 'u')
  GROUP BY k.conrelid
),
fkey AS (
  SELECT k.conrelid AS oid, json_agg(json_build_object(
      'name', k.conname,
      'ref_schema', rn.nspname, 'ref_table', rc.relname,
      'columns', kc.columns, 'ref_columns', kr.columns
    ) ORDER BY k.conname) AS foreign_keys
  FROM con k
  JOIN pg_class rc ON rc.oid = k.confrelid
  JOIN pg_namespace rn ON rn.oid = rc.relnamespace
  LEFT JOIN con_key kc ON kc.con = k.oid AND NOT kc.referenced
  LEFT JOIN con_key kr ON kr.con = k.oid AND kr.referenced
  WHERE k.contype = 'f'
  GROUP BY k.conrelid
),
-- a unique index backing no constraint is rare: its columns are looked up per index
uidx AS (
  SELECT i.indrelid AS oid, json_agg(json_build_object(
      'name', ic.relname,
      'columns', (SELECT json_agg(a.attname ORDER BY u.ord)
                  FROM unnest(i.indkey::int2[]) WITH ORDINALITY AS u(attnum, ord)
                  JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = u.attnum)
    ) ORDER BY ic.relname) AS unique_indexes
  FROM pg_index i
  JOIN pg_class ic ON ic.oid = i.indexrelid
  -- the table's schema through pg_class (an index lookup per index), not `rel`: right
  -- after many tables are created the catalogs' statistics are stale, and a join with
  -- `rel` estimated at one row became a nested loop over every table (10 s at 10,000)
  JOIN pg_class tc ON tc.oid = i.indrelid
  JOIN pg_namespace tn ON tn.oid = tc.relnamespace
  WHERE i.indisunique AND i.indpred IS NULL
    AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid)
    AND 0 <> ALL (i.indkey::int2[])
    AND tc.relkind IN ('r', 'v', 'm', 'f', 'p')
    AND tn.nspname NOT IN ('pg_catalog', 'information_schema', 'hdb_catalog')
    AND tn.nspname NOT LIKE 'pg\_toast%' AND tn.nspname NOT LIKE 'pg\_temp%'
  GROUP BY i.indrelid
),
fn AS MATERIALIZED (
  SELECT p.oid, n.nspname, p.proname, p.provolatile, p.proretset, p.prorettype,
    p.proargnames, p.proargtypes, p.proargmodes, p.pronargdefaults
  FROM pg_proc p
  JOIN pg_namespace n ON n.oid = p.pronamespace
  WHERE p.prokind = 'f'
    AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'hdb_catalog')
    AND n.nspname NOT LIKE 'pg\_toast%' AND n.nspname NOT LIKE 'pg\_temp%'
),
fn_arg AS (
  SELECT f.oid,
    json_agg(format_type(u.t, NULL) ORDER BY u.o) AS types,
    json_agg(at.typname ORDER BY u.o) AS type_names,
    json_agg(atn.nspname ORDER BY u.o) AS type_schemas
  FROM fn f
  CROSS JOIN LATERAL unnest(f.proargtypes::oid[]) WITH ORDINALITY AS u(t, o)
  JOIN pg_type at ON at.oid = u.t
  JOIN pg_namespace atn ON atn.oid = at.typnamespace
  GROUP BY f.oid
)
SELECT json_build_object(
  'tables', coalesce((
    SELECT json_agg(json_build_object(
      'oid', r.oid::int8, 'schema', r.nspname, 'name', r.relname, 'kind', r.relkind,
      'comment', td.description,
      -- a table is always updatable (28); the function opens and locks the relation
      'updatable', CASE WHEN r.relkind IN ('r', 'p') THEN 28
                        ELSE pg_relation_is_updatable(r.oid, true) END,
      'columns', coalesce(col.columns, '[]'),
      'constraints', coalesce(uniq.constraints, '[]'),
      'unique_indexes', coalesce(uidx.unique_indexes, '[]'),
      'foreign_keys', coalesce(fkey.foreign_keys, '[]')
    ) ORDER BY r.nspname, r.relname)
    FROM rel r
    LEFT JOIN pg_description td ON td.objoid = r.oid
      AND td.classoid = 'pg_catalog.pg_class'::regclass AND td.objsubid = 0
    LEFT JOIN col ON col.oid = r.oid
    LEFT JOIN uniq ON uniq.oid = r.oid
    LEFT JOIN uidx ON uidx.oid = r.oid
    LEFT JOIN fkey ON fkey.oid = r.oid
  ), '[]'),
  'functions', coalesce((
    SELECT json_agg(json_build_object(
      'schema', f.nspname, 'name', f.proname, 'volatility', f.provolatile,
      'returns_set', f.proretset, 'return_type', format_type(f.prorettype, NULL),
      'return_type_name', rt.typname, 'return_type_schema', rtn.nspname,
      'return_type_kind', rt.typtype,
      'arg_names', coalesce(to_json(f.proargnames), '[]'),
      'arg_types', coalesce(fa.types, '[]'),
      'arg_type_names', coalesce(fa.type_names, '[]'),
      'arg_type_schemas', coalesce(fa.type_schemas, '[]'),
      'arg_modes', coalesce(to_json(f.proargmodes), '[]'),
      'defaults', f.pronargdefaults,
      'comment', fd.description
    ) ORDER BY f.nspname, f.proname, f.oid)
    FROM fn f
    JOIN pg_type rt ON rt.oid = f.prorettype
    JOIN pg_namespace rtn ON rtn.oid = rt.typnamespace
    LEFT JOIN fn_arg fa ON fa.oid = f.oid
    LEFT JOIN pg_description fd ON fd.objoid = f.oid
      AND fd.classoid = 'pg_catalog.pg_proc'::regclass AND fd.objsubid = 0
  ), '[]')
)::text
"""
# Names the statement's text in `hdb_catalog.svc_catalog_cache` keys: another text (another
# svc) never takes an answer of this one.
INTROSPECTION_KEY = hashlib.sha256(INTROSPECTION_SQL.encode()).hexdigest()[:16]


class DbColumn(msgspec.Struct, frozen=True):
    """A column: `type` is Postgres's own spelling (`format_type`), usable in a cast;
    `attnum` identifies it across renames."""

    name: str
    attnum: int
    type: str
    type_name: str
    type_schema: str
    type_kind: str
    type_category: str
    elem_type_name: str | None
    nullable: bool
    has_default: bool
    generated: bool
    comment: str | None


class DbConstraint(msgspec.Struct, frozen=True):
    """A primary key (`kind` `p`) or unique constraint (`u`)."""

    name: str
    kind: str
    columns: tuple[str, ...]


class DbUniqueIndex(msgspec.Struct, frozen=True):
    """A unique index that is not a constraint (no expressions, no predicate)."""

    name: str
    columns: tuple[str, ...]


class DbForeignKey(msgspec.Struct, frozen=True):
    """A foreign key from `columns` to `ref_columns` of `ref_schema.ref_table`."""

    name: str
    ref_schema: str
    ref_table: str
    columns: tuple[str, ...]
    ref_columns: tuple[str, ...]


class DbEnumRows(msgspec.Struct, frozen=True):
    """The rows of an enum table (Hasura's `is_enum`) as read when its schema was built:
    `(primary key text, comment text or None)` per row, in the database's order, or the
    Postgres error message that reading them raised (`error`)."""

    rows: tuple[tuple[str, str | None], ...] = ()
    error: str | None = None


class DbTable(msgspec.Struct, frozen=True):
    """A table (`kind` `r`/`p`), view (`v`), materialized view (`m`) or foreign table;
    `oid` identifies it across renames. `enum_rows` is not introspected: it is filled in
    for the tables metadata tracks as enums (`svc.execute.enum_values`) and None
    elsewhere, so a table whose rows changed is a changed catalog table to the IR."""

    oid: int
    schema: str
    name: str
    kind: str
    comment: str | None
    updatable: int
    columns: tuple[DbColumn, ...]
    constraints: tuple[DbConstraint, ...]
    unique_indexes: tuple[DbUniqueIndex, ...]
    foreign_keys: tuple[DbForeignKey, ...]
    enum_rows: DbEnumRows | None = None


class DbFunction(msgspec.Struct, frozen=True):
    """A function; `volatility` is `v`, `s` or `i`; `arg_modes` empty means all IN."""

    schema: str
    name: str
    volatility: str
    returns_set: bool
    return_type: str
    return_type_name: str
    return_type_schema: str
    return_type_kind: str
    arg_names: tuple[str, ...]
    arg_types: tuple[str, ...]
    arg_type_names: tuple[str, ...]
    arg_type_schemas: tuple[str, ...]
    arg_modes: tuple[str, ...]
    defaults: int
    comment: str | None


class DbCatalog(msgspec.Struct, frozen=True):
    """Everything introspected in one go: the `default` source's database, and in
    `sources` each other served source's catalog by name (`svc.metadata.sources`), or in
    `unreachable` why it could not be introspected (its tables are then not served: an
    inconsistent source, `svc.ir.source_tables`).

    `fingerprint` is the database's `CATALOG_FINGERPRINT_SQL` read in the same
    transaction just before `tables` and `functions` were (`Database.introspect`), or ""
    (a catalog built or decoded otherwise: never reused). It vouches for `tables` and
    `functions` without their `enum_rows` (data, read again every time), and for nothing
    in `sources` (each has its own). So a copy that changes `enum_rows`, `sources` or
    `unreachable` keeps it, and one whose tables or functions differ from the database's
    in any other way must set it to "" (`msgspec.structs.replace` keeps it otherwise).
    Equality ignores it: two catalogs with the same content are equal however (and
    whenever) they were read, as `run_sql`'s "did the schema change" test expects."""

    tables: tuple[DbTable, ...]
    functions: tuple[DbFunction, ...]
    sources: dict[str, DbCatalog] = {}
    unreachable: dict[str, str] = {}
    fingerprint: str = ""

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DbCatalog):
            return NotImplemented
        return self is other or (
            self.tables == other.tables
            and self.functions == other.functions
            and self.sources == other.sources
            and self.unreachable == other.unreachable
        )

    def with_sources_of(self, other: DbCatalog) -> DbCatalog:
        """This catalog with `other`'s other sources (a `default` introspected again);
        this one's `fingerprint` (its own tables are this one's)."""
        if not other.sources and not other.unreachable:
            return self
        return msgspec.structs.replace(self, sources=other.sources, unreachable=other.unreachable)

    def table_index(self) -> dict[tuple[str, str], DbTable]:
        """`{(schema, name): table}`."""
        return {(t.schema, t.name): t for t in self.tables}

    def function_index(self) -> dict[tuple[str, str], list[DbFunction]]:
        """`{(schema, name): [overloads]}`."""
        out: dict[tuple[str, str], list[DbFunction]] = {}
        for f in self.functions:
            out.setdefault((f.schema, f.name), []).append(f)
        return out


def without_enum_rows(catalog: DbCatalog) -> DbCatalog:
    """`catalog` as introspection alone gives it: no table's `enum_rows` (the same object
    when none has them), to tell whether the database's structure changed. Its
    `fingerprint` is kept: it never covers enum rows."""
    if all(t.enum_rows is None for t in catalog.tables):
        return catalog
    tables = tuple(
        t if t.enum_rows is None else msgspec.structs.replace(t, enum_rows=None)
        for t in catalog.tables
    )
    return msgspec.structs.replace(catalog, tables=tables)


_decoder = msgspec.json.Decoder(DbCatalog)


def decode_catalog(text: str | bytes) -> DbCatalog:
    """Decode the single value returned by `INTROSPECTION_SQL`."""
    return _decoder.decode(text)
