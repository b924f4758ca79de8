-- { author(order_by: {id: asc}) { name articles_groups(group_by: [published]) { keys { published } aggregate { count } } } }
-- variables: None
SELECT
  COALESCE(
    JSON_AGG(
      ROW_TO_JSON(
        (
          SELECT
            _e8
          FROM (
            SELECT
              _b1."name" AS "name",
              _r3."v" AS "articles_groups"
          ) AS _e8
        )
      ) ORDER BY _b1."id" ASC
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
  ORDER BY
    _t2."id" ASC
) AS _b1
LEFT OUTER JOIN LATERAL (
  SELECT
    COALESCE(
      JSON_AGG(
        JSON_BUILD_OBJECT('keys', JSON_BUILD_OBJECT('published', _g7."_k0"), 'aggregate', _g7."_a1") ORDER BY _g7."_k0" ASC
      ),
      '[]'
    ) AS "v"
  FROM (
    SELECT
      *
    FROM (
      SELECT
        _b4."published" AS "_k0",
        JSON_BUILD_OBJECT('count', COUNT(*)) AS "_a1"
      FROM (
        SELECT
          _t5.*
        FROM "public"."article" AS _t5
        WHERE
          (
            _t5."author_id" = _b1."id"
          ) AND (
            TRUE
          )
      ) AS _b4
      GROUP BY
        1
    ) AS _h6
    ORDER BY
      _h6."_k0" ASC
  ) AS _g7
) AS _r3
  ON TRUE;
