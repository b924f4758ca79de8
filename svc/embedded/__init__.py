"""A private, throwaway Postgres cluster managed from Python (process management).

Layer 0: imports nothing else of svc; `svc.execute.pg_dump` finds its binary through
`find_postgres_bindir`, `svc serve` and the tests start clusters with it.

``svc serve`` without a database URL, and the test suite, start a Postgres server
of their own with :class:`EmbeddedPostgres`.  The server binaries (``initdb``,
``pg_ctl``, ``postgres``) come from the machine (see :func:`find_postgres_bindir`);
nothing here downloads anything.  Only the standard library is used.

Running as root
---------------
Postgres refuses to run as root.  When ``os.geteuid() == 0`` every Postgres binary
is run as an unprivileged account instead: the ``postgres`` system user when it
exists, otherwise a system user ``svcpg`` that is created on first use
(``useradd --system --no-create-home``).  The switch is done with
``setpriv --reuid --regid --init-groups`` or, failing that, ``runuser -u``.

The data directory (and a private socket directory) are ``chown -R``-ed to that
account.  The account must also be able to *traverse* every parent of the data
directory.  If it cannot (typically the requested directory lives under ``/root``,
which is mode 0700, or under pytest's ``/tmp/pytest-of-root``, also 0700), the
cluster is placed in ``/var/tmp/svc-pg-<hash>`` instead (``<hash>`` = first 16 hex
digits of the SHA-256 of the requested absolute path; ``/var/tmp`` is chosen over
``/tmp`` because it normally survives reboots) and the requested path becomes a
symlink to it, so the data is still found through the requested path on later
starts.  Permissions of the user's own directories are never changed.
Use :meth:`EmbeddedPostgres.destroy` to delete a throwaway cluster including a
relocated directory.
"""

from svc.embedded.binaries import find_postgres_bindir
from svc.embedded.cluster import EmbeddedPostgres, default_data_dir

__all__ = ["EmbeddedPostgres", "default_data_dir", "find_postgres_bindir"]
