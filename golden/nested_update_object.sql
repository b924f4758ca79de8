-- mutation { update_article(where: {id: {_eq: 20}}, _set: {views: 9}, _nested: {author: {_set: {name: "Bobby"}}}) { affected_rows returning { views author { name } } } }
-- role: admin
WITH "_m" AS (
  UPDATE "public"."article" AS _w SET "views" = CAST(CAST($2 AS TEXT) AS INT)
  WHERE
    (
      _w."id" = CAST(CAST($1 AS TEXT) AS INT)
    )
  RETURNING ROW_TO_JSON(_w.*) AS "_row"
)
SELECT
  COALESCE(JSON_AGG("_row"), '[]'),
  COUNT(*)
FROM "_m";
-- $1: '20'
-- $2: '9'
WITH "_m" AS (
  UPDATE "public"."author" AS _w SET "name" = CAST($2 AS TEXT)
  WHERE
    (
      TRUE
    )
    AND EXISTS(
      SELECT
        1
      FROM JSON_TO_RECORDSET(CAST(CAST($1 AS TEXT) AS JSON)) AS _p("author_id" INT)
      WHERE
        _p."author_id" = _w."id"
    )
  RETURNING CAST(NULL AS JSON) AS "_row"
)
SELECT
  CAST('[]' AS JSON),
  COUNT(*)
FROM "_m";
-- $1: '[{"id":20,"title":"B1","author_id":2,"views":9,"editor":null}]'
-- $2: 'Bobby'
WITH "_m" AS (
  SELECT
    *
  FROM JSON_POPULATE_RECORDSET(CAST(NULL AS "public"."article"), CAST(CAST($1 AS TEXT) AS JSON))
)
SELECT
  JSON_BUILD_OBJECT(
    'affected_rows',
    2,
    'returning',
    (
      SELECT
        COALESCE(
          JSON_AGG(
            ROW_TO_JSON(
              (
                SELECT
                  _e4
                FROM (
                  SELECT
                    _b1."views" AS "views",
                    CASE
                      WHEN _b2."id" IS NULL
                      THEN NULL
                      ELSE ROW_TO_JSON((
                        SELECT
                          _e3
                        FROM (
                          SELECT
                            _b2."name" AS "name"
                        ) AS _e3
                      ))
                    END AS "author"
                ) AS _e4
              )
            ) ORDER BY _b1."_o.n"
          ),
          '[]'
        )
      FROM (
        SELECT
          *,
          ROW_NUMBER() OVER () AS "_o.n"
        FROM "_m"
      ) AS _b1
      LEFT OUTER JOIN "public"."author" AS _b2
        ON _b2."id" = _b1."author_id"
    )
  );
-- $1: '[{"id":20,"title":"B1","author_id":2,"views":9,"editor":null}]'
-- answer: {"data":{"r":{"affected_rows" : 2, "returning" : [{"views":9,"author":{"name":"Bobby"}}]}}}
