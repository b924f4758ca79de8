"""The console: `GET /console` serves GraphiQL on this server's `/v1/graphql`,
`GET /` redirects there, `GET /console/assets/<name>` serves its files.

GraphiQL, React and the explorer plugin are vendored from their npm packages by
`scripts/vendor_console.py` into `svc/server/console_assets/` (gzip-compressed, with
VERSIONS and LICENSES), so the wheel carries them and the server needs no network
(ARCHITECTURE.md "Console"). `console.js` there is ours: it asks for the admin secret when
one is set and starts GraphiQL (history, headers editor, schema docs and explorer;
subscriptions over a graphql-transport-ws websocket). Only with `--enable-console`
(`SVC_GRAPHQL_ENABLE_CONSOLE`; `svc serve` turns it on with the embedded database).
"""

from __future__ import annotations

import gzip
import html
import json
from functools import cache
from importlib import resources

from svc.config import Config
from svc.errors import ErrorCode, SvcError
from svc.session_vars import names_for
from svc.version import VERSION

Response = tuple[int, bytes, list[tuple[str, str]]]
ASSET_TYPES = {
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".ico": "image/x-icon",
}
# The vendored files change only with svc's version: the page names them `?v=<version>`.
ASSET_CACHE = "public, max-age=604800, immutable"
DEFAULT_QUERY = "# Welcome to svc. Write a query, then press Ctrl-Enter.\n{\n  __typename\n}\n"
_NOT_FOUND = SvcError(ErrorCode.NOT_FOUND, "resource does not exist", status=404)
_SCRIPTS = ("react.js", "react-dom.js", "graphiql.js", "plugin-explorer.js", "console.js")
_STYLES = ("graphiql.css", "plugin-explorer.css")


def answer(path: str, headers: dict[str, str], config: Config) -> Response:
    """Answer a `GET` of `/`, `/console` or `/console/assets/<name>`. Raises 404
    `not-found` for an unknown asset or when the console is off."""
    if not config.enable_console:
        raise _NOT_FOUND
    if path == "/":
        return 302, b"", [("location", "/console")]
    if path == "/console":
        header = names_for(config.hasura_compat).admin_secret_header
        page = console_page(bool(config.admin_secrets), header)
        return 200, page, [("content-type", "text/html; charset=utf-8"), *_NO_STORE]
    name = path.removeprefix("/console/assets/")
    if name == path or "/" in name:
        raise _NOT_FOUND
    return asset(name, "gzip" in headers.get("accept-encoding", ""))


_NO_STORE = [("cache-control", "no-store")]


def favicon() -> Response:
    """`GET /favicon.ico`: svc's icon (32x32, ours), console on or off: browsers ask for it
    on every origin they open, and a 404 there is noise in their console and our logs."""
    return asset("favicon.ico", False)


def asset(name: str, gzip_ok: bool) -> Response:
    """One file of `console_assets` (`.js`, `.css` or `.ico`): gzip-encoded when the client
    accepts it, else decompressed. Raises 404 `not-found` for any other name."""
    kind = ASSET_TYPES.get(name[name.rfind(".") :]) if "." in name else None
    if kind is None:
        raise _NOT_FOUND
    data, compressed = _read(name)
    headers = [("content-type", kind), ("cache-control", ASSET_CACHE)]
    if compressed and gzip_ok:
        return 200, data, [*headers, ("content-encoding", "gzip"), ("vary", "accept-encoding")]
    return 200, gzip.decompress(data) if compressed else data, headers


@cache
def _read(name: str) -> tuple[bytes, bool]:
    """`(bytes, whether gzip-compressed)` of an asset, read once per process; raises 404."""
    folder = resources.files("svc.server") / "console_assets"
    for candidate, compressed in ((f"{name}.gz", True), (name, False)):
        file = folder / candidate
        if file.is_file():
            return file.read_bytes(), compressed
    raise _NOT_FOUND


@cache
def console_page(admin_secret_set: bool, admin_secret_header: str) -> bytes:
    """The HTML page: the vendored styles and scripts, a login form (shown by console.js
    when an admin secret is set) and the page's configuration as JSON (with the header the
    admin secret goes in: the server's `Names`, `X-Hasura-Admin-Secret` under the Hasura
    names switch)."""
    settings = {
        "graphqlPath": "/v1/graphql",
        "adminSecretSet": admin_secret_set,
        "adminSecretHeader": admin_secret_header,
        "defaultQuery": DEFAULT_QUERY,
    }
    # `</` cannot end the JSON's script element early
    config_json = json.dumps(settings).replace("</", "<\\/")
    styles = "".join(
        f'<link rel="stylesheet" href="/console/assets/{n}?v={VERSION}">' for n in _STYLES
    )
    scripts = "".join(f'<script src="/console/assets/{n}?v={VERSION}"></script>' for n in _SCRIPTS)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>svc console</title><link rel="icon" href="/favicon.ico">{styles}
<style>
body {{ margin: 0; height: 100vh; font-family: system-ui, sans-serif; }}
#graphiql {{ height: 100vh; }}
#svc-login {{ max-width: 22rem; margin: 20vh auto; display: grid; gap: .75rem; }}
#svc-login[hidden] {{ display: none; }}
#svc-login input, #svc-login button {{ font-size: 1rem; padding: .5rem; }}
</style></head>
<body>
<form id="svc-login" hidden><h1>svc {html.escape(VERSION)}</h1>
<label for="svc-secret">Admin secret</label>
<input id="svc-secret" type="password" autocomplete="current-password" required>
<button type="submit">Open the console</button><p id="svc-login-message" role="alert"></p>
</form>
<div id="graphiql"></div>
<script type="application/json" id="svc-console-config">{config_json}</script>
{scripts}
</body></html>
""".encode()
