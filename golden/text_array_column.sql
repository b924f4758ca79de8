-- { author { tags } }
-- variables: None
SELECT coalesce(json_agg(row_to_json((SELECT _e3 FROM (SELECT _b1."tags" AS "tags") AS _e3))), '[]') AS "v" FROM (SELECT _t2.* FROM "public"."author" AS _t2 WHERE (true)) AS _b1
