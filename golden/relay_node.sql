-- query q($id: ID!) { node(id: $id) { id ... on article { title author { id } } } }
-- variables: {'id': 'WzEsICJwdWJsaWMiLCAiYXJ0aWNsZSIsIDJd'}
SELECT
  JSON_AGG(
    ROW_TO_JSON(
      (
        SELECT
          _e5
        FROM (
          SELECT
            REGEXP_REPLACE(
              ENCODE(
                CONVERT_TO(CAST(JSON_BUILD_ARRAY(1, 'public', 'article', _b1."id") AS TEXT), 'UTF8'),
                'base64'
              ),
              '\n',
              '',
              'g'
            ) AS "id",
            _b1."title" AS "title",
            CASE
              WHEN _b3."id" IS NULL
              THEN NULL
              ELSE ROW_TO_JSON(
                (
                  SELECT
                    _e4
                  FROM (
                    SELECT
                      REGEXP_REPLACE(
                        ENCODE(
                          CONVERT_TO(CAST(JSON_BUILD_ARRAY(1, 'public', 'author', _b3."id") AS TEXT), 'UTF8'),
                          'base64'
                        ),
                        '\n',
                        '',
                        'g'
                      ) AS "id"
                  ) AS _e4
                )
              )
            END AS "author"
        ) AS _e5
      )
    )
  ) -> 0 AS "v"
FROM (
  SELECT
    _t2.*
  FROM "public"."article" AS _t2
  WHERE
    (
      (
        _t2."id" = CAST(CAST($1 AS TEXT) AS INT)
      )
    )
) AS _b1
LEFT OUTER JOIN "public"."author" AS _b3
  ON _b3."id" = _b1."author_id";
