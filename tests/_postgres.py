"""A throwaway PostgreSQL server for integration tests, started from the machine's binaries.

``running_postgres()`` finds ``initdb``/``pg_ctl`` (on PATH, else Debian's
``/usr/lib/postgresql/<version>/bin``), makes a cluster in a fresh temporary folder, starts it
on a free loopback port (no other address: ``listen_addresses=127.0.0.1``, its socket in the
folder), yields the connection URI, and stops the server and deletes the folder at the end.
The cluster trusts local connections and skips fsync: it holds test data only.  PostgreSQL
refuses to run as root, so as root the server runs as the ``postgres`` user that Debian's
package creates.  ``ServerUnavailable`` says why no server can be started here.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator


class ServerUnavailable(RuntimeError):
    """No PostgreSQL server can be started on this machine (the message says why)."""


def server_binaries() -> str:
    """The folder holding ``initdb`` and ``pg_ctl``."""
    found = shutil.which("pg_ctl")
    candidates = ([os.path.dirname(os.path.realpath(found))] if found else []) + sorted(
        glob.glob("/usr/lib/postgresql/*/bin"),
        key=lambda p: int(p.split("/")[-2]) if p.split("/")[-2].isdigit() else 0,
        reverse=True,
    )
    for folder in candidates:
        if all(os.access(os.path.join(folder, tool), os.X_OK) for tool in ("initdb", "pg_ctl", "postgres")):
            return folder
    raise ServerUnavailable(
        "no PostgreSQL server binaries (initdb, pg_ctl) on this machine; Debian: apt-get install postgresql"
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def running_postgres() -> Iterator[str]:
    """Start a server; yield ``postgresql://postgres@127.0.0.1:<port>/postgres``; stop it."""
    folder = server_binaries()
    as_user: dict[str, str] = {}
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            raise ServerUnavailable("running as root and there is no 'postgres' user to run the server as") from None
        as_user = {"user": "postgres"}
    home = tempfile.mkdtemp(prefix="dsgc-pg-")
    data, log = os.path.join(home, "data"), os.path.join(home, "server.log")
    if as_user:
        shutil.chown(home, user="postgres")
    port = _free_port()

    def run(*args: str) -> None:
        done = subprocess.run(
            [os.path.join(folder, args[0]), *args[1:]], capture_output=True, text=True, timeout=120, **as_user
        )
        if done.returncode:
            detail = done.stderr.strip() or done.stdout.strip()
            if os.path.exists(log):
                with open(log, encoding="utf-8", errors="replace") as handle:
                    detail += "\n" + handle.read()[-2000:]
            raise ServerUnavailable(f"{args[0]} failed ({done.returncode}): {detail}")

    try:
        run("initdb", "-D", data, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8")
        options = f"-p {port} -k {home} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off"
        run("pg_ctl", "start", "-w", "-t", "60", "-D", data, "-l", log, "-o", options)
        try:
            yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
        finally:
            run("pg_ctl", "stop", "-w", "-m", "fast", "-D", data)
    finally:
        shutil.rmtree(home, ignore_errors=True)
