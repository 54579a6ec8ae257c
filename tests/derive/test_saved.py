"""A saved derive result (muster_exact.derive.saved): read back equal, and bytes that are damaged or
describe other records refused with ValueError, never another error."""

from __future__ import annotations

import io
import json
from functools import cache

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from muster_exact.derive import Derived, analyse, saved
from muster_exact.text.records import from_records
from tests.derive.test_growth import pools

pytestmark = pytest.mark.fast  # no model, no harness run: `make test-fast`


@cache
def derived_stores() -> dict[str, tuple[list[str], Derived]]:
    p = pools()
    stores = {
        "numbered": p["facts"][:150],
        "native": [*p["steps"][:40], p["turns"][0], *p["steps"][40:60]],
        "record_store": p["turns"][:150],
        "prose": [*p["long"], *p["turns"][:10]],
    }
    return {name: (records, analyse(records)) for name, records in stores.items()}


@pytest.mark.parametrize("name", ["numbered", "native", "record_store", "prose"])
def test_a_saved_derive_result_reads_back_equal(name: str) -> None:
    records, derived = derived_stores()[name]
    loaded = saved.load(saved.dump(derived), from_records(records))
    assert loaded.plan == derived.plan and loaded.cut == derived.cut and loaded.tally == derived.tally
    assert derived.plan.branch == {"numbered": "numbered_log", "native": "numbered_log"}.get(name, name)


def rewritten(blob: bytes, **changes: object) -> bytes:
    with np.load(io.BytesIO(blob), allow_pickle=False) as archive:
        arrays = {k: archive[k] for k in archive.files}
    for key, value in changes.items():
        arrays[key] = value  # type: ignore[assignment]
    out = io.BytesIO()
    np.savez(out, **arrays)  # type: ignore[arg-type]
    return out.getvalue()


def meta_of(blob: bytes) -> dict:
    with np.load(io.BytesIO(blob), allow_pickle=False) as archive:
        return json.loads(archive["meta"].tobytes())


def as_meta(meta: dict) -> np.ndarray:
    return np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)


def test_bytes_that_do_not_fit_the_records_are_refused() -> None:
    records, derived = derived_stores()["record_store"]
    source = from_records(records)
    blob = saved.dump(derived)
    n = len(derived.cut.units)
    damaged = {
        "unit past the text": rewritten(blob, end=np.full(n, len(source.text) + 5)),
        "parent out of range": rewritten(blob, parent=np.full(n, 10**6)),
        "order not a permutation": rewritten(blob, serial_order=np.zeros(n, dtype=np.int64)),
        "short column": rewritten(blob, tokens=np.zeros(n - 1, dtype=np.int64)),
        "record out of range": rewritten(blob, records=np.full(len(derived.cut.units), 10**6)),
        "object array": rewritten(blob, start=np.array([object()] * n)),
        "other format": rewritten(blob, meta=as_meta({**meta_of(blob), "format": 99})),
        "no plan": rewritten(blob, meta=as_meta({k: v for k, v in meta_of(blob).items() if k != "plan"})),
        "not JSON": rewritten(blob, meta=np.frombuffer(b"\xff{", dtype=np.uint8)),
        "a plan of another schema": rewritten(
            blob, meta=as_meta({**meta_of(blob), "plan": {**meta_of(blob)["plan"], "schema_version": 7}})
        ),
        "counts of the wrong type": rewritten(blob, meta=as_meta({**meta_of(blob), "slots": 5})),
    }
    for why, bytes_ in damaged.items():
        with pytest.raises(ValueError):
            saved.load(bytes_, source)
            pytest.fail(why)
    # Saved for the first 100 records: refused for 150.
    fewer = saved.dump(analyse(records[:100]))
    with pytest.raises(ValueError):
        saved.load(fewer, source)


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_any_damage_to_the_bytes_is_a_value_error_or_a_valid_result(data: st.DataObject) -> None:
    records, derived = derived_stores()[data.draw(st.sampled_from(["numbered", "record_store"]))]
    blob = bytearray(saved.dump(derived))
    for _ in range(data.draw(st.integers(1, 8))):
        at = data.draw(st.integers(0, len(blob) - 1))
        blob[at] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        blob = blob[: data.draw(st.integers(0, len(blob)))]
    try:
        loaded = saved.load(bytes(blob), from_records(records))
    except ValueError:
        return
    assert len(loaded.cut.units) == loaded.plan.stats.units
