"""A throw-away PostgreSQL cluster for the tests (issue 33; docs/decisions/0197-postgres-test-cluster.md).

Each pytest process (each xdist worker) starts one cluster of its own, from the server binaries on
the machine, in a temporary folder under /tmp, and stops it at the end of the session:

- ``initdb`` and ``pg_ctl`` run as the ``postgres`` user when the tests run as root (PostgreSQL
  refuses root), directly otherwise; the superuser is always named ``postgres``.
- Local socket connections are trusted (the fixtures' own administration); TCP connections on
  127.0.0.1 ask a password (SCRAM), so a URL carries all a subprocess needs and a wrong password
  is refused as it would be in production.
- Durability is off (``fsync``, ``synchronous_commit``, ``full_page_writes``): the cluster is thrown
  away, and the tests check what the Store does, not what the disk does.
- A watchdog shell stops the cluster and removes its folder when the pytest process is gone, even
  killed with SIGKILL, so a crash leaves no server behind.

``postgres_cluster`` (session) is the cluster; ``postgres_url`` (per test) is the TCP URL of a fresh
empty database owned by the password-protected role ``muster``, dropped after the test.

Without the server binaries the tests that use them skip, unless ``MUSTER_POSTGRES_REQUIRED=1``
(``make test`` sets it): then they fail, naming ``make install``.
"""

from __future__ import annotations

import atexit
import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

INSTALL = "run make install (as root it installs Debian's postgresql when its binaries are missing)"
SUPERUSER = "postgres"
ROLE, ROLE_PASSWORD = "muster", "muster-test-password"
SUPERUSER_PASSWORD = "postgres-test-password"
OPTIONS = "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
START_TRIES = 3  # a free port found by binding port 0 can be taken before the server binds it


def unavailable(reason: str) -> None:
    """Skip, or fail under ``MUSTER_POSTGRES_REQUIRED=1`` (``make test``), naming the install."""
    if os.environ.get("MUSTER_POSTGRES_REQUIRED") == "1":
        pytest.fail(f"{reason}; MUSTER_POSTGRES_REQUIRED=1 (make test): {INSTALL}", pytrace=False)
    pytest.skip(f"{reason}; {INSTALL}")


def server_bindir() -> Path | None:
    """The folder holding ``initdb`` and ``pg_ctl``: ``pg_config --bindir`` (which may name a
    client-only install), Debian's /usr/lib/postgresql/<version>/bin (newest first), then PATH."""
    candidates: list[Path] = []
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        found = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, timeout=10)
        if found.returncode == 0 and found.stdout.strip():
            candidates.append(Path(found.stdout.strip()))
    versions = glob.glob("/usr/lib/postgresql/*/bin")
    candidates += [Path(p) for p in sorted(versions, key=lambda p: _version(p), reverse=True)]
    if initdb := shutil.which("initdb"):
        candidates.append(Path(initdb).resolve().parent)
    for folder in candidates:
        if all(os.access(folder / name, os.X_OK) for name in ("initdb", "pg_ctl", "postgres")):
            return folder
    return None


def _version(path: str) -> tuple[int, ...]:
    name = Path(path).parent.name
    return tuple(int(part) for part in name.split(".") if part.isdigit())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass(frozen=True)
class PostgresCluster:
    """One running throw-away cluster: where it listens and how to reach it."""

    bindir: Path
    root: Path  # the temporary folder: data/, the log, the socket
    host: str
    port: int
    superuser: str
    superuser_password: str
    role: str  # a password-protected role without superuser rights, owner of each test database
    role_password: str
    start_seconds: float  # initdb and start, measured

    @property
    def socket_dir(self) -> Path:
        return self.root

    @property
    def data_dir(self) -> Path:
        """The cluster's data directory (readable by root: a test may look in its files)."""
        return self.root / "data"

    @property
    def log(self) -> Path:
        return self.root / "postgres.log"

    def url(self, dbname: str = "postgres", user: str | None = None, password: str | None = None) -> str:
        """A TCP URL on 127.0.0.1: the superuser with its password when ``user`` is None, else
        ``user`` with ``password`` (none in the URL when None)."""
        if user is None:
            user, password = self.superuser, self.superuser_password
        auth = quote(user, safe="") + (f":{quote(password, safe='')}" if password is not None else "")
        return f"postgresql://{auth}@{self.host}:{self.port}/{quote(dbname, safe='')}"

    def admin(self, dbname: str = "postgres") -> Any:
        """A superuser connection over the Unix socket (trusted), in autocommit."""
        import psycopg

        return psycopg.connect(
            host=str(self.socket_dir), port=self.port, user=self.superuser, dbname=dbname, autocommit=True
        )

    def create_database(self, owner: str | None = None) -> str:
        """A fresh empty database owned by ``owner`` (the test role by default); its name."""
        name = f"muster_test_{uuid.uuid4().hex[:12]}"
        with self.admin() as db:
            db.execute(f'CREATE DATABASE "{name}" OWNER "{owner or self.role}"')
        return name

    def drop_database(self, name: str) -> None:
        """Drop ``name``, ending any connection a test left open on it."""
        with self.admin() as db:
            db.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


class _Server:
    """Runs the binaries as the right user, and stops the cluster once."""

    def __init__(self, bindir: Path, root: Path) -> None:
        self.bindir, self.root = bindir, root
        self.as_postgres = os.geteuid() == 0
        self.stopped = False

    def command(self, name: str, *args: str) -> list[str]:
        binary = [str(self.bindir / name), *args]
        return ["runuser", "-u", SUPERUSER, "--", *binary] if self.as_postgres else binary

    def run(self, name: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.command(name, *args), cwd=self.root, capture_output=True, text=True, timeout=timeout
        )

    def stop(self) -> None:
        if self.stopped:
            return
        self.stopped = True
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            self.run("pg_ctl", "-D", str(self.root / "data"), "-m", "immediate", "-w", "stop", timeout=60)
        shutil.rmtree(self.root, ignore_errors=True)

    def watchdog(self) -> subprocess.Popen[bytes]:
        """A shell, in a session of its own, that stops the cluster once this process is gone."""
        stop = " ".join(self.command("pg_ctl", "-D", str(self.root / "data"), "-m", "immediate", "stop"))
        script = (
            f"while kill -0 {os.getpid()} 2>/dev/null; do sleep 1; done; "
            f"{stop} >/dev/null 2>&1; rm -rf '{self.root}'"
        )
        return subprocess.Popen(
            ["sh", "-c", script],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )


def _initdb(server: _Server) -> None:
    passwords = server.root / "superuser-password"
    passwords.write_text(SUPERUSER_PASSWORD + "\n")
    if server.as_postgres:
        shutil.chown(server.root, SUPERUSER)
        shutil.chown(passwords, SUPERUSER)
    made = server.run(
        "initdb", "-D", str(server.root / "data"), "-U", SUPERUSER, f"--pwfile={passwords}",
        "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C",
        "--no-sync", "--no-instructions",
    )  # fmt: skip
    passwords.unlink()
    if made.returncode != 0:
        raise RuntimeError(f"initdb failed: {made.stderr.strip() or made.stdout.strip()}")


def _start(server: _Server) -> int:
    """Start the server on a free loopback port; the port."""
    log = server.root / "postgres.log"
    for _ in range(START_TRIES):
        port = _free_port()
        options = f"-k {server.root} -p {port} -c listen_addresses=127.0.0.1 {OPTIONS}"
        data = str(server.root / "data")
        started = server.run("pg_ctl", "-D", data, "-l", str(log), "-w", "-t", "60", "-o", options, "start")
        if started.returncode == 0:
            return port
    tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
    raise RuntimeError(f"pg_ctl start failed: {started.stderr.strip()}\n{tail}")


def _role(cluster: PostgresCluster) -> None:
    with cluster.admin() as db:
        db.execute(f"CREATE ROLE \"{cluster.role}\" LOGIN PASSWORD '{cluster.role_password}'")


class ClusterUnavailable(RuntimeError):
    """What a cluster cannot be started without (the server binaries, psycopg, the postgres user)."""


def _missing() -> str | None:
    """Why no cluster can be started here, or None."""
    bindir = server_bindir()
    if bindir is None:
        return (
            "PostgreSQL server binaries (initdb, pg_ctl) not found by pg_config, "
            "under /usr/lib/postgresql/*/bin or on PATH"
        )
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        return "running as root, and runuser (to start PostgreSQL as the postgres user) is missing"
    try:
        import psycopg  # noqa: F401  # the cluster is administered through it
    except ImportError:
        return "psycopg is not installed"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(SUPERUSER)
        except KeyError:
            return "running as root, and there is no postgres user to start PostgreSQL as"
    return None


@contextlib.contextmanager
def started_cluster() -> Iterator[PostgresCluster]:
    """A throw-away cluster for the length of the block (the tests' fixture, and ``make bench``'s
    replica table); :class:`ClusterUnavailable` when it cannot be started here."""
    reason = _missing()
    if reason is not None:
        raise ClusterUnavailable(reason)
    bindir = server_bindir()
    assert bindir is not None
    began = time.perf_counter()
    root = Path(tempfile.mkdtemp(prefix="muster-pg-", dir="/tmp" if os.path.isdir("/tmp") else None))
    server = _Server(bindir, root)
    atexit.register(server.stop)
    guard = server.watchdog()
    try:
        _initdb(server)
        port = _start(server)
        cluster = PostgresCluster(
            bindir, root, "127.0.0.1", port, SUPERUSER, SUPERUSER_PASSWORD, ROLE, ROLE_PASSWORD,
            time.perf_counter() - began,
        )  # fmt: skip
        _role(cluster)
        yield cluster
    finally:
        server.stop()
        guard.kill()
        guard.wait()


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[PostgresCluster]:
    """This process's cluster, started on first use and stopped at the end of the session."""
    reason = _missing()
    if reason is not None:
        unavailable(reason)
    with started_cluster() as cluster:
        yield cluster


@pytest.fixture
def postgres_url(postgres_cluster: PostgresCluster) -> Iterator[str]:
    """The TCP URL (with the role's password) of a fresh empty database, dropped after the test."""
    name = postgres_cluster.create_database()
    try:
        yield postgres_cluster.url(name, postgres_cluster.role, postgres_cluster.role_password)
    finally:
        postgres_cluster.drop_database(name)
