-- { author(order_by: {articles_aggregate: {count: desc}}) { id } }
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
      )) ORDER BY _b1."_o.0" DESC
    ),
    '[]'
  ) AS "v"
FROM (
  SELECT
    _t2.*,
    (
      SELECT
        COUNT(*)
      FROM "public"."article" AS _a3
      WHERE
        _a3."author_id" = _t2."id"
    ) AS "_o.0"
  FROM "public"."author" AS _t2
  WHERE
    (
      TRUE
    )
  ORDER BY
    (
      SELECT
        COUNT(*)
      FROM "public"."article" AS _a3
      WHERE
        _a3."author_id" = _t2."id"
    ) DESC
) AS _b1;
