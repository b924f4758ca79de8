-- { author { profile(path: "links.site") } }
-- variables: None
SELECT coalesce(json_agg(row_to_json((SELECT _e3 FROM (SELECT (_b1."profile" #> $1::text[]) AS "profile") AS _e3))), '[]') AS "v" FROM (SELECT _t2.* FROM "public"."author" AS _t2 WHERE (true)) AS _b1
