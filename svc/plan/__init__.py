"""Plans: frozen nodes that say what to fetch, built from a validated GraphQL operation.

Layer 5 (design brief 2). A plan holds no SQL text; `svc.sql` renders it. Values are
`Param`s whose source is a literal (`Const`), a GraphQL variable (`VarRef`) or a session
variable (`SessionRef`), so a cached plan serves any request with the same structure.
"""
