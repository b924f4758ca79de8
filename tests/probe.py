"""An admin `{ __typename }` probe in a process of its own, measuring how fast the server
answers while a test loads it (issue 11: "the server answers an admin `{ __typename }` in
< 100 ms throughout"). In the test's own process the probe would wait for the GIL behind
the threads sending load, and measure that instead of the server."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from dataclasses import dataclass

PROBE = """
import json, sys, threading, time
import httpx
stop = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
out = []
admin = {"x-svc-admin-secret": sys.argv[2]} if sys.argv[2] else {}
with httpx.Client(base_url=sys.argv[1], timeout=10, headers=admin) as c:
    while not stop.is_set():
        t = time.monotonic()
        r = c.post("/v1/graphql", json={"query": "{ __typename }"})
        out.append((time.monotonic() - t) * 1000)
        assert r.json() == {"data": {"__typename": "query_root"}}, r.text
        if len(out) == 1:
            print("ready", flush=True)
        time.sleep(0.05)
print(json.dumps(out))
"""


@dataclass
class Latencies:
    """Milliseconds of each probe answer, in order."""

    ms: list[float]

    @property
    def median(self) -> float:
        return statistics.median(self.ms)

    def share_under(self, bound_ms: float) -> float:
        """The fraction of answers faster than `bound_ms`."""
        return sum(1 for m in self.ms if m < bound_ms) / len(self.ms)


class AdminProbe:
    """`with AdminProbe(url, secret) as probe: …` then `probe.result` (`Latencies`); fails
    (AssertionError) when the probe saw a wrong answer or no answer at all."""

    def __init__(self, url: str, secret: str = "") -> None:
        self._proc = subprocess.Popen(
            [sys.executable, "-c", PROBE, url, secret],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.result = Latencies([])

    def __enter__(self) -> AdminProbe:
        # Wait for the first answer, so the probe runs throughout the test's load (on a
        # loaded machine starting Python and httpx alone can outlast a short test body).
        assert self._proc.stdout is not None
        first = self._proc.stdout.readline()
        assert first == "ready\n", "the admin probe got no first answer"
        return self

    def __exit__(self, *exc: object) -> None:
        out, _ = self._proc.communicate("stop\n", timeout=60)
        assert self._proc.returncode == 0, "the admin probe got a wrong answer"
        self.result = Latencies(json.loads(out))
        assert self.result.ms, "the admin probe got no answer"
