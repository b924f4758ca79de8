-- { author { name articles(where: {published: {_eq: true}}, order_by: {id: desc}, limit: 5) { title } } }
-- variables: None
SELECT
  COALESCE(
    JSON_AGG(
      ROW_TO_JSON(
        (
          SELECT
            _e7
          FROM (
            SELECT
              _b1."name" AS "name",
              _r3."v" AS "articles"
          ) AS _e7
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
) AS _b1
LEFT OUTER JOIN LATERAL (
  SELECT
    COALESCE(
      JSON_AGG(
        ROW_TO_JSON((
          SELECT
            _e6
          FROM (
            SELECT
              _b4."title" AS "title"
          ) AS _e6
        )) ORDER BY _b4."id" DESC
      ),
      '[]'
    ) AS "v"
  FROM (
    SELECT
      _t5.*
    FROM "public"."article" AS _t5
    WHERE
      (
        _t5."author_id" = _b1."id"
      )
      AND (
        _t5."published" = CAST(CAST($1 AS TEXT) AS BOOLEAN)
      )
    ORDER BY
      _t5."id" DESC
    LIMIT CAST(CAST($2 AS TEXT) AS INT)
  ) AS _b4
) AS _r3
  ON TRUE;
