-- { article(distinct_on: [author_id], order_by: [{author_id: asc}, {views: desc}]) { author_id views } }
-- variables: None
SELECT coalesce(json_agg(row_to_json((SELECT _e3 FROM (SELECT _b1."author_id" AS "author_id", _b1."views" AS "views") AS _e3)) ORDER BY _b1."author_id" ASC NULLS LAST, _b1."views" DESC NULLS FIRST), '[]') AS "v" FROM (SELECT DISTINCT ON (_t2."author_id") _t2.* FROM "public"."article" AS _t2 WHERE (true) ORDER BY _t2."author_id" ASC NULLS LAST, _t2."views" DESC NULLS FIRST) AS _b1
