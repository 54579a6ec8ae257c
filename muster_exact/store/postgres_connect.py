"""Connecting to PostgreSQL, and the one place its driver's errors become the library's typed errors.

A store on PostgreSQL is named by its URL (``postgresql://user:password@host:port/dbname``). The
driver, psycopg 3, is an optional extra (``muster-memory[postgres]``), imported on first use, so
``import muster_exact`` stays light and a SQLite user never needs it.

Every failure the user can fix leaves as one typed error (docs/decisions/0198-postgres-errors.md),
its message naming the URL with its password hidden (:func:`shown_url`) and what to do:

- a URL libpq cannot read: :class:`StoreError`;
- no server at the host and port, a refused login, a database that does not exist, the connection
  lost mid-request, a server with no connection left: :class:`StoreUnavailable`;
- a role that may not write (read-only transactions, or no write privilege): :class:`StoreReadOnly`;
- the server's disk full: :class:`StoreFull`.

Each is a :class:`StoreError`, which ``serve.http.status_of`` answers 503 and the CLI one line.

Errors the Store handles itself (a unique ``request_id`` taken, a serialisation failure to retry)
and bugs (a malformed statement) are not mapped: :func:`typed_error` answers None for them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from muster_exact.core.errors import StoreError, StoreFull, StoreReadOnly, StoreUnavailable
from muster_exact.core.optional import Extra, require

if TYPE_CHECKING:
    import psycopg

INSTALL = Extra("postgres")
SCHEMES = ("postgresql://", "postgres://")
CONNECT_TIMEOUT_S = 10  # unless the URL sets connect_timeout: a dead host fails in seconds, not minutes
APPLICATION_NAME = "muster"  # how the Store's sessions show in pg_stat_activity, unless the URL names one
URL_FORM = "postgresql://user:password@host:port/dbname"

# SQLSTATEs (PostgreSQL, Appendix A) the Store cannot fix and the user can.
_LOST_STATES = {"57P01", "57P02", "57P03"}  # admin shutdown, crash shutdown, cannot connect now
_LOST_CLASS = "08"  # connection exception
_READ_ONLY_STATE = "25006"  # read_only_sql_transaction
_PRIVILEGE_STATE = "42501"  # insufficient_privilege
_FULL_STATES = {"53100"}  # disk_full
_BUSY_STATES = {"53300"}  # too_many_connections

# libpq reports a failed connection as text alone (no SQLSTATE reaches psycopg): its own wording,
# in English on the client side; the server's FATAL lines follow the server's lc_messages. A
# message none of these match still names the URL and libpq's reason, with the general advice.
_BAD_URL = ("connection is bad: invalid", "invalid connection option", "invalid URI", "invalid percent")
_REFUSED_LOGIN = ("authentication failed", "no pg_hba.conf entry", 'role "', "password")
_NO_DATABASE = ('database "',)
_UNREACHABLE = ("Connection refused", "timeout expired", "resolve host", "translate host name", "No route")
_LOST = ("server closed the connection", "connection is closed", "consuming input failed", "EOF detected")


def is_postgres_url(text: str) -> bool:
    """Whether ``text`` names a PostgreSQL database (``postgresql://`` or ``postgres://``)."""
    return text.lower().startswith(SCHEMES)


def shown_url(url: str) -> str:
    """``url`` with its password, in the user part or a ``password=`` parameter, shown as ``***``.

    It works on the text alone, so a URL too broken to parse is hidden too: everything between
    the user name and the last ``@`` is taken for the password."""
    scheme_end = url.find("://")
    if scheme_end < 0:
        return _hide_password_parameter(url)
    head, rest = url[: scheme_end + 3], url[scheme_end + 3 :]
    at = rest.rfind("@")
    if at >= 0:
        user, colon, _ = rest[:at].partition(":")
        rest = f"{user}{':***' if colon else ''}{rest[at:]}"
    return head + _hide_password_parameter(rest)


def _hide_password_parameter(text: str) -> str:
    return re.sub(r"(?i)(\bpassword\s*=\s*)('[^']*'|[^&\s]*)", r"\1***", text)


def _passwords(url: str) -> list[str]:
    """Every spelling of the URL's password, to scrub from a driver's message."""
    found: list[str] = []
    scheme_end, at = url.find("://"), url.rfind("@")
    if scheme_end >= 0 and at > scheme_end:
        _, colon, password = url[scheme_end + 3 : at].partition(":")
        if colon and password:
            found.append(password)
    found += [m.group(2).strip("'") for m in re.finditer(r"(?i)(\bpassword\s*=\s*)('[^']*'|[^&\s]*)", url)]
    return [s for p in found if p for s in {p, unquote(p)}]


def _one_line(exc: BaseException, url: str) -> str:
    """The driver's message on one line, with any spelling of the URL's password hidden."""
    text = " ".join(str(exc).split())
    for password in sorted(_passwords(url), key=len, reverse=True):
        text = text.replace(password, "***")
    return text


def _matches(text: str, needles: tuple[str, ...]) -> bool:
    return any(needle in text for needle in needles)


def connect(url: str, *, autocommit: bool = False, read_only: bool = False) -> psycopg.Connection[Any]:
    """A connection to the database ``url`` names, or one typed error saying why not.

    ``connect_timeout`` defaults to :data:`CONNECT_TIMEOUT_S` seconds and ``application_name`` to
    ``muster`` unless the URL sets them; ``read_only`` makes every transaction read-only."""
    driver = require("psycopg", INSTALL)
    if not is_postgres_url(url):
        raise StoreError(f"{shown_url(url)} is not a PostgreSQL URL; write it as {URL_FORM}")
    _refuse_unencoded_user_part(url)
    try:
        given = driver.conninfo.conninfo_to_dict(url)
    except driver.Error as exc:
        raise _bad_url(exc, url) from None
    defaults = {"connect_timeout": CONNECT_TIMEOUT_S, "application_name": APPLICATION_NAME}
    extra = {key: value for key, value in defaults.items() if key not in given}
    try:
        connection: psycopg.Connection[Any] = driver.connect(url, autocommit=autocommit, **extra)
    except driver.Error as exc:
        raise (typed_error(exc, url) or _unavailable(exc, url)) from None
    if read_only:
        connection.read_only = True
    return connection


@contextmanager
def typed_errors(url: str) -> Iterator[None]:
    """Run the block, turning a driver error the user can fix into its typed error (one line,
    no traceback chain); any other error leaves unchanged."""
    driver = require("psycopg", INSTALL)
    try:
        yield
    except driver.Error as exc:
        mapped = typed_error(exc, url)
        if mapped is None:
            raise
        raise mapped from None


def typed_error(exc: BaseException, url: str) -> StoreError | None:
    """The typed error for a psycopg error the user can fix, naming ``url`` (password hidden) and
    what to do; None for the others (the Store's own conditions, and bugs)."""
    driver = require("psycopg", INSTALL)
    if not isinstance(exc, driver.Error):
        return None
    state = exc.sqlstate or ""
    text = _one_line(exc, url)
    where = shown_url(url)
    if state == _READ_ONLY_STATE:
        return StoreReadOnly(
            f"{where} can be read but not written ({text}); connect as a role that may write, or turn "
            "off default_transaction_read_only for this role (ALTER ROLE ... SET "
            "default_transaction_read_only = off)"
        )
    if state == _PRIVILEGE_STATE:
        return StoreReadOnly(
            f"the role in {where} may not change the store ({text}); connect as the role that owns the "
            "store's tables, or grant this role INSERT, UPDATE and DELETE on them"
        )
    if state in _FULL_STATES:
        return StoreFull(f"the server of {where} has no disk space left ({text}); free space, then retry")
    if state in _BUSY_STATES:
        return StoreUnavailable(
            f"the server of {where} takes no more connections ({text}); retry, or raise its "
            "max_connections (or put a connection pooler before it)"
        )
    if state in _LOST_STATES or state.startswith(_LOST_CLASS) or (not state and _matches(text, _LOST)):
        return StoreUnavailable(
            f"the connection to {where} was lost mid-request ({text}); the request did not finish: retry "
            "it once the server is back (an add with a request_id is safe to send again)"
        )
    if state or not isinstance(exc, driver.OperationalError):
        return None
    return _connection_failed(exc, url, text)


def _connection_failed(exc: BaseException, url: str, text: str) -> StoreError:
    where = shown_url(url)
    if _matches(text, _BAD_URL):
        return _bad_url(exc, url)
    if _matches(text, _UNREACHABLE):
        return StoreUnavailable(
            f"cannot reach the PostgreSQL server of {where} ({text}); check that the server runs and "
            "accepts TCP connections on that host and port"
        )
    if _matches(text, _NO_DATABASE) and "does not exist" in text:
        return StoreUnavailable(
            f"the database {where} names does not exist on its server ({text}); create it (createdb, "
            "or CREATE DATABASE as a role allowed to) or name an existing one"
        )
    if _matches(text, _REFUSED_LOGIN):
        return StoreUnavailable(
            f"the PostgreSQL server of {where} refused the login ({text}); check the user name and "
            "password in the URL, and that pg_hba.conf lets this user connect from this host"
        )
    return _unavailable(exc, url)


def _refuse_unencoded_user_part(url: str) -> None:
    """Refuse a user name or password holding a bare ``@`` or ``/`` before the driver sees it.

    libpq ends the user part at the first ``@`` or ``/``, so it would read the rest of such a
    password as the host and quote it in its error ("failed to resolve host 'rest@of@it'"); the
    password is hidden up to the last ``@`` (:func:`shown_url`), which is what was meant."""
    authority = url[url.find("://") + 3 :].split("?", 1)[0]
    at = authority.rfind("@")
    if at >= 0 and ("@" in authority[:at] or "/" in authority[:at]):
        raise StoreError(
            f"{shown_url(url)} is not a valid PostgreSQL URL (its user name or password holds a bare '@' "
            f"or '/'; write them %40 and %2F); write it as {URL_FORM}, with any special character of the "
            "password percent-encoded"
        )


def _bad_url(exc: BaseException, url: str) -> StoreError:
    return StoreError(
        f"{shown_url(url)} is not a valid PostgreSQL URL ({_one_line(exc, url)}); write it as {URL_FORM}, "
        "with any special character of the password percent-encoded"
    )


def _unavailable(exc: BaseException, url: str) -> StoreUnavailable:
    return StoreUnavailable(
        f"cannot use the PostgreSQL server of {shown_url(url)} ({_one_line(exc, url)}); check that it runs "
        "and that the URL names the right host, port, user and database"
    )
