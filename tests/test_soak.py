"""The mixed-load soak (`bench/soak.py`, README "Performance"): queries, mutations,
subscribers, event and cron deliveries and metadata changes at once on the default
`svc serve` (its default worker count).

CI runs one minute with 100 subscribers and asserts what a short run can show: no failed
request, every subscriber answered, every event and due cron event delivered exactly once
(one 2xx invocation each), the samples read from every worker. The growth targets
(RSS <= 5% after warm-up; no growth in tasks, connections, descriptors) need a longer run:
`-m slow` runs five minutes with 1,000 subscribers and `--check` (every target); the
hour-long figures are in the README."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _soak(tmp_path: Path, *options: str, timeout: float) -> tuple[int, dict[str, Any], str]:
    out = tmp_path / "soak.json"
    cmd = [sys.executable, "-m", "bench.soak", "--output", str(out), *options]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    assert out.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    return done.returncode, json.loads(out.read_text()), done.stdout[-3000:]


def test_one_minute_of_mixed_load_delivers_everything_once(tmp_path: Path) -> None:
    _, result, log = _soak(
        tmp_path,
        *("--minutes", "1", "--subscribers", "100", "--warmup", "15"),
        *("--sample-every", "5", "--metadata-every", "15"),
        timeout=400,
    )
    assert result["errors"] == [], log
    assert result["subscribers_with_data"] == 100
    assert result["workers"] >= 2  # the default worker count of `svc serve` here
    assert isinstance(result["queries"], int) and result["queries"] > 100
    assert isinstance(result["metadata_changes"], int) and result["metadata_changes"] >= 4
    delivery = result["delivery"]
    assert isinstance(delivery, dict)
    events = delivery["events"]
    assert events["total"] == delivery["inserted"] == events["delivered"] > 0, delivery
    assert delivery["events_delivered_twice"] == 0
    assert delivery["cron_due"]["delivered"] > 0 and delivery["cron_due"]["not_delivered"] == 0
    assert delivery["cron_delivered_twice"] == 0
    samples = result["samples"]
    assert isinstance(samples, list) and len(samples) >= 8
    assert all(len(s["rss_mb"]) == result["workers"] and s["tasks"] for s in samples)


@pytest.mark.slow
def test_five_minutes_meet_every_target(tmp_path: Path) -> None:
    code, result, log = _soak(tmp_path, "--minutes", "5", "--check", timeout=900)
    assert code == 0, f"{result['failed']}\n{log}"
