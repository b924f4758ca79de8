"""What an outbound call gives back, whichever HTTP library made it: an
`OutboundResponse`, or an `OutboundError` of one of four kinds."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import msgspec

from svc.errors import ErrorCode, SvcError

Kind = Literal["timeout", "connection", "invalid-response", "invalid-url"]
# What each kind says; the texts are those of the reference's HTTP exception log
# (`Response timeout`, `Connection failure`, …) so callers can show them unchanged.
_MESSAGES: dict[str, str] = {
    "timeout": "Response timeout",
    "connection": "Connection failure",
    "invalid-response": "Invalid response",
    "invalid-url": "Invalid URL",
}
HeaderPairs = Sequence[tuple[str, str]] | Sequence[tuple[bytes, bytes]] | Mapping[str, str]


class OutboundError(SvcError):
    """An outbound call got no usable HTTP answer: 500 `unexpected` with `kind`
    (`timeout`: a connect, send, read or pool wait took longer than allowed;
    `connection`: refused, reset or unreachable; `invalid-response`: not HTTP;
    `invalid-url`: the URL cannot be requested), `url` and `detail` (the library's own
    text). Callers turn it into the reference's error for their feature."""

    def __init__(self, kind: Kind, url: str, detail: str = "") -> None:
        super().__init__(ErrorCode.UNEXPECTED, _MESSAGES[kind], status=500)
        self.kind: Kind = kind
        self.url = url
        self.detail = detail


@dataclass(frozen=True, slots=True)
class OutboundResponse:
    """An HTTP answer: `status`, `headers` (lower-cased names, in the order received,
    repeats kept), `body` (bytes, content-decoded), `elapsed` (seconds from sending the
    request to reading the whole body)."""

    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes
    elapsed: float

    def header(self, name: str) -> str | None:
        """The value of header `name` (any case; repeated headers joined by ", ", as
        RFC 9110 combines them), None when absent."""
        wanted = name.lower()
        values = [v for k, v in self.headers if k == wanted]
        return ", ".join(values) if values else None

    def json(self) -> Any:
        """The body decoded as JSON; raises msgspec.DecodeError when it is not JSON."""
        return msgspec.json.decode(self.body)


def header_list(headers: HeaderPairs) -> list[tuple[str, str]]:
    """`headers` as (name, value) text pairs in their order (bytes read as latin-1, as
    HTTP/1.1 header bytes are)."""
    items = headers.items() if isinstance(headers, Mapping) else headers
    out: list[tuple[str, str]] = []
    for name, value in items:
        k = name.decode("latin-1") if isinstance(name, bytes) else name
        v = value.decode("latin-1") if isinstance(value, bytes) else value
        out.append((k, v))
    return out
