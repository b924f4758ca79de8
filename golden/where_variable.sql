-- query q($n: String) { author(where: {name: {_eq: $n}}) { id } }
-- variables: {'n': 'Ada'}
SELECT coalesce(json_agg(row_to_json((SELECT _e3 FROM (SELECT _b1."id" AS "id") AS _e3))), '[]') AS "v" FROM (SELECT _t2.* FROM "public"."author" AS _t2 WHERE (_t2."name" = $1::text)) AS _b1
