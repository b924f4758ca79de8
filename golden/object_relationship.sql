-- { article { title author { name } } }
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
              _b1."title" AS "title",
              _r3."v" AS "author"
          ) AS _e6
        )
      )
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
) AS _b1
LEFT OUTER JOIN LATERAL (
  SELECT
    ROW_TO_JSON((
      SELECT
        _e5
      FROM (
        SELECT
          _b4."name" AS "name"
      ) AS _e5
    )) AS "v"
  FROM "public"."author" AS _b4
  WHERE
    _b4."id" = _b1."author_id"
) AS _r3
  ON TRUE;
