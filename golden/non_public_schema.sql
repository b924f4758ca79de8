-- { blog_tag(where: {label: {_eq: "x"}}) { id label } }
-- variables: None
SELECT
  COALESCE(
    JSON_AGG(
      ROW_TO_JSON(
        (
          SELECT
            _e3
          FROM (
            SELECT
              _b1."id" AS "id",
              _b1."label" AS "label"
          ) AS _e3
        )
      )
    ),
    '[]'
  ) AS "v"
FROM (
  SELECT
    _t2.*
  FROM "blog"."tag" AS _t2
  WHERE
    (
      _t2."label" = CAST($1 AS TEXT)
    )
) AS _b1;
