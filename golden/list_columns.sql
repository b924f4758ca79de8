-- { author { id name } }
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
              _b1."id" AS "id",
              _b1."name" AS "name"
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
) AS _b1;
