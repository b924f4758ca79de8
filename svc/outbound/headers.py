"""Configured outbound headers: `{name, value}` or `{name, value_from_env}` (spec 2.7,
"Header forms"; Hasura `Hasura.RQL.DDL.Headers.HeaderConf`).

`HeaderConf` is a frozen msgspec struct, so metadata models can embed it and it encodes
back to exactly the form it was given. `check_header` applies the reference's decoding
rules (400 `parse-failed`); `resolve_headers` turns a list into the `(name, value)` pairs
to send, reading the environment at call time.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import msgspec

from svc.errors import ErrorCode, SvcError
from svc.outbound.templates import env_value, render_template

#: `value_from_env` may not read the server's own configuration (Hasura refuses
#: `HASURA_GRAPHQL_*`; svc's variables are `SVC_GRAPHQL_*`).
RESERVED_ENV_PREFIX = "SVC_GRAPHQL_"


class HeaderConf(msgspec.Struct, frozen=True, omit_defaults=True):
    """One configured header: `value` (a `{{ENV}}` template, rendered when sent) or
    `value_from_env` (the name of an environment variable read when sent)."""

    name: str
    value: str | None = None
    value_from_env: str | None = None


def check_header(conf: HeaderConf, path: str = "$") -> HeaderConf:
    """`conf` when it is well formed, else SvcError 400 `parse-failed` at `path` with the
    reference's message: "expecting value or value_from_env keys" (neither), "expecting
    only one of value or value_from_env keys" (both), 'env variables starting with
    "SVC_GRAPHQL_" are not allowed in value_from_env: <name>'."""
    if conf.value is None and conf.value_from_env is None:
        message = "expecting value or value_from_env keys"
    elif conf.value is not None and conf.value_from_env is not None:
        message = "expecting only one of value or value_from_env keys"
    elif conf.value_from_env is not None and conf.value_from_env.startswith(RESERVED_ENV_PREFIX):
        message = (
            f'env variables starting with "{RESERVED_ENV_PREFIX}" are not allowed in '
            f"value_from_env: {conf.value_from_env}"
        )
    else:
        return conf
    raise SvcError(ErrorCode.PARSE_FAILED, message, path=path)


def resolve_headers(
    confs: Iterable[HeaderConf], env: Mapping[str, str] | None = None
) -> list[tuple[str, str]]:
    """`(name, value)` per configured header, in order, values read from `env` (default
    the process environment) now. Raises SvcError 400 `not-found` "environment variable 'X' not set"
    for a `value_from_env`, 400 `unexpected` "Value for environment variables not found:
    …" for a `value` template (Hasura `makeHeadersFromConf`)."""
    out: list[tuple[str, str]] = []
    for conf in confs:
        if conf.value_from_env is not None:
            out.append((conf.name, env_value(conf.value_from_env, env)))
        else:
            out.append((conf.name, render_template(conf.value or "", env)))
    return out
