-- { comment { text article { title } } }
-- variables: None
SELECT coalesce(json_agg(row_to_json((SELECT _e5 FROM (SELECT _b1."text" AS "text", CASE WHEN _b3."id" IS NULL THEN NULL ELSE row_to_json((SELECT _e4 FROM (SELECT _b3."title" AS "title") AS _e4)) END AS "article") AS _e5))), '[]') AS "v" FROM (SELECT _t2.* FROM "public"."comment" AS _t2 WHERE (true)) AS _b1 LEFT OUTER JOIN "public"."article" AS _b3 ON _b3."id" = _b1."article_id"
