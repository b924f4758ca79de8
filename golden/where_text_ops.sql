-- { author(where: {_or: [{name: {_like: "A%"}}, {name: {_ilike: "b%"}}, {name: {_regex: "^C"}}, {name: {_nsimilar: "D%"}}]}) { id } }
-- variables: None
SELECT
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
  ) AS "v"
FROM (
  SELECT
    _t2.*
  FROM "public"."author" AS _t2
  WHERE
    (
      (
        _t2."name" LIKE CAST($1 AS TEXT)
      )
      OR (
        _t2."name" ILIKE CAST($2 AS TEXT)
      )
      OR (
        _t2."name" ~ CAST($3 AS TEXT)
      )
      OR (
        NOT _t2."name" SIMILAR TO CAST($4 AS TEXT)
      )
    )
) AS _b1;
