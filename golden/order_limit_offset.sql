-- { article(order_by: [{views: desc_nulls_last}, {id: asc}], limit: 2, offset: 1) { id } }
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
      )) ORDER BY _b1."views" DESC NULLS LAST, _b1."id" ASC
    ),
    '[]'
  ) AS "v"
FROM (
  SELECT
    _t2.*
  FROM "public"."article" AS _t2
  WHERE
    (
      TRUE
    )
  ORDER BY
    _t2."views" DESC NULLS LAST,
    _t2."id" ASC
  LIMIT CAST(CAST($1 AS TEXT) AS INT)
  OFFSET CAST(CAST($2 AS TEXT) AS INT)
) AS _b1;
