-- { article(distinct_on: [author_id], order_by: [{author_id: asc}, {views: desc}]) { author_id views } }
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
              _b1."author_id" AS "author_id",
              _b1."views" AS "views"
          ) AS _e3
        )
      ) ORDER BY _b1."author_id" ASC, _b1."views" DESC
    ),
    '[]'
  ) AS "v"
FROM (
  SELECT DISTINCT ON (_t2."author_id")
    _t2.*
  FROM "public"."article" AS _t2
  WHERE
    (
      TRUE
    )
  ORDER BY
    _t2."author_id" ASC,
    _t2."views" DESC
) AS _b1;
