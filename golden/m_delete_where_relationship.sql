-- mutation { delete_comment(where: {article: {title: {_eq: "One"}}}) { affected_rows returning { text } } }
WITH "_m" AS (
  DELETE FROM "public"."comment" AS _w
  WHERE
    EXISTS(
      SELECT
        1
      FROM "public"."article" AS _x1
      WHERE
        (
          _x1."id" = _w."article_id"
        ) AND (
          _x1."title" = CAST($1 AS TEXT)
        )
    )
  RETURNING _w.*
)
SELECT
  JSON_BUILD_OBJECT(
    'affected_rows',
    (
      SELECT
        COUNT(*)
      FROM "_m"
    ),
    'returning',
    (
      SELECT
        COALESCE(
          JSON_AGG(
            ROW_TO_JSON((
              SELECT
                _e3
              FROM (
                SELECT
                  _b2."text" AS "text"
              ) AS _e3
            )) ORDER BY _b2."_o.n"
          ),
          '[]'
        )
      FROM (
        SELECT
          *,
          ROW_NUMBER() OVER () AS "_o.n"
        FROM "_m"
      ) AS _b2
    )
  );
