-- { author(order_by: {id: asc}) { name profile { bio } } }
-- variables: None
-- query
SELECT coalesce(json_agg(row_to_json((SELECT _e3 FROM (SELECT _b1."name" AS "name", _b1."id" AS "__svc_j_id") AS _e3)) ORDER BY _b1."id" ASC NULLS LAST), '[]') AS "v" FROM (SELECT _t2.* FROM "public"."author" AS _t2 WHERE (true) ORDER BY _t2."id" ASC NULLS LAST) AS _b1;
-- join
-- remote relationship public.author.profile -> remote schema "profiles": POST {{PROFILES_URL}}/graphql, one request for all rows of step 0
-- field: {"profile": {"arguments": {"id": "$id"}}}
-- join columns: id -> id
