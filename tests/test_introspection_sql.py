"""`INTROSPECTION_SQL` (set-based: CTEs and hash joins) decodes to the same `DbCatalog`
as the statement it replaced (one correlated subquery per table, a scan of
`pg_constraint` per unique index), kept below as `PER_TABLE_SQL`, the oracle, on a
schema with every kind of object the catalog reports; and its plan has no subquery run
per relation, so it stays linear in the number of tables (10,000 tables: 9.4 s before,
well under a second after; see ARCHITECTURE.md "Catalog introspection")."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import asyncpg
import pytest

from svc.catalog.introspect import INTROSPECTION_SQL, DbCatalog, decode_catalog
from tests.support import create_database

# The statement as it was before the set-based rewrite: the oracle for equality.
PER_TABLE_SQL = r"""
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

# Every kind of object the catalog reports, and the ones it must leave out.
RICH_SCHEMA = r"""
CREATE SCHEMA hdb_catalog;
CREATE TABLE hdb_catalog.hidden (id int PRIMARY KEY, code text UNIQUE);
CREATE SCHEMA other;
CREATE SCHEMA "Odd ""q"" schema";
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE TYPE other.pair AS (a int, b text);
CREATE DOMAIN positive AS int CHECK (VALUE > 0);

CREATE TABLE author (
  id serial PRIMARY KEY,
  name text NOT NULL,
  gone int,
  email varchar(80) UNIQUE,
  tags text[] DEFAULT '{}',
  scores numeric(10, 2)[],
  mood mood,
  moods mood[],
  rank positive,
  pair other.pair,
  born timestamptz DEFAULT now(),
  ident bigint GENERATED ALWAYS AS IDENTITY,
  ident2 int GENERATED BY DEFAULT AS IDENTITY,
  upper_name text GENERATED ALWAYS AS (upper(name)) STORED
);
ALTER TABLE author DROP COLUMN gone;
COMMENT ON TABLE author IS 'Writers';
COMMENT ON COLUMN author.name IS 'Full "name"';
CREATE UNIQUE INDEX author_lower_name ON author (lower(name));
CREATE UNIQUE INDEX author_name_partial ON author (name) WHERE name <> '';
CREATE UNIQUE INDEX author_name_rank ON author (rank, name);
CREATE UNIQUE INDEX author_b_idx ON author (born);
CREATE INDEX author_plain ON author (mood);

CREATE TABLE other.book (
  isbn text,
  edition int,
  author_id int NOT NULL REFERENCES author (id),
  title text,
  PRIMARY KEY (edition, isbn),
  CONSTRAINT book_title_key UNIQUE (title, author_id),
  CONSTRAINT a_check CHECK (edition > 0)
);
CREATE TABLE review (
  id int PRIMARY KEY,
  book_isbn text, book_edition int,
  born timestamptz REFERENCES author (born),
  hidden_code text REFERENCES hdb_catalog.hidden (code),
  FOREIGN KEY (book_edition, book_isbn) REFERENCES other.book (edition, isbn),
  CONSTRAINT z_self FOREIGN KEY (id) REFERENCES review (id)
);
CREATE TABLE "Odd ""q"" schema"."Odd table" ("Odd col" int PRIMARY KEY, "x""y" text);
COMMENT ON COLUMN "Odd ""q"" schema"."Odd table"."x""y" IS 'quoted';
CREATE TABLE measurement (day date NOT NULL, v int, PRIMARY KEY (day)) PARTITION BY RANGE (day);
CREATE TABLE measurement_2026 PARTITION OF measurement
  FOR VALUES FROM ('2026-01-01') TO ('2027-01-01');
CREATE TABLE ruled (id int PRIMARY KEY);
CREATE RULE ruled_no_delete AS ON DELETE TO ruled DO INSTEAD NOTHING;
CREATE TABLE no_columns ();

CREATE VIEW author_names AS SELECT id, name FROM author;
COMMENT ON VIEW author_names IS 'names only';
CREATE VIEW author_counts AS SELECT mood, count(*) AS n FROM author GROUP BY mood;
CREATE VIEW ruled_view AS SELECT id FROM ruled;
CREATE RULE ruled_view_insert AS ON INSERT TO ruled_view DO INSTEAD
  INSERT INTO ruled VALUES (NEW.id);
CREATE MATERIALIZED VIEW author_mv AS SELECT id, tags FROM author;
COMMENT ON MATERIALIZED VIEW author_mv IS 'materialized';

CREATE FUNCTION search_authors(q text, lim int DEFAULT 10) RETURNS SETOF author
  LANGUAGE sql STABLE AS $$ SELECT * FROM author WHERE name ILIKE q LIMIT lim $$;
COMMENT ON FUNCTION search_authors(text, int) IS 'Search';
CREATE FUNCTION other.add(a int, b int) RETURNS int LANGUAGE sql IMMUTABLE AS $$ SELECT a + b $$;
CREATE FUNCTION other.add(a numeric, b numeric) RETURNS numeric
  LANGUAGE sql IMMUTABLE AS $$ SELECT a + b $$;
CREATE FUNCTION other.add(a text) RETURNS text LANGUAGE sql AS $$ SELECT a $$;
CREATE FUNCTION split_pair(IN p other.pair, OUT a int, OUT b text)
  LANGUAGE sql AS $$ SELECT p.a, p.b $$;
CREATE FUNCTION moods_of(m mood[], VARIADIC extra int[]) RETURNS mood[]
  LANGUAGE sql AS $$ SELECT m $$;
CREATE FUNCTION no_args() RETURNS void LANGUAGE sql VOLATILE AS $$ $$;
CREATE FUNCTION trig() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
CREATE PROCEDURE a_procedure() LANGUAGE sql AS $$ SELECT 1 $$;
CREATE AGGREGATE my_sum(int) (SFUNC = int4pl, STYPE = int);
CREATE FUNCTION hdb_catalog.hidden_fn() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$;
"""


def _run(url: str, sql: str, body: str) -> str:
    async def go() -> str:
        conn = await asyncpg.connect(url)
        try:
            if sql:
                await conn.execute(sql)
            text: str = await conn.fetchval(body)
            return text
        finally:
            await conn.close()

    return asyncio.run(go())


@pytest.fixture(scope="module")
def rich_url(pg_url: str) -> str:
    url = create_database(pg_url, prefix="introsql")
    _run(url, RICH_SCHEMA, "SELECT 'ok'")
    return url


@pytest.fixture(scope="module")
def rich_catalog(rich_url: str) -> DbCatalog:
    return decode_catalog(_run(rich_url, "", INTROSPECTION_SQL))


def test_the_set_based_statement_decodes_to_the_per_table_one(
    rich_url: str, rich_catalog: DbCatalog
) -> None:
    assert rich_catalog == decode_catalog(_run(rich_url, "", PER_TABLE_SQL))


def test_an_empty_database_decodes_to_the_per_table_one(pg_url: str) -> None:
    url = create_database(pg_url, prefix="introsql_empty")
    new, old = _run(url, "", INTROSPECTION_SQL), _run(url, "", PER_TABLE_SQL)
    assert decode_catalog(new) == decode_catalog(old) == DbCatalog(tables=(), functions=())


def test_the_rich_schema_is_reported_in_full(rich_catalog: DbCatalog) -> None:
    """Not only equal to the oracle: what each part of the statement must find."""
    tables = rich_catalog.table_index()
    assert ("hdb_catalog", "hidden") not in tables
    assert {t.kind for t in rich_catalog.tables} == {"r", "p", "v", "m"}
    author = tables["public", "author"]
    assert author.comment == "Writers"
    assert author.updatable == 28  # pg_relation_is_updatable of any table
    names = [c.name for c in author.columns]
    assert "gone" not in names and names[:2] == ["id", "name"]
    by_name = {c.name: c for c in author.columns}
    assert by_name["name"].comment == 'Full "name"' and not by_name["name"].nullable
    assert by_name["tags"].elem_type_name == "text" and by_name["tags"].type == "text[]"
    assert by_name["email"].type == "character varying"  # format_type without typmod
    assert by_name["ident"].generated and by_name["ident"].has_default
    assert not by_name["ident2"].generated and by_name["ident2"].has_default
    assert by_name["upper_name"].generated
    assert by_name["pair"].type_schema == "other" and by_name["mood"].type_kind == "e"
    assert [(k.name, k.kind, k.columns) for k in author.constraints] == [
        ("author_email_key", "u", ("email",)),
        ("author_pkey", "p", ("id",)),
    ]
    # expression and partial indexes, and the one a foreign key references, are left out
    assert [(i.name, i.columns) for i in author.unique_indexes] == [
        ("author_name_rank", ("rank", "name"))
    ]
    book = tables["other", "book"]
    assert [(k.name, k.columns) for k in book.constraints] == [
        ("book_pkey", ("edition", "isbn")),
        ("book_title_key", ("title", "author_id")),
    ]
    review = tables["public", "review"]
    assert [(f.name, f.ref_schema, f.ref_table, f.columns, f.ref_columns) for f in
            review.foreign_keys] == [
        ("review_book_edition_book_isbn_fkey", "other", "book",
         ("book_edition", "book_isbn"), ("edition", "isbn")),
        ("review_born_fkey", "public", "author", ("born",), ("born",)),
        ("review_hidden_code_fkey", "hdb_catalog", "hidden", ("hidden_code",), ("code",)),
        ("z_self", "public", "review", ("id",), ("id",)),
    ]  # fmt: skip
    odd = tables['Odd "q" schema', "Odd table"]
    assert [c.comment for c in odd.columns] == [None, "quoted"]
    assert tables["public", "no_columns"].columns == ()
    assert tables["public", "author_names"].comment == "names only"
    assert tables["public", "author_names"].updatable == 28
    assert tables["public", "author_counts"].updatable == 0
    assert tables["public", "ruled_view"].updatable & 8  # INSERT through its rule
    assert tables["public", "author_mv"].comment == "materialized"
    assert tables["public", "measurement"].kind == "p"
    functions = rich_catalog.function_index()
    assert ("public", "a_procedure") not in functions and ("public", "my_sum") not in functions
    assert ("hdb_catalog", "hidden_fn") not in functions
    assert [f.arg_types for f in functions["other", "add"]] == [
        ("integer", "integer"),
        ("numeric", "numeric"),
        ("text",),
    ]
    search = functions["public", "search_authors"][0]
    assert (search.comment, search.defaults, search.returns_set) == ("Search", 1, True)
    assert search.return_type_name == "author" and search.volatility == "s"
    split = functions["public", "split_pair"][0]
    assert split.arg_modes == ("i", "o", "o") and split.arg_type_schemas == ("other",)
    assert functions["public", "moods_of"][0].arg_type_names == ("_mood", "_int4")
    assert functions["public", "no_args"][0].arg_types == ()


def _subplans(node: dict[str, Any]) -> list[str]:
    """The names of the subqueries a plan runs once per outer row (`SubPlan n`)."""
    found = [node["Subplan Name"]] if node.get("Parent Relationship") == "SubPlan" else []
    for child in node.get("Plans", []):
        found += _subplans(child)
    return found


def test_no_subquery_runs_once_per_relation(rich_url: str) -> None:
    """Only the columns of a unique index that backs no constraint (rare) are looked up
    per row; every per-table part is one join over the whole catalog, and the estimated
    cost stays far below `jit_above_cost` (JIT compilation alone took 1.4 s at 10,000
    tables)."""
    plan = json.loads(_run(rich_url, "", "EXPLAIN (FORMAT JSON) " + INTROSPECTION_SQL))
    root = plan[0]["Plan"]
    assert len(_subplans(root)) == 1, _subplans(root)
    assert root["Total Cost"] < 20_000
    old = json.loads(_run(rich_url, "", "EXPLAIN (FORMAT JSON) " + PER_TABLE_SQL))
    assert len(_subplans(old[0]["Plan"])) > 5  # the check can tell the old shape apart
