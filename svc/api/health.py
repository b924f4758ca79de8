"""Database health for the HTTP layer's `/healthz`, and which errors mean "Postgres is
unreachable": the server's entry to `svc.execute.health` (the server imports no
execution module itself; ARCHITECTURE.md, Layers)."""

from __future__ import annotations

from svc.execute.health import HealthProbe, is_unreachable

__all__ = ["HealthProbe", "is_unreachable"]
