-- { article_aggregate { aggregate { count sum { views } avg { views } max { title } min { created_at } } nodes { id } } }
-- variables: None
SELECT
  JSON_BUILD_OBJECT(
    'aggregate',
    JSON_BUILD_OBJECT(
      'count',
      COUNT(*),
      'sum',
      JSON_BUILD_OBJECT('views', SUM(_b1."views")),
      'avg',
      JSON_BUILD_OBJECT('views', AVG(_b1."views")),
      'max',
      JSON_BUILD_OBJECT('title', MAX(_b1."title")),
      'min',
      JSON_BUILD_OBJECT('created_at', MIN(_b1."created_at"))
    ),
    'nodes',
    COALESCE(
      JSON_AGG(
        ROW_TO_JSON((
          SELECT
            _e3
          FROM (
            SELECT
              _b1."id" AS "id"
          ) AS _e3
        ))
      ),
      '[]'
    )
  ) AS "v"
FROM (
  SELECT
    _t2.*
  FROM "public"."article" AS _t2
  WHERE
    (
      TRUE
    )
) AS _b1;
