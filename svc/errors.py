"""The one error type of svc, shared by every layer.

An `SvcError` carries what both answer formats need (spec section 7, design brief 3):
`/v1/query` answers `{"path", "error", "code"}` with the HTTP status; GraphQL answers
`{"errors": [{"message", "extensions": {"path", "code"}}]}` with HTTP 200.
"""

from __future__ import annotations

from typing import Any


class SvcError(Exception):
    """A request failed in a way the client should see.

    `code` is the reference implementation's error code (`not-exists`, `already-tracked`,
    `validation-failed`, …), `status` the HTTP status for the metadata API (400 unless the
    spec's table says otherwise), `path` the JSON path of the offending input (`$.args.name`),
    `internal` optional detail shown only to admins (e.g. the raw Postgres error).
    """

    def __init__(
        self,
        code: str,
        message: str,
        *,
        status: int = 400,
        path: str = "$",
        internal: Any = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status
        self.path = path
        self.internal = internal

    def at(self, prefix: str) -> SvcError:
        """Return this error re-rooted under `prefix` (`$.args` + `$.name` → `$.args.name`)."""
        suffix = self.path[1:] if self.path.startswith("$") else self.path
        self.path = prefix + suffix
        return self

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


def not_exists(message: str, path: str = "$.args") -> SvcError:
    """400 `not-exists` (spec section 7)."""
    return SvcError("not-exists", message, path=path)


def already_exists(message: str, path: str = "$.args") -> SvcError:
    """400 `already-exists` (spec section 7)."""
    return SvcError("already-exists", message, path=path)


def parse_failed(message: str, path: str = "$") -> SvcError:
    """400 `parse-failed`: input did not have the expected shape."""
    return SvcError("parse-failed", message, path=path)


def validation_failed(message: str, path: str = "$") -> SvcError:
    """`validation-failed`: a GraphQL document or variable does not fit the schema."""
    return SvcError("validation-failed", message, path=path)
