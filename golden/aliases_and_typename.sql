-- { a: author(limit: 1) { __typename key: id } t: __typename }
-- variables: None
SELECT
  COALESCE(
    JSON_AGG(
      ROW_TO_JSON(
        (
          SELECT
            _e3
          FROM (
            SELECT
              'author' AS "__typename",
              _b1."id" AS "key"
          ) AS _e3
        )
      )
    ),
    '[]'
  ) AS "v"
FROM (
  SELECT
    _t2.*
  FROM "public"."author" AS _t2
  WHERE
    (
      TRUE
    )
  LIMIT CAST(CAST($1 AS TEXT) AS INT)
) AS _b1;
