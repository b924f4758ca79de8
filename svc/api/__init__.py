"""Transport-free request handling: metadata operations and the GraphQL pipeline.

Layer 8: uses every earlier layer; `svc.server` (ASGI) and `svc.cli` sit on top.
"""
