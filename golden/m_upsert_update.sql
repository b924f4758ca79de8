-- mutation { insert_blog_tag(objects: [{label: "x"}], on_conflict: {constraint: tag_label_key, update_columns: [label]}) { affected_rows } }
WITH "_m" AS (INSERT INTO "blog"."tag" AS _w ("label") VALUES ($1::text) ON CONFLICT ON CONSTRAINT "tag_label_key" DO UPDATE SET "label" = EXCLUDED."label" WHERE true RETURNING *) SELECT json_build_object('affected_rows', (SELECT count(*) FROM "_m"))
