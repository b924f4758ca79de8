-- { author(where: {articles: {published: {_eq: true}}}) { id } }
-- variables: None
SELECT
  COALESCE(
    JSON_AGG(
      ROW_TO_JSON((
        SELECT
          _e4
        FROM (
          SELECT
            _b1."id" AS "id"
        ) AS _e4
      ))
    ),
    '[]'
  ) AS "v"
FROM (
  SELECT
    _t2.*
  FROM "public"."author" AS _t2
  WHERE
    (
      EXISTS(
        SELECT
          1
        FROM "public"."article" AS _x3
        WHERE
          (
            _x3."author_id" = _t2."id"
          )
          AND (
            _x3."published" = CAST(CAST($1 AS TEXT) AS BOOLEAN)
          )
      )
    )
) AS _b1;
