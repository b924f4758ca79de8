-- { comment { text article { title } } }
-- variables: None
SELECT
  COALESCE(
    JSON_AGG(
      ROW_TO_JSON(
        (
          SELECT
            _e6
          FROM (
            SELECT
              _b1."text" AS "text",
              _r3."v" AS "article"
          ) AS _e6
        )
      )
    ),
    '[]'
  ) AS "v"
FROM (
  SELECT
    _t2.*
  FROM "public"."comment" AS _t2
  WHERE
    (
      TRUE
    )
) AS _b1
LEFT OUTER JOIN LATERAL (
  SELECT
    ROW_TO_JSON((
      SELECT
        _e5
      FROM (
        SELECT
          _b4."title" AS "title"
      ) AS _e5
    )) AS "v"
  FROM "public"."article" AS _b4
  WHERE
    _b4."id" = _b1."article_id"
) AS _r3
  ON TRUE;
