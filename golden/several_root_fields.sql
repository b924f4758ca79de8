-- { author { id } article { id } }
-- variables: None
SELECT
  (
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
          ))
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
  ) AS "author",
  (
    SELECT
      COALESCE(
        JSON_AGG(
          ROW_TO_JSON((
            SELECT
              _e6
            FROM (
              SELECT
                _b4."id" AS "id"
            ) AS _e6
          ))
        ),
        '[]'
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
  ) AS "article";
