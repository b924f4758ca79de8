-- { author_by_pk(id: 1) { id name } }
-- variables: None
SELECT
  JSON_AGG(
    ROW_TO_JSON(
      (
        SELECT
          _e3
        FROM (
          SELECT
            _b1."id" AS "id",
            _b1."name" AS "name"
        ) AS _e3
      )
    )
  ) -> 0 AS "v"
FROM (
  SELECT
    _t2.*
  FROM "public"."author" AS _t2
  WHERE
    (
      (
        _t2."id" = CAST(CAST($1 AS TEXT) AS INT)
      )
    )
) AS _b1;
