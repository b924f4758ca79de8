-- mutation { update_author_by_pk(pk_columns: {id: 2}, _nested: {articles: {_update: [{where: {}, _set: {title: "T"}}]}}) { id } }
-- role: admin
WITH "_m" AS (
  SELECT
    ROW_TO_JSON(_w.*) AS "_row"
  FROM "public"."author" AS _w
  WHERE
    (
      (
        _w."id" = CAST(CAST($1 AS TEXT) AS INT)
      )
    )   FOR UPDATE OF _w
)
SELECT
  COALESCE(JSON_AGG("_row"), '[]'),
  COUNT(*)
FROM "_m";
-- $1: '2'
WITH "_m" AS (
  UPDATE "public"."article" AS _w SET "title" = CAST($2 AS TEXT)
  WHERE
    (
      TRUE
    )
    AND EXISTS(
      SELECT
        1
      FROM JSON_TO_RECORDSET(CAST(CAST($1 AS TEXT) AS JSON)) AS _p("id" INT)
      WHERE
        _p."id" = _w."author_id"
    )
  RETURNING CAST(NULL AS JSON) AS "_row"
)
SELECT
  CAST('[]' AS JSON),
  COUNT(*)
FROM "_m";
-- $1: '[{"id":2,"name":"Bob","rating":2}]'
-- $2: 'T'
WITH "_m" AS (
  SELECT
    *
  FROM JSON_POPULATE_RECORDSET(CAST(NULL AS "public"."author"), CAST(CAST($1 AS TEXT) AS JSON))
)
SELECT
  (
    SELECT
      JSON_AGG(
        ROW_TO_JSON((
          SELECT
            _e2
          FROM (
            SELECT
              _b1."id" AS "id"
          ) AS _e2
        ))
      ) -> 0
    FROM (
      SELECT
        *,
        ROW_NUMBER() OVER () AS "_o.n"
      FROM "_m"
    ) AS _b1
  );
-- $1: '[{"id":2,"name":"Bob","rating":2}]'
-- answer: {"data":{"r":{"id":2}}}
