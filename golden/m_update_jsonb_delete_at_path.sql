-- mutation { update_author(where: {id: {_eq: 1}}, _delete_at_path: {profile: ["links", "site"]}) { affected_rows } }
WITH "_m" AS (UPDATE "public"."author" AS _w SET "profile" = _w."profile" #- $1::text[] WHERE _w."id" = $2::text::integer RETURNING _w.*) SELECT json_build_object('affected_rows', (SELECT count(*) FROM "_m"))
