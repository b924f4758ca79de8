-- mutation { insert_blog_tag(objects: [{label: "x"}], on_conflict: {constraint: tag_label_key, update_columns: [label], where: {id: {_gt: 0}}}) { affected_rows } }
WITH "_m" AS (
  INSERT INTO "blog"."tag" AS _w (
    "label"
  )
  VALUES
    (CAST($1 AS TEXT)) ON CONFLICT ON CONSTRAINT "tag_label_key" DO UPDATE SET "label" = EXCLUDED."label"
  WHERE
    _w."id" > CAST(CAST($2 AS TEXT) AS INT)
  RETURNING *
)
SELECT
  JSON_BUILD_OBJECT('affected_rows', (
    SELECT
      COUNT(*)
    FROM "_m"
  ));
