-- { article(where: {author: {name: {_eq: "Ada"}}}) { id } }
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
  FROM "public"."article" AS _t2
  WHERE
    (
      EXISTS(
        SELECT
          1
        FROM "public"."author" AS _x3
        WHERE
          (
            _x3."id" = _t2."author_id"
          ) AND (
            _x3."name" = CAST($1 AS TEXT)
          )
      )
    )
) AS _b1;
