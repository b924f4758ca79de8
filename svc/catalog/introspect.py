"""One query that describes every user table, view and function, and its decoded model.

`INTROSPECTION_SQL` returns a single JSON text (one row, one column); `decode_catalog`
turns it into a frozen `DbCatalog`. Columns are listed in attribute order, constraint
columns in key order.
"""

from __future__ import annotations

import msgspec

INTROSPECTION_SQL = r"""
SELECT json_build_object(
  'tables', coalesce((
    SELECT json_agg(json_build_object(
      'oid', c.oid::int8, 'schema', n.nspname, 'name', c.relname, 'kind', c.relkind,
      'comment', obj_description(c.oid, 'pg_class'),
      'updatable', pg_relation_is_updatable(c.oid, true),
      'columns', coalesce((
        SELECT json_agg(json_build_object(
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
          'comment', col_description(c.oid, a.attnum)
        ) ORDER BY a.attnum)
        FROM pg_attribute a
        JOIN pg_type ty ON ty.oid = a.atttypid
        JOIN pg_namespace tn ON tn.oid = ty.typnamespace
        LEFT JOIN pg_type et ON et.oid = ty.typelem AND ty.typcategory = 'A'
        WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped), '[]'),
      'constraints', coalesce((
        SELECT json_agg(json_build_object(
          'name', k.conname, 'kind', k.contype,
          'columns', (SELECT json_agg(a.attname ORDER BY u.ord)
                      FROM unnest(k.conkey) WITH ORDINALITY AS u(attnum, ord)
                      JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = u.attnum)
        ) ORDER BY k.conname)
        FROM pg_constraint k WHERE k.conrelid = c.oid AND k.contype IN ('p', 'u')), '[]'),
      'unique_indexes', coalesce((
        SELECT json_agg(json_build_object(
          'name', ic.relname,
          'columns', (SELECT json_agg(a.attname ORDER BY u.ord)
                      FROM unnest(i.indkey::int2[]) WITH ORDINALITY AS u(attnum, ord)
                      JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = u.attnum)
        ) ORDER BY ic.relname)
        FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
        WHERE i.indrelid = c.oid AND i.indisunique AND i.indpred IS NULL
          AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid)
          AND 0 <> ALL (i.indkey::int2[])), '[]'),
      'foreign_keys', coalesce((
        SELECT json_agg(json_build_object(
          'name', k.conname,
          'ref_schema', rn.nspname, 'ref_table', rc.relname,
          'columns', (SELECT json_agg(a.attname ORDER BY u.ord)
                      FROM unnest(k.conkey) WITH ORDINALITY AS u(attnum, ord)
                      JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = u.attnum),
          'ref_columns', (SELECT json_agg(a.attname ORDER BY u.ord)
                      FROM unnest(k.confkey) WITH ORDINALITY AS u(attnum, ord)
                      JOIN pg_attribute a ON a.attrelid = k.confrelid AND a.attnum = u.attnum)
        ) ORDER BY k.conname)
        FROM pg_constraint k
        JOIN pg_class rc ON rc.oid = k.confrelid
        JOIN pg_namespace rn ON rn.oid = rc.relnamespace
        WHERE k.conrelid = c.oid AND k.contype = 'f'), '[]')
    ) ORDER BY n.nspname, c.relname)
    FROM pg_class c
    JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE c.relkind IN ('r', 'v', 'm', 'f', 'p')
      AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'hdb_catalog')
      AND n.nspname NOT LIKE 'pg\_toast%' AND n.nspname NOT LIKE 'pg\_temp%'
  ), '[]'),
  'functions', coalesce((
    SELECT json_agg(json_build_object(
      'schema', n.nspname, 'name', p.proname, 'volatility', p.provolatile,
      'returns_set', p.proretset, 'return_type', format_type(p.prorettype, NULL),
      'return_type_name', rt.typname, 'return_type_schema', rtn.nspname,
      'return_type_kind', rt.typtype,
      'arg_names', coalesce(to_json(p.proargnames), '[]'),
      'arg_types', coalesce((SELECT json_agg(format_type(t, NULL) ORDER BY o)
                    FROM unnest(p.proargtypes::oid[]) WITH ORDINALITY AS u(t, o)), '[]'),
      'arg_type_names', coalesce((SELECT json_agg(at.typname ORDER BY o)
                    FROM unnest(p.proargtypes::oid[]) WITH ORDINALITY AS u(t, o)
                    JOIN pg_type at ON at.oid = u.t), '[]'),
      'arg_type_schemas', coalesce((SELECT json_agg(atn.nspname ORDER BY o)
                    FROM unnest(p.proargtypes::oid[]) WITH ORDINALITY AS u(t, o)
                    JOIN pg_type at ON at.oid = u.t
                    JOIN pg_namespace atn ON atn.oid = at.typnamespace), '[]'),
      'arg_modes', coalesce(to_json(p.proargmodes), '[]'),
      'defaults', p.pronargdefaults,
      'comment', obj_description(p.oid, 'pg_proc')
    ) ORDER BY n.nspname, p.proname)
    FROM pg_proc p
    JOIN pg_namespace n ON n.oid = p.pronamespace
    JOIN pg_type rt ON rt.oid = p.prorettype
    JOIN pg_namespace rtn ON rtn.oid = rt.typnamespace
    WHERE p.prokind = 'f'
      AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'hdb_catalog')
      AND n.nspname NOT LIKE 'pg\_toast%' AND n.nspname NOT LIKE 'pg\_temp%'
  ), '[]')
)::text
"""


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
    inconsistent source, `svc.ir.source_tables`)."""

    tables: tuple[DbTable, ...]
    functions: tuple[DbFunction, ...]
    sources: dict[str, DbCatalog] = {}
    unreachable: dict[str, str] = {}

    def with_sources_of(self, other: DbCatalog) -> DbCatalog:
        """This catalog with `other`'s other sources (a `default` introspected again)."""
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
    when none has them), to tell whether the database's structure changed."""
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
