-- { author(where: {_or: [{name: {_like: "A%"}}, {name: {_ilike: "b%"}}, {name: {_regex: "^C"}}, {name: {_nsimilar: "D%"}}]}) { id } }
-- variables: None
SELECT coalesce(json_agg(row_to_json((SELECT _e3 FROM (SELECT _b1."id" AS "id") AS _e3))), '[]') AS "v" FROM (SELECT _t2.* FROM "public"."author" AS _t2 WHERE ((_t2."name" LIKE $1::text) OR (_t2."name" ILIKE $2::text) OR (_t2."name" ~ $3::text) OR (_t2."name" NOT SIMILAR TO $4::text))) AS _b1
