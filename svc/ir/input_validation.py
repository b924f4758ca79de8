"""A permission's `validate_input`: the input validation webhook of an insert, update or
delete permission (Hasura v2.29+, `Hasura.RQL.Types.Permission` `ValidateInput`,
`ValidateInputHttpDefinition`; docs "Postgres: Input Validations").

`{"type": "http", "definition": {"url", "headers"?, "forward_client_headers"?,
"timeout"?}}`: `url` a `{{ENV}}` template rendered when called, `headers` configured
headers (`svc.outbound.HeaderConf`), `forward_client_headers` default false, `timeout`
seconds default 10. The call itself is `svc.api.input_validation`'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

from svc.errors import ErrorCode, SvcError
from svc.outbound import HeaderConf, check_header

#: The reference's default `timeout` (seconds).
DEFAULT_TIMEOUT = 10


@dataclass(frozen=True, slots=True)
class ValidateInput:
    """A resolved `validate_input` of type `http`."""

    url: str
    headers: tuple[HeaderConf, ...]
    forward_client_headers: bool
    timeout: float


def _bad(message: str, path: str) -> SvcError:
    return SvcError(ErrorCode.PARSE_FAILED, message, path=path)


def validate_input(raw: Any) -> ValidateInput | None:
    """The `validate_input` of a permission rule (None: absent or null). Raises SvcError 400
    `parse-failed` at the key's path for another shape: a `type` other than `http`, no
    `url` string, a bad header, a `timeout` that is not a positive integer."""
    if raw is None:
        return None
    path = "$.validate_input"
    if not isinstance(raw, dict):
        raise _bad("expected an object", path)
    if raw.get("type") != "http":
        raise _bad('only "http" is supported as the type of validate_input', f"{path}.type")
    d = raw.get("definition")
    if not isinstance(d, dict):
        raise _bad("expected an object", f"{path}.definition")
    url = d.get("url")
    if not isinstance(url, str):
        raise _bad('key "url" not found', f"{path}.definition")
    headers = []
    for i, item in enumerate(d.get("headers") or ()):
        at = f"{path}.definition.headers[{i}]"
        try:
            conf = msgspec.convert(item, HeaderConf)
        except msgspec.ValidationError as exc:
            raise _bad(str(exc), at) from None
        headers.append(check_header(conf, at))
    forward = d.get("forward_client_headers", False)
    if not isinstance(forward, bool):
        raise _bad("expected a boolean", f"{path}.definition.forward_client_headers")
    timeout = d.get("timeout", DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, int) or timeout <= 0:
        raise _bad("expected a positive integer", f"{path}.definition.timeout")
    return ValidateInput(url, tuple(headers), forward, float(timeout))
