"""Headless Chromium driven over the Chrome DevTools Protocol (a websocket): enough to load
a page, run JavaScript in it, wait for a condition and take a screenshot (issue 18's
console test). `chromium()` is None when no browser is installed (Debian: `apt-get install
chromium`)."""

from __future__ import annotations

import base64
import itertools
import json
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from websockets.sync.client import connect

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome")


def chromium() -> str | None:
    """The path of an installed Chromium, or None."""
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    return None


class Browser:
    """One headless Chromium with one page. `evaluate(js)` returns the expression's value
    (awaiting a promise); `wait_for(js)` polls until it is truthy (raises TimeoutError);
    `screenshot(path)` writes a PNG; after `record_network()`, `events(name)` gives the
    DevTools events seen so far (websocket frames among them). Close with `close()` (or use
    `with`)."""

    def __init__(self, executable: str, width: int = 1400, height: int = 900) -> None:
        self.profile = tempfile.mkdtemp(prefix="svc-chromium-")
        self.proc = subprocess.Popen(
            [
                executable,
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--remote-debugging-port=0",
                f"--user-data-dir={self.profile}",
                f"--window-size={width},{height}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        port = self._devtools_port()
        pages = httpx.get(f"http://127.0.0.1:{port}/json/list", timeout=10).json()
        page = next(p for p in pages if p.get("type") == "page")
        self.ws = connect(page["webSocketDebuggerUrl"], max_size=64 * 1024 * 1024)
        self.ids = itertools.count(1)
        self.seen: list[dict[str, Any]] = []  # every DevTools event received, in order
        self.send("Runtime.enable")
        self.send("Page.enable")

    def _devtools_port(self, timeout: float = 30) -> int:
        assert self.proc.stderr is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            found = re.search(r"DevTools listening on ws://[^:]+:(\d+)/", line)
            if found:
                return int(found.group(1))
            if not line and self.proc.poll() is not None:
                break
        raise RuntimeError("chromium did not start its DevTools endpoint")

    def send(self, method: str, **params: Any) -> Any:
        """One DevTools command; its result (events in between are kept in `seen`)."""
        ident = next(self.ids)
        self.ws.send(json.dumps({"id": ident, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv(timeout=60))
            if "method" in message and "id" not in message:
                self.seen.append(message)
            elif message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})

    def record_network(self) -> None:
        """From now on keep the page's network events (requests, websockets and their
        frames: `Network.webSocketCreated`, `Network.webSocketHandshakeResponseReceived`,
        `Network.webSocketFrameSent`, `Network.webSocketFrameReceived`, ...)."""
        self.send("Network.enable")

    def events(self, method: str) -> list[dict[str, Any]]:
        """The `params` of every event named `method` received so far, oldest first (events
        arrive while commands run: `wait_for` polls, so it collects them)."""
        return [e.get("params", {}) for e in self.seen if e["method"] == method]

    def goto(self, url: str) -> None:
        """Navigate and wait for the document to finish loading."""
        self.send("Page.navigate", url=url)
        self.wait_for("document.readyState === 'complete'")

    def evaluate(self, expression: str) -> Any:
        """The value of `expression` in the page (a promise is awaited); raises
        RuntimeError with the page's exception text."""
        result = self.send(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in result:
            raise RuntimeError(result["exceptionDetails"].get("text", "exception"))
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 30) -> Any:
        """Poll `expression` every 0.1 s until truthy; its value. Raises TimeoutError."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                value = self.evaluate(expression)
            except RuntimeError:
                value = None
            if value:
                return value
            time.sleep(0.1)
        raise TimeoutError(f"not true within {timeout} s: {expression}")

    def screenshot(self, path: Path) -> Path:
        """Write the page as a PNG at `path` (folders made)."""
        data = self.send("Page.captureScreenshot", format="png")["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        """Stop the browser and remove its profile."""
        try:
            self.ws.close()
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
