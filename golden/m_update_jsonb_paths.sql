-- mutation { update_author(where: {id: {_eq: 1}}, _prepend: {profile: {z: 0}}) { affected_rows } }
WITH "_m" AS (UPDATE "public"."author" AS _w SET "profile" = $1::text::jsonb || _w."profile" WHERE _w."id" = $2::text::integer RETURNING _w.*) SELECT json_build_object('affected_rows', (SELECT count(*) FROM "_m"))
