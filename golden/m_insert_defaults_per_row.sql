-- mutation { insert_author(objects: [{name: "A"}, {name: "B", rating: 2}]) { affected_rows } }
WITH "_m" AS (
  INSERT INTO "public"."author" AS _w (
    "name",
    "rating"
  )
  VALUES
    (CAST($1 AS TEXT), DEFAULT),
    (CAST($2 AS TEXT), CAST(CAST($3 AS TEXT) AS DECIMAL))
  RETURNING *
)
SELECT
  JSON_BUILD_OBJECT('affected_rows', (
    SELECT
      COUNT(*)
    FROM "_m"
  ));
