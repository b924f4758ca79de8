"""The folder where `svc serve`'s workers keep their metric values (prometheus-client's
multiprocess mode, `svc.server.metrics`): created before Granian starts the workers,
named to them by `PROMETHEUS_MULTIPROC_DIR`, removed on exit. Imports nothing of
prometheus-client, so the parent process picks no value class before the variable is set.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from svc.config import MULTIPROC_ENV, export, multiprocess_dir

ENV_VAR = MULTIPROC_ENV


def create() -> Path | None:
    """A new private folder (in /dev/shm when present: the values are written on every
    request), exported as `PROMETHEUS_MULTIPROC_DIR`; None when the variable is already
    set (the operator chose a folder, which is then left alone). Raises OSError."""
    if multiprocess_dir():
        return None
    base = "/dev/shm" if os.path.isdir("/dev/shm") else None
    folder = Path(tempfile.mkdtemp(prefix="svc-metrics-", dir=base))
    export(ENV_VAR, str(folder))
    return folder


def remove(folder: Path | None) -> None:
    """Remove a folder `create` made (None: nothing to do)."""
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
