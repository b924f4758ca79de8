-- mutation { __typename delete_comment(where: {id: {_eq: 0}}) { __typename affected_rows } }
WITH "_m" AS (DELETE FROM "public"."comment" AS _w WHERE _w."id" = $1::text::integer RETURNING _w.*) SELECT json_build_object('__typename', 'comment_mutation_response', 'affected_rows', (SELECT count(*) FROM "_m"))
