"""GraphQL schema per role, built with graphql-core from the IR (design brief 2).

Each generated field carries a `FieldInfo` in `extensions["svc"]` so the planner can map a
validated selection back to the IR without name lookups.
"""

from svc.schema.build import build_schema
from svc.schema.info import FieldInfo

__all__ = ["FieldInfo", "build_schema"]
