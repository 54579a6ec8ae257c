"""What differs between the databases a :class:`~muster_exact.store.Store` can live in.

The store's logic (adds, deletes, reads, caches, the schema and its migrations) is one copy of SQL
written for SQLite. An engine holds the rest: how the database is opened and checked, how deleted
text is erased from disk, and where the caches live. :mod:`.sqlite` is the embedded default (one
file); :mod:`.postgres` is a PostgreSQL database named by a ``postgresql://`` URL, whose connection
translates the store's SQL by a short list of rules
(``docs/decisions/0190-store-engines.md``).
"""

from __future__ import annotations


def typed_error(exc: Exception, where: str) -> Exception:
    """A psycopg failure of a store as a typed error: as :mod:`muster_exact.store.postgres_connect`
    maps it, else (a failure it leaves to the Store) one :class:`StoreError` naming the database,
    as the SQLite engine names its file; a text holding U+0000, which PostgreSQL's text cannot
    hold, is the caller's input."""
    from muster_exact.core.errors import InputError, StoreError
    from muster_exact.store.postgres_connect import typed_error as mapped

    if "cannot contain NUL" in str(exc):
        return InputError(
            f"{where} cannot store the character U+0000 in an id, a request id or a namespace "
            "(PostgreSQL text cannot hold it); remove it"
        )
    return mapped(exc, where) or StoreError(f"{where} cannot be used as a store ({str(exc).strip()})")
