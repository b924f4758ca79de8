-- { comment_aggregate { aggregate { stddev { score } stddev_pop { score } stddev_samp { score } var_pop { score } var_samp { score } variance { score } } } }
-- variables: None
SELECT
  JSON_BUILD_OBJECT(
    'aggregate',
    JSON_BUILD_OBJECT(
      'stddev',
      JSON_BUILD_OBJECT('score', STDDEV(_b1."score")),
      'stddev_pop',
      JSON_BUILD_OBJECT('score', STDDEV_POP(_b1."score")),
      'stddev_samp',
      JSON_BUILD_OBJECT('score', STDDEV_SAMP(_b1."score")),
      'var_pop',
      JSON_BUILD_OBJECT('score', VAR_POP(_b1."score")),
      'var_samp',
      JSON_BUILD_OBJECT('score', VAR_SAMP(_b1."score")),
      'variance',
      JSON_BUILD_OBJECT('score', VAR_SAMP(_b1."score"))
    )
  ) AS "v"
FROM (
  SELECT
    _t2.*
  FROM "public"."comment" AS _t2
  WHERE
    (
      TRUE
    )
) AS _b1;
