"""Outbound HTTP (layer 0): the process's one pooled client and the `{{ENV}}` templates
and configured headers of webhook URLs (ARCHITECTURE.md "Seams").

- `shared_client().request(method, url, …)` → `OutboundResponse` (status, headers, body,
  elapsed) or `OutboundError` (`timeout`, `connection`, `invalid-response`,
  `invalid-url`); `close_shared()` at shutdown.
- `render_template(text)`, `env_value(name)`: URLs and values from the environment.
- `HeaderConf`, `check_header`, `resolve_headers`: `{name, value | value_from_env}`.
"""

from svc.outbound.client import (
    OutboundClient,
    OutboundError,
    OutboundResponse,
    close_shared,
    configure_shared,
    shared_client,
)
from svc.outbound.headers import HeaderConf, check_header, resolve_headers
from svc.outbound.templates import Template, env_value, parse_template, render_template

__all__ = [
    "HeaderConf",
    "OutboundClient",
    "OutboundError",
    "OutboundResponse",
    "Template",
    "check_header",
    "close_shared",
    "configure_shared",
    "env_value",
    "parse_template",
    "render_template",
    "resolve_headers",
    "shared_client",
]
