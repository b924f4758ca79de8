-- mutation { insert_author_one(object: {name: "O"}) { id } }
WITH "_m" AS (INSERT INTO "public"."author" AS _w ("name") VALUES ($1::text) RETURNING *) SELECT (SELECT json_agg(row_to_json((SELECT _e2 FROM (SELECT _b1."id" AS "id") AS _e2)))->0 FROM (SELECT *, row_number() OVER () AS "_o.n" FROM "_m") AS _b1)
