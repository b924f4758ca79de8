-- mutation m($n: bigint) { update_article(where: {}, _inc: {views: $n}) { returning { views } } }
WITH "_m" AS (
  UPDATE "public"."article" AS _w SET "views" = _w."views" + CAST(CAST($1 AS TEXT) AS BIGINT)
  WHERE
    TRUE
  RETURNING _w.*
)
SELECT
  JSON_BUILD_OBJECT(
    'returning',
    (
      SELECT
        COALESCE(
          JSON_AGG(
            ROW_TO_JSON((
              SELECT
                _e2
              FROM (
                SELECT
                  _b1."views" AS "views"
              ) AS _e2
            )) ORDER BY _b1."_o.n"
          ),
          '[]'
        )
      FROM (
        SELECT
          *,
          ROW_NUMBER() OVER () AS "_o.n"
        FROM "_m"
      ) AS _b1
    )
  );
