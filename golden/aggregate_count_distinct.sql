-- { article_aggregate { aggregate { c: count(columns: [author_id], distinct: true) } } }
-- variables: None
SELECT json_build_object('aggregate', json_build_object('c', count(DISTINCT _b1."author_id"))) AS "v" FROM (SELECT _t2.* FROM "public"."article" AS _t2 WHERE (true)) AS _b1
