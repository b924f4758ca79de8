-- mutation { update_author_many(updates: [{where: {id: {_eq: 1}}, _set: {name: "U"}}]) { affected_rows } }
WITH "_m" AS (UPDATE "public"."author" AS _w SET "name" = $1::text WHERE _w."id" = $2::text::integer RETURNING _w.*) SELECT json_build_object('affected_rows', (SELECT count(*) FROM "_m"))
