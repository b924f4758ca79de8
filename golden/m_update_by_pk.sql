-- mutation { update_author_by_pk(pk_columns: {id: 1}, _set: {name: "P"}) { id name } }
WITH "_m" AS (
  UPDATE "public"."author" AS _w SET "name" = CAST($1 AS TEXT)
  WHERE
    (
      _w."id" = CAST(CAST($2 AS TEXT) AS INT)
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
                _b1."name" AS "name"
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
