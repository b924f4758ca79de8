-- mutation { insert_article(objects: [{title: "T", author_id: 1}]) { returning { title author { name } } } }
WITH "_m" AS (
  INSERT INTO "public"."article" AS _w (
    "title",
    "author_id"
  )
  VALUES
    (CAST($1 AS TEXT), CAST(CAST($2 AS TEXT) AS INT))
  RETURNING *
)
SELECT
  JSON_BUILD_OBJECT(
    'returning',
    (
      SELECT
        COALESCE(
          JSON_AGG(
            ROW_TO_JSON(
              (
                SELECT
                  _e4
                FROM (
                  SELECT
                    _b1."title" AS "title",
                    CASE
                      WHEN _b2."id" IS NULL
                      THEN NULL
                      ELSE ROW_TO_JSON((
                        SELECT
                          _e3
                        FROM (
                          SELECT
                            _b2."name" AS "name"
                        ) AS _e3
                      ))
                    END AS "author"
                ) AS _e4
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
      LEFT OUTER JOIN "public"."author" AS _b2
        ON _b2."id" = _b1."author_id"
    )
  );
