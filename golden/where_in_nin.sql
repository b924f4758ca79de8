-- { article(where: {id: {_in: [1, 2]}, author_id: {_nin: [3]}}) { id } }
-- variables: None
SELECT coalesce(json_agg(row_to_json((SELECT _e3 FROM (SELECT _b1."id" AS "id") AS _e3))), '[]') AS "v" FROM (SELECT _t2.* FROM "public"."article" AS _t2 WHERE ((_t2."id" = ANY($1::text[]::integer[])) AND (_t2."author_id" <> ALL($2::text[]::integer[])))) AS _b1
