-- { author_connection(first: 1, after: "eyJhcnRpY2xlc19hZ2dyZWdhdGUiIDogeyJjb3VudCIgOiAyfSwgImlkIiA6IDF9", order_by: {articles_aggregate: {count: desc}}) { edges { cursor node { name } } } }
-- variables: None
WITH "_c1_base" AS (
  SELECT
    _b2.*,
    CAST((
      JSON_BUILD_OBJECT('articles_aggregate', JSON_BUILD_OBJECT('count', _b2."_o.0"), 'id', _b2."id")
    ) AS TEXT) AS "__cursor",
    ROW_NUMBER() OVER (ORDER BY _b2."_o.0" DESC, _b2."id" ASC) AS "__rn"
  FROM (
    SELECT
      _t3.*,
      (
        SELECT
          COUNT(*)
        FROM "public"."article" AS _a4
        WHERE
          _a4."author_id" = _t3."id"
      ) AS "_o.0"
    FROM "public"."author" AS _t3
    WHERE
      (
        TRUE
      )
    ORDER BY
      (
        SELECT
          COUNT(*)
        FROM "public"."article" AS _a4
        WHERE
          _a4."author_id" = _t3."id"
      ) DESC,
      _t3."id" ASC
  ) AS _b2
), "_c1_final" AS (
  SELECT
    *
  FROM "_c1_base" AS _s5
  WHERE
    (
      _s5."_o.0" < CAST(CAST($1 AS TEXT) AS BIGINT)
    )
    OR (
      (
        _s5."_o.0" = CAST(CAST($1 AS TEXT) AS BIGINT)
      )
      AND (
        (
          _s5."id" > CAST(CAST($2 AS TEXT) AS INT)
        )
        OR (
          (
            _s5."id" = CAST(CAST($2 AS TEXT) AS INT)
          ) AND (
            FALSE
          )
        )
      )
    )
  ORDER BY
    _s5."__rn"
  LIMIT CAST(CAST($3 AS TEXT) AS INT)
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
              REGEXP_REPLACE(ENCODE(CONVERT_TO(_f6."__cursor", 'UTF8'), 'base64'), '\n', '', 'g'),
              'node',
              ROW_TO_JSON((
                SELECT
                  _e7
                FROM (
                  SELECT
                    _f6."name" AS "name"
                ) AS _e7
              ))
            ) ORDER BY _f6."__rn"
          ),
          '[]'
        )
      FROM "_c1_final" AS _f6
    )
  ) AS "v";
