"""Each size limit is one number (muster_exact.core.limits), and the code that enforces it and the
code that documents it (the HTTP schema, the CLI's defaults) read the same one."""

from __future__ import annotations

import pytest

from muster_exact.cli import build_parser
from muster_exact.core import limits
from muster_exact.core.errors import InputError
from muster_exact.memory import checked_query
from muster_exact.store import validate

pytestmark = pytest.mark.fast  # no model, no harness run: `make test-fast`


def test_the_library_enforces_the_limits() -> None:
    checked_query("q" * limits.MAX_QUERY_CHARS)
    with pytest.raises(InputError, match=f"limited to {limits.MAX_QUERY_CHARS:,}"):
        checked_query("q" * (limits.MAX_QUERY_CHARS + 1))
    with pytest.raises(InputError, match=f"at most {limits.MAX_RECORD_CHARS:,}"):
        validate("x" * (limits.MAX_RECORD_CHARS + 1))
    with pytest.raises(InputError, match=f"1 to {limits.MAX_ID_CHARS} characters"):
        validate({"text": "x", "id": "i" * (limits.MAX_ID_CHARS + 1)})


def test_the_http_schema_and_the_cli_state_the_same_limits() -> None:
    pytest.importorskip("fastapi")
    from muster_exact.serve import http

    query = http.QueryIn.model_json_schema()["properties"]
    assert query["query"]["maxLength"] == limits.MAX_QUERY_CHARS
    assert query["units"]["maximum"] == limits.MAX_UNITS
    add = http.AddIn.model_json_schema()["properties"]
    assert add["records"]["maxItems"] == limits.MAX_RECORDS_PER_CALL
    record = add["records"]["items"]["anyOf"]
    assert record[0]["maxLength"] == record[1]["properties"]["text"]["maxLength"] == limits.MAX_RECORD_CHARS
    assert add["namespace"]["maxLength"] == record[1]["properties"]["id"]["maxLength"] == limits.MAX_ID_CHARS
    parser = build_parser()
    assert parser.parse_args(["http", "--store", "s.muster"]).max_body == limits.DEFAULT_MAX_BODY
