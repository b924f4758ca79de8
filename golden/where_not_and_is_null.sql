-- { author(where: {_not: {_and: [{rating: {_is_null: true}}, {born: {_is_null: false}}]}}) { id } }
-- variables: None
SELECT
  COALESCE(
    JSON_AGG(
      ROW_TO_JSON((
        SELECT
          _e3
        FROM (
          SELECT
            _b1."id" AS "id"
        ) AS _e3
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
      NOT (
        (
          _t2."rating" IS NULL
        ) AND (
          _t2."born" IS NOT NULL
        )
      )
    )
) AS _b1;
