-- mutation { insert_author_one(object: {name: "O"}) { id } }
WITH "_m" AS (
  INSERT INTO "public"."author" AS _w (
    "name"
  )
  VALUES
    (CAST($1 AS TEXT))
  RETURNING *
)
SELECT
  (
    SELECT
      JSON_AGG(
        ROW_TO_JSON((
          SELECT
            _e2
          FROM (
            SELECT
              _b1."id" AS "id"
          ) AS _e2
        ))
      ) -> 0
    FROM (
      SELECT
        *,
        ROW_NUMBER() OVER () AS "_o.n"
      FROM "_m"
    ) AS _b1
  );
