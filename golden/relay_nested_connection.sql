-- { author_connection { edges { node { id name articles_connection(last: 1) { edges { cursor node { title } } pageInfo { hasPreviousPage } } } } } }
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
    FROM "public"."author" AS _t3
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
  FROM "_c1_base" AS _s4
  WHERE
    TRUE
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
              'node',
              ROW_TO_JSON(
                (
                  SELECT
                    _e14
                  FROM (
                    SELECT
                      REGEXP_REPLACE(
                        ENCODE(
                          CONVERT_TO(CAST(JSON_BUILD_ARRAY(1, 'public', 'author', _f5."id") AS TEXT), 'UTF8'),
                          'base64'
                        ),
                        '\n',
                        '',
                        'g'
                      ) AS "id",
                      _f5."name" AS "name",
                      _r6."v" AS "articles_connection"
                  ) AS _e14
                )
              )
            ) ORDER BY _f5."__rn"
          ),
          '[]'
        )
      FROM "_c1_final" AS _f5
      LEFT OUTER JOIN LATERAL (
        WITH "_c7_base" AS (
          SELECT
            _b8.*,
            CAST((
              JSON_BUILD_OBJECT('id', _b8."id")
            ) AS TEXT) AS "__cursor",
            ROW_NUMBER() OVER (ORDER BY _b8."id" ASC) AS "__rn"
          FROM (
            SELECT
              _t9.*
            FROM "public"."article" AS _t9
            WHERE
              (
                _t9."author_id" = _f5."id"
              ) AND (
                TRUE
              )
            ORDER BY
              _t9."id" ASC
          ) AS _b8
        ), "_c7_final" AS (
          SELECT
            *
          FROM (
            SELECT
              *
            FROM "_c7_base" AS _s10
            WHERE
              TRUE
            ORDER BY
              _s10."__rn" DESC
            LIMIT CAST(CAST($1 AS TEXT) AS INT)
          ) AS _s10
          ORDER BY
            _s10."__rn"
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
                      REGEXP_REPLACE(ENCODE(CONVERT_TO(_f11."__cursor", 'UTF8'), 'base64'), '\n', '', 'g'),
                      'node',
                      ROW_TO_JSON(
                        (
                          SELECT
                            _e12
                          FROM (
                            SELECT
                              _f11."title" AS "title"
                          ) AS _e12
                        )
                      )
                    ) ORDER BY _f11."__rn"
                  ),
                  '[]'
                )
              FROM "_c7_final" AS _f11
            ),
            'pageInfo',
            JSON_BUILD_OBJECT(
              'hasPreviousPage',
              EXISTS(
                SELECT
                  1
                FROM "_c7_base" AS _p13
                WHERE
                  _p13."__rn" < (
                    SELECT
                      MIN("__rn")
                    FROM "_c7_final"
                  )
              )
            )
          ) AS "v"
      ) AS _r6
        ON TRUE
    )
  ) AS "v";
