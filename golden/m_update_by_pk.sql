-- mutation { update_author_by_pk(pk_columns: {id: 1}, _set: {name: "P"}) { id name } }
WITH "_m" AS (UPDATE "public"."author" AS _w SET "name" = $1::text WHERE (_w."id" = $2::text::integer) RETURNING _w.*) SELECT (SELECT json_agg(row_to_json((SELECT _e2 FROM (SELECT _b1."id" AS "id", _b1."name" AS "name") AS _e2)))->0 FROM (SELECT *, row_number() OVER () AS "_o.n" FROM "_m") AS _b1)
