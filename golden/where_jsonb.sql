-- { author(where: {profile: {_contains: {lang: "en"}}, _and: [{profile: {_has_key: "lang"}}, {profile: {_has_keys_any: ["x", "lang"]}}, {profile: {_has_keys_all: ["lang"]}}]}) { id } }
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
        _t2."profile" @> CAST(CAST($1 AS TEXT) AS JSONB)
      )
      AND (
        (
          _t2."profile" ? CAST($2 AS TEXT)
        )
        AND (
          _t2."profile" ?| CAST($3 AS TEXT[])
        )
        AND (
          _t2."profile" ?& CAST($4 AS TEXT[])
        )
      )
    )
) AS _b1;
