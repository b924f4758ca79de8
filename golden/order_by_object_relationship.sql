-- { article(order_by: {author: {name: asc}}) { id } }
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
      )) ORDER BY _b1."_o.0" ASC
    ),
    '[]'
  ) AS "v"
FROM (
  SELECT
    _t2.*,
    (
      SELECT
        _o3."name"
      FROM "public"."author" AS _o3
      WHERE
        _o3."id" = _t2."author_id"
      LIMIT 1
    ) AS "_o.0"
  FROM "public"."article" AS _t2
  WHERE
    (
      TRUE
    )
  ORDER BY
    (
      SELECT
        _o3."name"
      FROM "public"."author" AS _o3
      WHERE
        _o3."id" = _t2."author_id"
      LIMIT 1
    ) ASC
) AS _b1;
