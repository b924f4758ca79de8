-- { article_aggregate { aggregate { c: count(columns: [author_id], distinct: true) } } }
-- variables: None
SELECT
  JSON_BUILD_OBJECT('aggregate', JSON_BUILD_OBJECT('c', COUNT(DISTINCT _b1."author_id"))) AS "v"
FROM (
  SELECT
    _t2.*
  FROM "public"."article" AS _t2
  WHERE
    (
      TRUE
    )
) AS _b1;
