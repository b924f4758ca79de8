"""URLs and query strings of transformed webhook requests, as the reference builds them
(http-types' `renderQuery True`, `parseQuery`; `Transform/Url.hs`, `QueryParams.hs`):
`-_.~` and alphanumerics kept, everything else `%XX`. Used by `svc.outbound.transform`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote_to_bytes, urlsplit

from svc.outbound.transform_spec import TransformError

# --------------------------------------------------------------------------- URLs

URI_PATTERN = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]*$")


def transformation_error(message: str, value: Any = None) -> TransformError:
    error: dict[str, Any] = {"error_code": "TransformationError", "message": message}
    if value is not None:
        error["value"] = value
    return TransformError([error])


def query_encode(text: str) -> str:
    """http-types' `urlEncode True`: alphanumerics and `-_.~` kept, the rest `%XX`."""
    return quote(text, safe="")


def _url_decode(text: str) -> str:
    return unquote_to_bytes(text.replace("+", " ")).decode("utf-8", "replace")


def parse_query(text: str) -> list[tuple[str, str | None]]:
    """http-types' `parseQuery`: a leading `?` dropped, pairs split at `&` or `;`, `+`
    and `%XX` decoded; a key without `=` has no value."""
    text = text.removeprefix("?")
    out: list[tuple[str, str | None]] = []
    while text:
        m = re.search("[&;]", text)
        piece, text = (text, "") if m is None else (text[: m.start()], text[m.end() :])
        key, eq, value = piece.partition("=")
        out.append((_url_decode(key), _url_decode(value) if eq else None))
    return out


def render_query(params: Sequence[tuple[str, str | None]]) -> str:
    """http-types' `renderQuery True`: `?k=v&k2` (empty for no parameters)."""
    if not params:
        return ""
    parts = [
        query_encode(k) if v is None else f"{query_encode(k)}={query_encode(v)}" for k, v in params
    ]
    return "?" + "&".join(parts)


@dataclass(frozen=True, slots=True)
class Url:
    secure: bool
    host: str
    port: int
    path: str
    query: str

    def text(self) -> str:
        default = 443 if self.secure else 80
        port = "" if self.port == default else f":{self.port}"
        return f"{'https' if self.secure else 'http'}://{self.host}{port}{self.path}{self.query}"


def split_url(url: str, *, default_path: str) -> Url | None:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if not parts.netloc:
        return None
    secure = parts.scheme.lower() == "https"
    host = parts.netloc.rsplit("@", 1)[-1]
    if parts.port is not None or host.endswith(":"):
        host = host.rsplit(":", 1)[0]
    userinfo = parts.netloc[: -len(parts.netloc.rsplit("@", 1)[-1])]
    query = "?" + parts.query if parts.query else ""
    return Url(
        secure,
        userinfo + host,
        port if port is not None else (443 if secure else 80),
        parts.path or default_path,
        query,
    )
