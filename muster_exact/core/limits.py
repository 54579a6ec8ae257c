"""Every size limit, in one place: how much one input, record, add, query or request may hold.

Each is imported from here by the code that enforces it and by the code that documents it (the
HTTP API's schema, the CLI's help), so a limit is changed in one line and read the same everywhere.
"""

from __future__ import annotations

# The most bytes one input (a file, or standard input) may hold: 60 times the largest benchmark file
# (4.2 MB), and room for the largest add (64 M characters of up to 4 UTF-8 bytes each).
# ``--max-input-bytes`` or $MUSTER_MAX_INPUT_BYTES change it (records.max_input_bytes).
DEFAULT_MAX_INPUT_BYTES = 256 * 1024 * 1024
# Containers inside one record (metadata and every other field) may nest this deep: far above any real
# record, far below what Python's JSON encoder can recurse through on a server's call stack.
MAX_METADATA_DEPTH = 64
# Containers in one server request (an HTTP body, an MCP message): the envelope, a record and its
# fields' MAX_METADATA_DEPTH levels fit with room; deeper is refused before any route or tool reads
# it (Python's reader stops near 1,000, the MCP SDK's at 200).
MAX_REQUEST_DEPTH = 128
MAX_RECORD_CHARS = 8_000_000  # one record (a long document is fine; a dump of a disk is not)
MAX_ADD_CHARS = 64_000_000  # one add call
MAX_ID_CHARS = 512  # a record id, a namespace
MAX_QUERY_CHARS = 20_000  # a question: long material belongs in the store
MAX_RECORDS_PER_CALL = 10_000  # records in one call of a server (HTTP, MCP)
MAX_UNITS = 200  # a read budget beyond this is almost surely a mistake (and a slow reply)
DEFAULT_MAX_BODY = 16 * 1024 * 1024  # bytes of one HTTP request body (``--max-body`` changes it)
