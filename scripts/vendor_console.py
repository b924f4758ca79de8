"""Regenerate the console's vendored GraphiQL (svc/server/console_assets/) from npm.

    uv run python scripts/vendor_console.py

Fetches the pinned packages with `npm pack` (the npm registry; no CDN), copies their
browser builds (UMD: no bundler needed) gzip-compressed (mtime 0, so a rerun gives the
same bytes), and writes VERSIONS and LICENSES beside them. Bump a version in PACKAGES and
rerun to update; svc/server/console.py serves whatever this wrote. Needs `npm` and `tar`.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "svc" / "server" / "console_assets"
# package@version -> {file inside the package: name served under /console/assets/}
PACKAGES: dict[str, dict[str, str]] = {
    "react@18.3.1": {"umd/react.production.min.js": "react.js"},
    "react-dom@18.3.1": {"umd/react-dom.production.min.js": "react-dom.js"},
    "graphiql@3.8.3": {"graphiql.min.js": "graphiql.js", "graphiql.min.css": "graphiql.css"},
    "@graphiql/plugin-explorer@3.2.6": {
        "dist/index.umd.js": "plugin-explorer.js",
        "dist/style.css": "plugin-explorer.css",
    },
}
LICENCE_FILES = ("LICENSE", "LICENSE.md", "license")


def fetch(spec: str, into: Path) -> Path:
    """`npm pack spec` into `into`, extracted; returns the package folder."""
    out = subprocess.run(
        ["npm", "pack", "--silent", spec], cwd=into, check=True, capture_output=True, text=True
    )
    archive = into / out.stdout.strip().splitlines()[-1]
    target = into / archive.stem
    with tarfile.open(archive) as tar:
        tar.extractall(target, filter="data")
    return target / "package"


def licence_of(package: Path, spec: str) -> str:
    """The package's licence text, or its `license` field when it ships no file (the
    explorer plugin: MIT, as its repository)."""
    for name in LICENCE_FILES:
        if (package / name).is_file():
            return (package / name).read_text()
    declared = json.loads((package / "package.json").read_text()).get("license", "?")
    return f"{declared} (declared in package.json; the package ships no licence file)\n"


def main() -> int:
    """Write every asset, VERSIONS and LICENSES; returns the exit status."""
    OUT.mkdir(parents=True, exist_ok=True)
    versions: list[str] = []
    licences: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for spec, files in PACKAGES.items():
            package = fetch(spec, Path(tmp))
            for inside, served in files.items():
                data = (package / inside).read_bytes()
                (OUT / f"{served}.gz").write_bytes(gzip.compress(data, 9, mtime=0))
            versions.append(spec)
            licences.append(f"==== {spec} ====\n{licence_of(package, spec)}")
    (OUT / "VERSIONS").write_text("\n".join(versions) + "\n")
    (OUT / "LICENSES").write_text("\n".join(licences))
    print(f"wrote {len(versions)} packages into {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
