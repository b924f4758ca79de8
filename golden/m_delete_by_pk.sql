-- mutation { delete_comment_by_pk(id: 2) { id text } }
WITH "_m" AS (
  DELETE FROM "public"."comment" AS _w
  WHERE
    (
      _w."id" = CAST(CAST($1 AS TEXT) AS INT)
    )
  RETURNING _w.*
)
SELECT
  (
    SELECT
      JSON_AGG(
        ROW_TO_JSON(
          (
            SELECT
              _e2
            FROM (
              SELECT
                _b1."id" AS "id",
                _b1."text" AS "text"
            ) AS _e2
          )
        )
      ) -> 0
    FROM (
      SELECT
        *,
        ROW_NUMBER() OVER () AS "_o.n"
      FROM "_m"
    ) AS _b1
  );
