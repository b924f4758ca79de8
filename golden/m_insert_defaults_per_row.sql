-- mutation { insert_author(objects: [{name: "A"}, {name: "B", rating: 2}]) { affected_rows } }
WITH "_m" AS (INSERT INTO "public"."author" AS _w ("name", "rating") VALUES ($1::text, DEFAULT), ($2::text, $3::text::numeric) RETURNING *) SELECT json_build_object('affected_rows', (SELECT count(*) FROM "_m"))
