-- mutation { update_author(where: {id: {_eq: 1}}, _set: {name: "S"}) { affected_rows } }
WITH "_m" AS (UPDATE "public"."author" AS _w SET "name" = $1::text WHERE _w."id" = $2::text::integer RETURNING _w.*) SELECT json_build_object('affected_rows', (SELECT count(*) FROM "_m"))
