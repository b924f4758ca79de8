"""What Postgres holds: one introspection query and the `hdb_catalog` storage.

Layer 2 (design brief 2). Fixed SQL statements live here beside the decoders of their
results; this layer does not talk to Postgres itself (`svc.execute` runs the statements).
"""
