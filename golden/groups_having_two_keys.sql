-- { article_groups(group_by: [author_id, published], having: {count: {_gte: 1}, avg: {views: {_gt: 6}}}) { __typename keys { author_id published } aggregate { count avg { views } } } }
-- variables: None
SELECT
  COALESCE(
    JSON_AGG(
      JSON_BUILD_OBJECT(
        '__typename',
        'article_group',
        'keys',
        JSON_BUILD_OBJECT('author_id', _g4."_k0", 'published', _g4."_k1"),
        'aggregate',
        _g4."_a2"
      ) ORDER BY _g4."_k0" ASC, _g4."_k1" ASC
    ),
    '[]'
  ) AS "v"
FROM (
  SELECT
    *
  FROM (
    SELECT
      _b1."author_id" AS "_k0",
      _b1."published" AS "_k1",
      JSON_BUILD_OBJECT('count', COUNT(*), 'avg', JSON_BUILD_OBJECT('views', AVG(_b1."views"))) AS "_a2",
      COUNT(*) AS "_m0",
      AVG(_b1."views") AS "_m1"
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
      1,
      2
  ) AS _h3
  WHERE
    (
      _h3."_m0" >= CAST(CAST($1 AS TEXT) AS BIGINT)
    )
    AND (
      _h3."_m1" > CAST(CAST($2 AS TEXT) AS DOUBLE PRECISION)
    )
  ORDER BY
    _h3."_k0" ASC,
    _h3."_k1" ASC
) AS _g4;
