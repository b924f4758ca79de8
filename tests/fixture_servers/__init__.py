"""Fixture servers of the conformance corpus (`../shared/conformance/FIXTURES.md` §1).

Each module of this package serves one area (events, actions, remote schemas, …) and
defines `serve() -> contextlib.AbstractContextManager[object]`: entering it starts the
module's servers on their fixed ports (127.0.0.1) and returns once they listen; leaving it
stops them. `running()` enters every module's `serve()`, so an area adds its servers by
adding a module, without editing the runner.
"""

from __future__ import annotations

import contextlib
import importlib
import pkgutil
from collections.abc import Iterator

# The environment the corpus server is started with (FIXTURES.md §1).
CORPUS_ENV: dict[str, str] = {
    "EVENT_WEBHOOK_HEADER": "MyEnvValue",
    "WEBHOOK_FROM_ENV": "http://127.0.0.1:5592",
    "SCHEDULED_TRIGGERS_WEBHOOK_DOMAIN": "http://127.0.0.1:5594",
    "ACTION_WEBHOOK_HANDLER": "http://127.0.0.1:5593",
    "REMOTE_SCHEMAS_WEBHOOK_DOMAIN": "http://127.0.0.1:5000",
    "SVC_GRAPHQL_STRINGIFY_NUMERIC_TYPES": "true",
    "SVC_GRAPHQL_EXPERIMENTAL_FEATURES": "streaming_subscriptions",
    # remote_schemas/permissions/ needs it; the other remote cases pass with it as well
    "SVC_GRAPHQL_ENABLE_REMOTE_SCHEMA_PERMISSIONS": "true",
}


def modules() -> list[str]:
    """The fully qualified names of this package's area modules, sorted."""
    return sorted(f"{__name__}.{m.name}" for m in pkgutil.iter_modules(__path__))


@contextlib.contextmanager
def running() -> Iterator[None]:
    """Every area's fixture servers, started in module order, stopped in reverse."""
    with contextlib.ExitStack() as stack:
        for name in modules():
            stack.enter_context(importlib.import_module(name).serve())
        yield
