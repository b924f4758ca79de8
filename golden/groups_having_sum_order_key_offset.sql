-- { article_groups(group_by: [author_id], having: {_or: [{sum: {views: {_gte: 15}}}, {max: {title: {_eq: "Three"}}}]}, order_by: {keys: {author_id: desc}}, offset: 1) { keys { id: author_id } aggregate { sum { views } } } }
-- variables: None
SELECT
  COALESCE(
    JSON_AGG(
      JSON_BUILD_OBJECT('keys', JSON_BUILD_OBJECT('id', _g4."_k0"), 'aggregate', _g4."_a1") ORDER BY _g4."_k0" DESC
    ),
    '[]'
  ) AS "v"
FROM (
  SELECT
    *
  FROM (
    SELECT
      _b1."author_id" AS "_k0",
      JSON_BUILD_OBJECT('sum', JSON_BUILD_OBJECT('views', SUM(_b1."views"))) AS "_a1",
      SUM(_b1."views") AS "_m0",
      MAX(_b1."title") AS "_m1"
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
  WHERE
    (
      _h3."_m0" >= CAST(CAST($1 AS TEXT) AS DECIMAL)
    )
    OR (
      _h3."_m1" = CAST($2 AS TEXT)
    )
  ORDER BY
    _h3."_k0" DESC
  OFFSET CAST(CAST($3 AS TEXT) AS INT)
) AS _g4;
