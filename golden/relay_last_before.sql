-- { article_connection(last: 1, before: "eyJpZCIgOiAzfQ==") { edges { cursor node { id title } } pageInfo { startCursor endCursor hasPreviousPage hasNextPage } } }
-- variables: None
WITH "_c1_base" AS (
  SELECT
    _b2.*,
    CAST((
      JSON_BUILD_OBJECT('id', _b2."id")
    ) AS TEXT) AS "__cursor",
    ROW_NUMBER() OVER (ORDER BY _b2."id" ASC) AS "__rn"
  FROM (
    SELECT
      _t3.*
    FROM "public"."article" AS _t3
    WHERE
      (
        TRUE
      )
    ORDER BY
      _t3."id" ASC
  ) AS _b2
), "_c1_final" AS (
  SELECT
    *
  FROM (
    SELECT
      *
    FROM "_c1_base" AS _s4
    WHERE
      (
        _s4."id" < CAST(CAST($1 AS TEXT) AS INT)
      )
      OR (
        (
          _s4."id" = CAST(CAST($1 AS TEXT) AS INT)
        ) AND (
          FALSE
        )
      )
    ORDER BY
      _s4."__rn" DESC
    LIMIT CAST(CAST($2 AS TEXT) AS INT)
  ) AS _s4
  ORDER BY
    _s4."__rn"
)
SELECT
  JSON_BUILD_OBJECT(
    'edges',
    (
      SELECT
        COALESCE(
          JSON_AGG(
            JSON_BUILD_OBJECT(
              'cursor',
              REGEXP_REPLACE(ENCODE(CONVERT_TO(_f5."__cursor", 'UTF8'), 'base64'), '\n', '', 'g'),
              'node',
              ROW_TO_JSON(
                (
                  SELECT
                    _e6
                  FROM (
                    SELECT
                      REGEXP_REPLACE(
                        ENCODE(
                          CONVERT_TO(CAST(JSON_BUILD_ARRAY(1, 'public', 'article', _f5."id") AS TEXT), 'UTF8'),
                          'base64'
                        ),
                        '\n',
                        '',
                        'g'
                      ) AS "id",
                      _f5."title" AS "title"
                  ) AS _e6
                )
              )
            ) ORDER BY _f5."__rn"
          ),
          '[]'
        )
      FROM "_c1_final" AS _f5
    ),
    'pageInfo',
    JSON_BUILD_OBJECT(
      'startCursor',
      (
        SELECT
          REGEXP_REPLACE(ENCODE(CONVERT_TO(_p7."__cursor", 'UTF8'), 'base64'), '\n', '', 'g')
        FROM "_c1_final" AS _p7
        ORDER BY
          _p7."__rn"
        LIMIT 1
      ),
      'endCursor',
      (
        SELECT
          REGEXP_REPLACE(ENCODE(CONVERT_TO(_p8."__cursor", 'UTF8'), 'base64'), '\n', '', 'g')
        FROM "_c1_final" AS _p8
        ORDER BY
          _p8."__rn" DESC
        LIMIT 1
      ),
      'hasPreviousPage',
      EXISTS(
        SELECT
          1
        FROM "_c1_base" AS _p9
        WHERE
          _p9."__rn" < (
            SELECT
              MIN("__rn")
            FROM "_c1_final"
          )
      ),
      'hasNextPage',
      EXISTS(
        SELECT
          1
        FROM "_c1_base" AS _p10
        WHERE
          _p10."__rn" > (
            SELECT
              MAX("__rn")
            FROM "_c1_final"
          )
      )
    )
  ) AS "v";
