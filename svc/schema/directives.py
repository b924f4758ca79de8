"""The directives every role's schema declares: graphql-core's specified ones and the
reference's `@cached` (`svc.api.response_cache` honours it on `/v1/graphql`):

    directive @cached(ttl: Int! = 60, refresh: Boolean! = false) on QUERY
"""

from __future__ import annotations

from graphql import (
    DirectiveLocation,
    GraphQLArgument,
    GraphQLBoolean,
    GraphQLDirective,
    GraphQLInt,
    GraphQLNonNull,
    specified_directives,
)

CACHED = GraphQLDirective(
    "cached",
    [DirectiveLocation.QUERY],
    {
        "ttl": GraphQLArgument(
            GraphQLNonNull(GraphQLInt), default_value=60, description="measured in seconds"
        ),
        "refresh": GraphQLArgument(
            GraphQLNonNull(GraphQLBoolean),
            default_value=False,
            description="refresh the cache entry",
        ),
    },
    description="whether this query should be cached (Hasura Cloud only)",
)
DIRECTIVES = (*specified_directives, CACHED)
