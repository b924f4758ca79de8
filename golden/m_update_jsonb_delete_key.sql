-- mutation { update_author(where: {id: {_eq: 1}}, _delete_key: {profile: "lang"}) { affected_rows } }
WITH "_m" AS (
  UPDATE "public"."author" AS _w SET "profile" = _w."profile" - CAST($1 AS TEXT)
  WHERE
    _w."id" = CAST(CAST($2 AS TEXT) AS INT)
  RETURNING _w.*
)
SELECT
  JSON_BUILD_OBJECT('affected_rows', (
    SELECT
      COUNT(*)
    FROM "_m"
  ));
