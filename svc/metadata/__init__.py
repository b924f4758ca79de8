"""Source model of metadata: the JSON document users write, export and replace.

Layer 1 of the pipeline (design brief 2): it knows nothing of the database. `model`
defines the stored document (Hasura's export format, `version: 2`), `args` the
arguments of each `/v1/query` operation, `apply` the pure functions that turn one
metadata document into the next.
"""
