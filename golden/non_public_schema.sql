-- { blog_tag(where: {label: {_eq: "x"}}) { id label } }
-- variables: None
SELECT coalesce(json_agg(row_to_json((SELECT _e3 FROM (SELECT _b1."id" AS "id", _b1."label" AS "label") AS _e3))), '[]') AS "v" FROM (SELECT _t2.* FROM "blog"."tag" AS _t2 WHERE (_t2."label" = $1::text)) AS _b1
