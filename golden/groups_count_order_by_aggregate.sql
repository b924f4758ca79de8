-- { article_groups(group_by: [author_id], order_by: [{aggregate: {count: desc}}]) { keys { author_id } aggregate { count sum { views } } } }
-- variables: None
SELECT
  COALESCE(
    JSON_AGG(
      JSON_BUILD_OBJECT('keys', JSON_BUILD_OBJECT('author_id', _g4."_k0"), 'aggregate', _g4."_a1") ORDER BY _g4."_m0" DESC, _g4."_k0" ASC
    ),
    '[]'
  ) AS "v"
FROM (
  SELECT
    *
  FROM (
    SELECT
      _b1."author_id" AS "_k0",
      JSON_BUILD_OBJECT('count', COUNT(*), 'sum', JSON_BUILD_OBJECT('views', SUM(_b1."views"))) AS "_a1",
      COUNT(*) AS "_m0"
    FROM (
      SELECT
        _t2.*
      FROM "public"."article" AS _t2
      WHERE
        (
          TRUE
        )
    ) AS _b1
    GROUP BY
      1
  ) AS _h3
  ORDER BY
    _h3."_m0" DESC,
    _h3."_k0" ASC
) AS _g4;
