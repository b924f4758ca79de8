-- mutation { update_author_by_pk(pk_columns: {id: 1}, _set: {name: "Ada L"}, _nested: {articles: {_update: [{where: {views: {_gt: 1}}, _inc: {views: 1}}]}}) { name articles(order_by: {id: asc}) { id views } } }
-- role: admin
WITH "_m" AS (
  UPDATE "public"."author" AS _w SET "name" = CAST($2 AS TEXT)
  WHERE
    (
      (
        _w."id" = CAST(CAST($1 AS TEXT) AS INT)
      )
    )
  RETURNING ROW_TO_JSON(_w.*) AS "_row"
)
SELECT
  COALESCE(JSON_AGG("_row"), '[]'),
  COUNT(*)
FROM "_m";
-- $1: '1'
-- $2: 'Ada L'
WITH "_m" AS (
  UPDATE "public"."article" AS _w SET "views" = _w."views" + CAST(CAST($3 AS TEXT) AS INT)
  WHERE
    (
      _w."views" > CAST(CAST($1 AS TEXT) AS INT)
    )
    AND EXISTS(
      SELECT
        1
      FROM JSON_TO_RECORDSET(CAST(CAST($2 AS TEXT) AS JSON)) AS _p("id" INT)
      WHERE
        _p."id" = _w."author_id"
    )
  RETURNING CAST(NULL AS JSON) AS "_row"
)
SELECT
  CAST('[]' AS JSON),
  COUNT(*)
FROM "_m";
-- $1: '1'
-- $2: '[{"id":1,"name":"Ada L","rating":1}]'
-- $3: '1'
WITH "_m" AS (
  SELECT
    *
  FROM JSON_POPULATE_RECORDSET(CAST(NULL AS "public"."author"), CAST(CAST($1 AS TEXT) AS JSON))
)
SELECT
  (
    SELECT
      JSON_AGG(
        ROW_TO_JSON(
          (
            SELECT
              _e6
            FROM (
              SELECT
                _b1."name" AS "name",
                _r2."v" AS "articles"
            ) AS _e6
          )
        )
      ) -> 0
    FROM (
      SELECT
        *,
        ROW_NUMBER() OVER () AS "_o.n"
      FROM "_m"
    ) AS _b1
    LEFT OUTER JOIN LATERAL (
      SELECT
        COALESCE(
          JSON_AGG(
            ROW_TO_JSON(
              (
                SELECT
                  _e5
                FROM (
                  SELECT
                    _b3."id" AS "id",
                    _b3."views" AS "views"
                ) AS _e5
              )
            ) ORDER BY _b3."id" ASC
          ),
          '[]'
        ) AS "v"
      FROM (
        SELECT
          _t4.*
        FROM "public"."article" AS _t4
        WHERE
          (
            _t4."author_id" = _b1."id"
          ) AND (
            TRUE
          )
        ORDER BY
          _t4."id" ASC
      ) AS _b3
    ) AS _r2
      ON TRUE
  );
-- $1: '[{"id":1,"name":"Ada L","rating":1}]'
-- answer: {"data":{"r":{"name":"Ada L","articles":[{"id":10,"views":6}, {"id":11,"views":0}]}}}
