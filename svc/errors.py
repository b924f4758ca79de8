"""The one error type of svc, shared by every layer.

An `SvcError` carries what both answer formats need (spec section 7, design brief 3):
`/v1/query` answers `{"path", "error", "code"}` with the HTTP status; GraphQL answers
`{"errors": [{"message", "extensions": {"path", "code"}}]}` with HTTP 200.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Self


class ErrorCode(StrEnum):
    """Every error code svc answers, as the JSON shows it (`code`, `extensions.code`).

    The codes are the reference implementation's (Hasura v2 `Hasura.Base.Error` `Code`;
    spec section 7). A member is its string (`ErrorCode.NOT_FOUND == "not-found"`), so
    answers and comparisons with the text are unchanged.
    """

    ACCESS_DENIED = "access-denied"
    ALREADY_EXISTS = "already-exists"
    ALREADY_TRACKED = "already-tracked"
    ALREADY_UNTRACKED = "already-untracked"
    BAD_REQUEST = "bad-request"
    ANSWER_LIMIT_EXCEEDED = "answer-limit-exceeded"  # svc/api/answer_limits.py
    BATCH_LIMIT_EXCEEDED = "batch-limit-exceeded"
    COERCION_ERROR = "coercion-error"  # a remote preset's session value its type refuses
    CONFLICT = "conflict"
    CONSTRAINT_VIOLATION = "constraint-violation"
    CYCLIC_DEPENDENCY = "cyclic-dependency"
    DATA_EXCEPTION = "data-exception"
    DEPENDENCY_ERROR = "dependency-error"
    DEPTH_LIMIT_EXCEEDED = "depth-limit-exceeded"
    INVALID_CONFIGURATION = "invalid-configuration"
    INVALID_HEADERS = "invalid-headers"
    INVALID_JSON = "invalid-json"
    INVALID_JWT = "invalid-jwt"
    INVALID_PARAMS = "invalid-params"
    JWT_INVALID_CLAIMS = "jwt-invalid-claims"
    JWT_MISSING_ROLE_CLAIMS = "jwt-missing-role-claims"
    METHOD_NOT_ALLOWED = "method-not-allowed"
    NODE_LIMIT_EXCEEDED = "node-limit-exceeded"
    NOT_EXISTS = "not-exists"
    NOT_FOUND = "not-found"
    NOT_SUPPORTED = "not-supported"
    PARSE_FAILED = "parse-failed"
    PERMISSION_DENIED = "permission-denied"
    PERMISSION_ERROR = "permission-error"
    POSTGRES_ERROR = "postgres-error"
    RATE_LIMIT_EXCEEDED = "rate-limit-exceeded"
    REMOTE_SCHEMA_CONFLICTS = "remote-schema-conflicts"
    REMOTE_SCHEMA_ERROR = "remote-schema-error"  # a remote's answer or schema
    START_FAILED = "start-failed"  # a websocket operation that cannot start
    UNEXPECTED = "unexpected"
    UNEXPECTED_PAYLOAD = "unexpected-payload"
    VALIDATION_FAILED = "validation-failed"


class SvcError(Exception):
    """A request failed in a way the client should see.

    `code` is an `ErrorCode` (its text is accepted too: `"not-exists"`; a text that is no
    member raises ValueError), `status` the HTTP status for the metadata API (400 unless
    the spec's table says otherwise), `path` the JSON path of the offending input
    (`$.args.name`), `internal` optional detail shown only to admins (e.g. the raw Postgres
    error).
    """

    def __init__(
        self,
        code: ErrorCode | str,
        message: str,
        *,
        status: int = 400,
        path: str = "$",
        internal: Any = None,
    ) -> None:
        super().__init__(message)
        self.code = ErrorCode(code)
        self.message = message
        self.status = status
        self.path = path
        self.internal = internal

    def at(self, prefix: str) -> Self:
        """A copy of this error re-rooted under `prefix` (`$.args` + `$.name` →
        `$.args.name`); this one is unchanged (errors may be shared constants)."""
        moved = type(self).__new__(type(self))
        moved.__dict__.update(self.__dict__)
        moved.args = self.args
        suffix = self.path[1:] if self.path.startswith("$") else self.path
        moved.path = prefix + suffix
        return moved

    def to_query_body(self, *, admin: bool = True) -> dict[str, Any]:
        """The `/v1/query` error body: `{path, error, code}` (+ `internal` for admins)."""
        body: dict[str, Any] = {"path": self.path, "error": self.message, "code": self.code}
        if admin and self.internal is not None:
            body["internal"] = self.internal
        return body

    def to_graphql_error(self, *, admin: bool = True) -> dict[str, Any]:
        """One entry of a GraphQL `errors` list: `{message, extensions: {path, code}}`."""
        ext: dict[str, Any] = {"path": self.path, "code": self.code}
        if admin and self.internal is not None:
            ext["internal"] = self.internal
        return {"extensions": ext, "message": self.message}


class TransportError(SvcError):
    """An error about how a request reached svc, not about its operation: GraphQL
    endpoints, which answer operation errors with HTTP 200, answer it with its own
    `status` (a subscription sent over HTTP POST: 400 `unexpected-payload`)."""


def not_exists(message: str, path: str = "$.args") -> SvcError:
    """400 `not-exists` (spec section 7)."""
    return SvcError(ErrorCode.NOT_EXISTS, message, path=path)


def already_exists(message: str, path: str = "$.args") -> SvcError:
    """400 `already-exists` (spec section 7)."""
    return SvcError(ErrorCode.ALREADY_EXISTS, message, path=path)


def parse_failed(message: str, path: str = "$") -> SvcError:
    """400 `parse-failed`: input did not have the expected shape."""
    return SvcError(ErrorCode.PARSE_FAILED, message, path=path)


def validation_failed(message: str, path: str = "$") -> SvcError:
    """`validation-failed`: a GraphQL document or variable does not fit the schema."""
    return SvcError(ErrorCode.VALIDATION_FAILED, message, path=path)


def pattern_too_long(length: int, limit: int) -> SvcError:
    """400 `validation-failed`: a regular expression longer than the role may send
    (`SVC_GRAPHQL_MAX_PATTERN_LENGTH`; Postgres compiles it per statement, and 20 patterns
    of 100,000 characters held every connection for 40 s)."""
    return SvcError(
        ErrorCode.VALIDATION_FAILED,
        f"a pattern of {length} characters is longer than the limit of {limit} "
        "(SVC_GRAPHQL_MAX_PATTERN_LENGTH)",
        path="$",
    )
