-- mutation { update_author_by_pk(pk_columns: {id: 1}, _set: {name: "E"}, _nested: {articles: {_delete: {id: {_eq: 11}}, _update: [{where: {id: {_eq: 10}}, _set: {title: "mine"}}], _insert: {data: [{id: 12, title: "new"}]}}}) { articles(order_by: {id: asc}) { id title editor } } }
-- role: editor
WITH "_m" AS (
  UPDATE "public"."author" AS _w SET "name" = CAST($2 AS TEXT)
  WHERE
    (
      (
        _w."id" = CAST(CAST($1 AS TEXT) AS INT)
      )
    )
  RETURNING ROW_TO_JSON(_w.*) AS "_row", (
    _w."rating" <= CAST(CAST($3 AS TEXT) AS INT)
  ) AS "_check"
)
SELECT
  COALESCE(JSON_AGG("_row"), '[]'),
  COUNT(*),
  COALESCE(BOOL_AND(COALESCE("_check", FALSE)), TRUE)
FROM "_m";
-- $1: '1'
-- $2: 'E'
-- $3: '10'
WITH "_m" AS (
  DELETE FROM "public"."article" AS _w
  WHERE
    (
      (
        _w."id" = CAST(CAST($1 AS TEXT) AS INT)
      )
      AND (
        _w."views" = CAST(CAST($2 AS TEXT) AS INT)
      )
    )
    AND EXISTS(
      SELECT
        1
      FROM JSON_TO_RECORDSET(CAST(CAST($3 AS TEXT) AS JSON)) AS _p("id" INT)
      WHERE
        _p."id" = _w."author_id"
    )
  RETURNING 1
)
SELECT
  COUNT(*)
FROM "_m";
-- $1: '11'
-- $2: '0'
-- $3: '[{"id":1,"name":"E","rating":1}]'
WITH "_m" AS (
  UPDATE "public"."article" AS _w SET "title" = CAST($4 AS TEXT), "editor" = CAST($5 AS TEXT)
  WHERE
    (
      (
        _w."id" = CAST(CAST($1 AS TEXT) AS INT)
      )
      AND (
        _w."author_id" = CAST(CAST($2 AS TEXT) AS INT)
      )
    )
    AND EXISTS(
      SELECT
        1
      FROM JSON_TO_RECORDSET(CAST(CAST($3 AS TEXT) AS JSON)) AS _p("id" INT)
      WHERE
        _p."id" = _w."author_id"
    )
  RETURNING CAST(NULL AS JSON) AS "_row", (
    _w."views" >= CAST(CAST($6 AS TEXT) AS INT)
  ) AS "_check"
)
SELECT
  CAST('[]' AS JSON),
  COUNT(*),
  COALESCE(BOOL_AND(COALESCE("_check", FALSE)), TRUE)
FROM "_m";
-- $1: '10'
-- $2: '1'
-- $3: '[{"id":1,"name":"E","rating":1}]'
-- $4: 'mine'
-- $5: '1'
-- $6: '0'
WITH "_m" AS (
  INSERT INTO "public"."article" AS _w (
    "id",
    "title",
    "author_id"
  )
  VALUES
    (CAST(CAST($1 AS TEXT) AS INT), CAST($2 AS TEXT), CAST(CAST($3 AS TEXT) AS INT))
  RETURNING 1, (
    _w."title" <> CAST($4 AS TEXT)
  ) AS "_check"
)
SELECT
  COUNT(*),
  COALESCE(BOOL_AND(COALESCE("_check", FALSE)), TRUE)
FROM "_m";
-- $1: '12'
-- $2: 'new'
-- $3: '1'
-- $4: 'bad'
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
            _e6
          FROM (
            SELECT
              _r2."v" AS "articles"
          ) AS _e6
        ))
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
                    _b3."title" AS "title",
                    _b3."editor" AS "editor"
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
-- $1: '[{"id":1,"name":"E","rating":1}]'
-- answer: {"data":{"r":{"articles":[{"id":10,"title":"mine","editor":"1"}, {"id":12,"title":"new","editor":null}]}}}
