"""The metadata version every worker of one `svc serve` must have reached before it answers.

Read-your-writes across workers: when the metadata API answers on one
Granian worker, the other workers must already serve the new version. `svc serve` creates a
small file (`create`, in /dev/shm when present so it never touches a disk) and passes its
path to the workers in the environment variable `ENV_VAR`; each worker maps it
(`SharedVersion.open`). The file holds one little-endian signed 64-bit integer at offset 0:
the highest metadata `resource_version` some worker of this process has installed.

- A worker that installs a state (its own write, or a reload after another process's
  write) raises the counter to that version (`raise_to`: read, max, write under an
  exclusive `fcntl.flock`, so a slower writer never lowers it), after its commit and its
  state swap and before the metadata API answers.
- Every request reads the counter (`read`: one `struct.unpack_from` on the map, well under
  a microsecond) and, when it is above the version the worker has caught up to, waits for
  the worker to reload before it answers (`svc.api.engine.Engine`).

An aligned 8-byte store is one machine write on the platforms svc runs on, and resource
versions stay below 2**31 (an `integer` column), so a reader never sees a torn value that
matters. Only the standard library is used; the map is shared, never copied.
"""

from __future__ import annotations

import contextlib
import fcntl
import mmap
import os
import struct
import tempfile
from pathlib import Path

ENV_VAR = "SVC_GRAPHQL_SHARED_VERSION_FILE"
"""Environment variable carrying the file's path from `svc serve` to its workers."""

SIZE = 8
_COUNTER = struct.Struct("<q")


def create() -> Path:
    """Create a new counter file holding 0 and return its path: in /dev/shm when it is a
    writable directory, else the temp dir (`tempfile.gettempdir()`). The caller removes it
    (`remove`) when the server exits. Raises OSError when no file can be created."""
    shm = Path("/dev/shm")
    where = str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None
    fd, name = tempfile.mkstemp(prefix="svc-version-", dir=where)
    try:
        os.write(fd, bytes(SIZE))
    finally:
        os.close(fd)
    return Path(name)


def remove(path: Path) -> None:
    """Delete the counter file; a file already gone is fine."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


class SharedVersion:
    """One worker's map of the counter file. Open with `SharedVersion.open(path)`, close
    with `close()`. Not thread-safe within a process (svc's workers are single-threaded
    event loops); safe across processes."""

    __slots__ = ("_fd", "_map", "path")

    def __init__(self, path: Path, fd: int, mapped: mmap.mmap) -> None:
        self.path = path
        self._fd = fd
        self._map = mapped

    @classmethod
    def open(cls, path: str | Path) -> SharedVersion:
        """Map an existing counter file read-write. Raises OSError (missing file, no
        permission) or ValueError (the file is shorter than 8 bytes)."""
        p = Path(path)
        fd = os.open(p, os.O_RDWR)
        try:
            if os.fstat(fd).st_size < SIZE:
                raise ValueError(f"{p} is not a version counter file ({SIZE} bytes)")
            mapped = mmap.mmap(fd, SIZE, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        except BaseException:
            os.close(fd)
            raise
        return cls(p, fd, mapped)

    def read(self) -> int:
        """The counter: the highest metadata version installed by any worker (0 at first)."""
        value: int = _COUNTER.unpack_from(self._map)[0]
        return value

    def raise_to(self, version: int) -> int:
        """Set the counter to `max(counter, version)` under an exclusive `flock`; returns
        the counter afterwards. Blocks only while another worker holds the lock (a read
        and a write)."""
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            current: int = _COUNTER.unpack_from(self._map)[0]
            if version > current:
                _COUNTER.pack_into(self._map, 0, version)
                current = version
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        return current

    def close(self) -> None:
        """Unmap and close the file (the file itself stays; `svc serve` removes it)."""
        self._map.close()
        os.close(self._fd)
