-- mutation { insert_author(objects: [{name: "N"}]) { affected_rows returning { id name } } }
WITH "_m" AS (
  INSERT INTO "public"."author" AS _w (
    "name"
  )
  VALUES
    (CAST($1 AS TEXT))
  RETURNING *
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
            ) ORDER BY _b1."_o.n"
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
