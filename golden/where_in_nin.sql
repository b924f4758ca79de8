-- { article(where: {id: {_in: [1, 2]}, author_id: {_nin: [3]}}) { id } }
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
  FROM "public"."article" AS _t2
  WHERE
    (
      (
        _t2."id" = ANY(
          CAST(CAST($1 AS TEXT[]) AS INT[])
        )
      )
      AND (
        _t2."author_id" <> ALL(CAST(CAST($2 AS TEXT[]) AS INT[]))
      )
    )
) AS _b1;
