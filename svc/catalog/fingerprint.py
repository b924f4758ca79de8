"""A cheap fingerprint of the Postgres system catalogs that `INTROSPECTION_SQL` reads.

`CATALOG_FINGERPRINT_SQL` returns one JSON text (one row, one column): the session
settings and server identity the introspection's output depends on, and for each catalog
`[row count, sum of its rows' xmin]`. Two equal fingerprints mean the introspection would
return the same catalog (up to the hole described below), so `Database.introspect` reuses
the previous `DbCatalog`'s tables and functions instead of running the introspection
statement (0.65 s at 10,000 tables) and decoding it (0.1 to 0.6 s). A fingerprint that
changed when the introspected part did not (a `TRUNCATE`, a temporary table, `GRANT`,
`REFRESH MATERIALIZED VIEW`, `VACUUM FULL` all write catalog rows) only costs one
introspection. This is svc's own optimisation: the reference (Hasura v2) keeps its
database introspection between metadata changes and reads it again on `reload_metadata`
and after `run_sql`; svc reads it again whenever the fingerprint moved, which is at least
as fresh.

The catalogs are every one the introspection reads, directly or through the functions it
calls: `pg_class`, `pg_attribute`, `pg_constraint`, `pg_index`, `pg_proc`, `pg_type`,
`pg_namespace` and `pg_description` (its joins; `format_type` reads `pg_type` and
`pg_namespace`), `pg_rewrite` and `pg_trigger` (`pg_relation_is_updatable` on a view reads
its rules, its `INSTEAD OF` triggers and its base relation), and `pg_foreign_table`,
`pg_foreign_server` and `pg_foreign_data_wrapper` (on a foreign table it asks the FDW's
handler, whose usual answer depends on the server's and table's options). Beside them:
`server_version_num`, the postmaster's start time and the database's oid (a database
dropped and created again, or a new cluster behind the same URL, where transaction ids
start over, never matches an old fingerprint; a restart costs one introspection), and
`current_schemas(true)` and `quote_all_identifiers` (`format_type` qualifies a type that
is not on the search path and quotes per that setting).

Why count and sum cannot miss a change in practice: every DDL statement (and `COMMENT`)
inserts, deletes or updates rows of these catalogs, and an update is a new row version
with the writing transaction's id as `xmin`. Postgres updates catalog rows in place (no
new version) only for statistics and frozen-xid bookkeeping (`relpages`, `reltuples`,
`relallvisible`, `relhasindex`, `relfrozenxid`, ... by VACUUM, ANALYZE and CREATE INDEX;
`pg_index`'s validity flags in old versions), none of which the introspection reads;
freezing keeps a row's raw `xmin` (Postgres 9.4 and later).
Between two fingerprints, a catalog's count changes unless as many row versions appeared
as disappeared. Then the ones that disappeared were visible to the first read (their
writers had committed before its snapshot) and the new ones were not (their writers had
not); transaction ids are handed out in increasing order, so a writer that had not even
started at the first read has a larger id than every row that read saw, and the sum
grows. The theoretical hole: a writer already running during the first read (its id
older than some committed rows') replaces rows newer than itself with exactly
compensating ids in one catalog, counts and sums both equal; or a row's 32-bit id comes
back after a wraparound (2**32 transactions) into such an exact compensation. Rows
created and dropped again between two reads (a table created and dropped) leave the
catalog as it was, so equal fingerprints are then right. Catalogs a function reads
through the catalog caches (`format_type`, `pg_relation_is_updatable`) are at least as
new as the fingerprint, read first: a difference only costs an introspection.

The sum is computed without `xmin::text::bigint` (half the statement's time at 10,000
tables): `age(xmin)` is `now - xmin` as a 32-bit difference, `now` being the transaction's
stable id, recovered as `age('3') + 3`, so `now - age(xmin)` is `xmin` itself while the
server has used fewer than 2**31 transaction ids (in general `xmin` shifted into the
2**32 ids around `now`: a row older than 2**31 ids moves once, a false change). Rows with
a permanent `xmin` (1, bootstrap, or 2, frozen before 9.4), whose `age` is the constant
2147483647, are counted but not summed. The statement is one sequential scan of each
catalog: about 35 ms at 10,000 tables (pg_attribute alone, 213,000 rows, is 19 ms), where
`xmin::text::bigint` took 70 ms.
"""

from __future__ import annotations

#: The catalogs `INTROSPECTION_SQL` depends on, in the fingerprint's order.
FINGERPRINT_CATALOGS = (
    "pg_class",
    "pg_attribute",
    "pg_constraint",
    "pg_index",
    "pg_proc",
    "pg_type",
    "pg_namespace",
    "pg_description",
    "pg_rewrite",
    "pg_trigger",
    "pg_foreign_table",
    "pg_foreign_server",
    "pg_foreign_data_wrapper",
)

# `[count, sum of xmin]` of one catalog; permanent ids (age 2147483647) are not summed.
_PART = (
    "  '{name}', (SELECT json_build_array(count(*),"
    " sum((SELECT x FROM now_xid) - nullif(age(xmin), 2147483647)))"
    " FROM pg_catalog.{name})"
)

CATALOG_FINGERPRINT_SQL = (
    """-- the transaction's stable id (`age` counts from it); 3 is the first normal id
WITH now_xid AS (SELECT age('3'::xid)::int8 + 3 AS x)
SELECT json_build_object(
  'server', current_setting('server_version_num'),
  'started', extract(epoch FROM pg_postmaster_start_time()),
  'database', (SELECT d.oid FROM pg_catalog.pg_database d WHERE d.datname = current_database()),
  'search_path', current_schemas(true),
  'quote_all_identifiers', current_setting('quote_all_identifiers'),
"""
    + ",\n".join(_PART.format(name=name) for name in FINGERPRINT_CATALOGS)
    + "\n)::text\n"
)
