"""svc: a GraphQL engine over Postgres."""
