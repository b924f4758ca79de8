"""API limits and introspection options of the metadata document (Hasura's `api_limits` and
`graphql_schema_introspection`), and the arguments of `set_api_limits` /
`set_graphql_schema_introspection_options`.

Shapes are the reference's (`Hasura.RQL.Types.ApiLimit`, `…GraphqlSchemaIntrospection`, docs
"Metadata API Reference: API Limits"):

    api_limits: {disabled?: bool = false,
                 depth_limit?: {global: int >= 0, per_role?: {role: int >= 0}},
                 node_limit?:  {…same…}, batch_limit?: {…same…},
                 time_limit?:  {global: seconds >= 0 (a number), per_role?: {role: seconds}},
                 rate_limit?:  {global: {max_reqs_per_min: int >= 0,
                                         unique_params?: "IP" | [session variable]},
                                per_role?: {role: {…same…}}}}
    graphql_schema_introspection: {disabled_for_roles: [role]}

Unlike the reference, unknown keys are refused (a misspelt limit would otherwise be silently
off). `unique_params` accepts `"IP"` in any case (stored as `"IP"`) or a list of `x-svc-*`
session variables other than `x-svc-role` (stored lower-case), as the reference accepts
`x-hasura-*` ones.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from svc.errors import SvcError
from svc.metadata.session_names import other_spelling
from svc.session_vars import is_session_variable, process_names

NonNegative = Annotated[int, msgspec.Meta(ge=0)]
Seconds = Annotated[float, msgspec.Meta(ge=0)]

UNIQUE_PARAMS_ERROR = "Not a valid value. Should be either: 'IP' or a list of svc session variables"


class IntLimit(msgspec.Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=True):
    """`{global, per_role}` of `depth_limit`, `node_limit` and `batch_limit` (counts)."""

    global_: NonNegative = msgspec.field(name="global")
    per_role: dict[str, NonNegative] = msgspec.field(default_factory=dict)

    def of(self, role: str) -> int:
        """The limit of `role`: its own entry, else the global one."""
        return self.per_role.get(role, self.global_)


class TimeLimit(msgspec.Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=True):
    """`{global, per_role}` of `time_limit`, in seconds (fractions allowed, as the
    reference's `realFracWithLowerBoundCodec 0`)."""

    global_: Seconds = msgspec.field(name="global")
    per_role: dict[str, Seconds] = msgspec.field(default_factory=dict)

    def of(self, role: str) -> float:
        """The time limit of `role` in seconds: its own entry, else the global one."""
        return self.per_role.get(role, self.global_)


class RateRule(msgspec.Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=True):
    """One rate limit: at most `max_reqs_per_min` GraphQL operations per minute, counted per
    role and, with `unique_params`, per client IP (`"IP"`) or per the values of the listed
    session variables."""

    max_reqs_per_min: NonNegative
    unique_params: str | list[str] | None = None


class RateLimit(msgspec.Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=True):
    """`{global, per_role}` of `rate_limit`."""

    global_: RateRule = msgspec.field(name="global")
    per_role: dict[str, RateRule] = msgspec.field(default_factory=dict)

    def of(self, role: str) -> RateRule:
        """The rate rule of `role`: its own entry, else the global one."""
        return self.per_role.get(role, self.global_)


class ApiLimits(msgspec.Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=True):
    """The `api_limits` object (also `set_api_limits`'s arguments). Limits never apply to
    the admin role (reference docs, "Admin & IntrospectionQuery exemptions")."""

    disabled: bool = False
    depth_limit: IntLimit | None = None
    node_limit: IntLimit | None = None
    batch_limit: IntLimit | None = None
    time_limit: TimeLimit | None = None
    rate_limit: RateLimit | None = None

    def is_empty(self) -> bool:
        """True when it says nothing (the reference then omits `api_limits` on export)."""
        return self == ApiLimits()


class IntrospectionOptions(
    msgspec.Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=True
):
    """`graphql_schema_introspection` (also the arguments of
    `set_graphql_schema_introspection_options`): roles that may not introspect.
    `disabled_for_roles` is required, as in the reference."""

    disabled_for_roles: list[str]


def _convert(obj: Any, kind: type[Any], path: str) -> Any:
    try:
        return msgspec.convert(obj, kind)
    except msgspec.ValidationError as exc:
        message, _, where = str(exc).partition(" - at `")
        suffix = where.rstrip("`")[1:] if where else ""
        raise SvcError("parse-failed", message, path=path + suffix) from None


def _check_roles(names: Any, path: str) -> None:
    for role in names:
        if not role:
            raise SvcError("parse-failed", "a role name cannot be empty", path=path)


def _unique_params(value: str | list[str] | None, path: str) -> str | list[str] | None:
    """`"IP"` (any case) or a list of `x-svc-*` session variables but `x-svc-role`
    (lower-cased); raises 400 `parse-failed` with the reference's message otherwise."""
    if value is None:
        return None
    if isinstance(value, str):
        if value.lower() == "ip":
            return "IP"
        raise SvcError("parse-failed", UNIQUE_PARAMS_ERROR, path=path)
    names = [v.lower() for v in value]
    for k, name in enumerate(value):
        hint = other_spelling(name)
        if hint is not None:
            raise SvcError("parse-failed", hint, path=f"{path}[{k}]")
    role = process_names().role_variable
    if any(not is_session_variable(n) or n == role for n in names):
        raise SvcError("parse-failed", UNIQUE_PARAMS_ERROR, path=path)
    return names


def api_limits_from_obj(obj: Any, path: str = "$.args") -> ApiLimits | None:
    """`ApiLimits` from user JSON (`set_api_limits`, `replace_metadata`, `api_limits.yaml`);
    None when it says nothing. Raises 400 `parse-failed` at the JSON path of the first bad
    value (a negative limit, a non-number, an unknown key, a bad `unique_params`)."""
    limits: ApiLimits = _convert({} if obj is None else obj, ApiLimits, path)
    for key in ("depth_limit", "node_limit", "batch_limit", "time_limit", "rate_limit"):
        part = getattr(limits, key)
        if part is not None:
            _check_roles(part.per_role, f"{path}.{key}.per_role")
    if limits.rate_limit is not None:
        rate = limits.rate_limit
        where = f"{path}.rate_limit"
        glob = _rule(rate.global_, f"{where}.global.unique_params")
        per = {r: _rule(v, f"{where}.per_role.{r}.unique_params") for r, v in rate.per_role.items()}
        limits = msgspec.structs.replace(limits, rate_limit=RateLimit(glob, per))
    return None if limits.is_empty() else limits


def _rule(rule: RateRule, path: str) -> RateRule:
    return RateRule(rule.max_reqs_per_min, _unique_params(rule.unique_params, path))


def introspection_from_obj(obj: Any, path: str = "$.args") -> IntrospectionOptions | None:
    """`IntrospectionOptions` from user JSON; None when no role is listed. Raises 400
    `parse-failed` (`disabled_for_roles` missing or not a list of strings)."""
    options: IntrospectionOptions = _convert(obj, IntrospectionOptions, path)
    _check_roles(options.disabled_for_roles, f"{path}.disabled_for_roles")
    if not options.disabled_for_roles:
        return None
    return IntrospectionOptions(sorted(set(options.disabled_for_roles)))
