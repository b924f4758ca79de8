"""HTTP: the ASGI application (the only layer that knows ASGI)."""
