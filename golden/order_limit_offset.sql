-- { article(order_by: [{views: desc_nulls_last}, {id: asc}], limit: 2, offset: 1) { id } }
-- variables: None
SELECT coalesce(json_agg(row_to_json((SELECT _e3 FROM (SELECT _b1."id" AS "id") AS _e3)) ORDER BY _b1."views" DESC NULLS LAST, _b1."id" ASC NULLS LAST), '[]') AS "v" FROM (SELECT _t2.* FROM "public"."article" AS _t2 WHERE (true) ORDER BY _t2."views" DESC NULLS LAST, _t2."id" ASC NULLS LAST LIMIT $1::text::integer OFFSET $2::text::integer) AS _b1
