-- { author(where: {profile: {_contains: {lang: "en"}}, _and: [{profile: {_has_key: "lang"}}, {profile: {_has_keys_any: ["x", "lang"]}}, {profile: {_has_keys_all: ["lang"]}}]}) { id } }
-- variables: None
SELECT coalesce(json_agg(row_to_json((SELECT _e3 FROM (SELECT _b1."id" AS "id") AS _e3))), '[]') AS "v" FROM (SELECT _t2.* FROM "public"."author" AS _t2 WHERE ((_t2."profile" @> $1::text::jsonb) AND ((_t2."profile" ? $2::text) AND (_t2."profile" ?| $3::text[]) AND (_t2."profile" ?& $4::text[])))) AS _b1
