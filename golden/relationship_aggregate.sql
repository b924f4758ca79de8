-- { author { name articles_aggregate(where: {published: {_eq: true}}) { aggregate { count } } } }
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
              _b1."name" AS "name",
              _r3."v" AS "articles_aggregate"
          ) AS _e6
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
    JSON_BUILD_OBJECT('aggregate', JSON_BUILD_OBJECT('count', COUNT(*))) AS "v"
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
  ) AS _b4
) AS _r3
  ON TRUE;
