-- mutation { __typename delete_comment(where: {id: {_eq: 0}}) { __typename affected_rows } }
WITH "_m" AS (
  DELETE FROM "public"."comment" AS _w
  WHERE
    _w."id" = CAST(CAST($1 AS TEXT) AS INT)
  RETURNING _w.*
)
SELECT
  JSON_BUILD_OBJECT(
    '__typename',
    'comment_mutation_response',
    'affected_rows',
    (
      SELECT
        COUNT(*)
      FROM "_m"
    )
  );
