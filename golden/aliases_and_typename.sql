-- { a: author(limit: 1) { __typename key: id } t: __typename }
-- variables: None
SELECT coalesce(json_agg(row_to_json((SELECT _e3 FROM (SELECT 'author' AS "__typename", _b1."id" AS "key") AS _e3))), '[]') AS "v" FROM (SELECT _t2.* FROM "public"."author" AS _t2 WHERE (true) LIMIT $1::text::integer) AS _b1
