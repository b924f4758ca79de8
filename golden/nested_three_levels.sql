-- { author { name articles { title comments { text article { id } } } } }
-- variables: None
SELECT
  COALESCE(
    JSON_AGG(
      ROW_TO_JSON(
        (
          SELECT
            _e14
          FROM (
            SELECT
              _b1."name" AS "name",
              COALESCE(_r3."v", '[]') AS "articles"
          ) AS _e14
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
LEFT OUTER JOIN (
  SELECT
    _b4."author_id" AS "_k0",
    JSON_AGG(
      ROW_TO_JSON(
        (
          SELECT
            _e13
          FROM (
            SELECT
              _b4."title" AS "title",
              COALESCE(_r6."v", '[]') AS "comments"
          ) AS _e13
        )
      )
    ) AS "v"
  FROM (
    SELECT
      _t5.*
    FROM "public"."article" AS _t5
    WHERE
      (
        TRUE
      )
  ) AS _b4
  LEFT OUTER JOIN (
    SELECT
      _b7."article_id" AS "_k0",
      JSON_AGG(
        ROW_TO_JSON(
          (
            SELECT
              _e12
            FROM (
              SELECT
                _b7."text" AS "text",
                _r9."v" AS "article"
            ) AS _e12
          )
        )
      ) AS "v"
    FROM (
      SELECT
        _t8.*
      FROM "public"."comment" AS _t8
      WHERE
        (
          TRUE
        )
    ) AS _b7
    LEFT OUTER JOIN LATERAL (
      SELECT
        ROW_TO_JSON((
          SELECT
            _e11
          FROM (
            SELECT
              _b10."id" AS "id"
          ) AS _e11
        )) AS "v"
      FROM "public"."article" AS _b10
      WHERE
        _b10."id" = _b7."article_id"
    ) AS _r9
      ON TRUE
    GROUP BY
      _b7."article_id"
  ) AS _r6
    ON _r6."_k0" = _b4."id"
  GROUP BY
    _b4."author_id"
) AS _r3
  ON _r3."_k0" = _b1."id";
