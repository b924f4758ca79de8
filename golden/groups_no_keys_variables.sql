-- query($n: Int, $w: article_bool_exp) { article_groups(group_by: [], limit: $n, where: $w) { aggregate { count max { title } } } }
-- variables: {'n': 3, 'w': {'published': {'_eq': True}}}
SELECT
  COALESCE(JSON_AGG(JSON_BUILD_OBJECT('aggregate', _g4."_a0")), '[]') AS "v"
FROM (
  SELECT
    *
  FROM (
    SELECT
      JSON_BUILD_OBJECT('count', COUNT(*), 'max', JSON_BUILD_OBJECT('title', MAX(_b1."title"))) AS "_a0"
    FROM (
      SELECT
        _t2.*
      FROM "public"."article" AS _t2
      WHERE
        (
          _t2."published" = CAST(CAST($1 AS TEXT) AS BOOLEAN)
        )
    ) AS _b1
  ) AS _h3
  LIMIT CAST(CAST($2 AS TEXT) AS INT)
) AS _g4;
