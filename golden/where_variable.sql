-- query q($n: String) { author(where: {name: {_eq: $n}}) { id } }
-- variables: {'n': 'Ada'}
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
      _t2."name" = CAST($1 AS TEXT)
    )
) AS _b1;
