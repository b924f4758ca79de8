-- mutation { delete_comment_by_pk(id: 2) { id text } }
WITH "_m" AS (DELETE FROM "public"."comment" AS _w WHERE (_w."id" = $1::text::integer) RETURNING _w.*) SELECT (SELECT json_agg(row_to_json((SELECT _e2 FROM (SELECT _b1."id" AS "id", _b1."text" AS "text") AS _e2)))->0 FROM (SELECT *, row_number() OVER () AS "_o.n" FROM "_m") AS _b1)
