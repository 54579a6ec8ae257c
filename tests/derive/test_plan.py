from __future__ import annotations

import json

import pytest

from muster_exact import Plan, PlanError, derive, explain
from muster_exact.derive.plan import SCHEMA_VERSION

pytestmark = pytest.mark.fast  # no model, no harness run: `make test-fast`


@pytest.fixture
def plan() -> Plan:
    return derive(
        "1. The CEO of Acme is Ann Lee.\n2. The CEO of Acme is Bo Li.\n3. Kyd died in the city of Rome."
    )


def test_round_trip_is_exact(plan: Plan) -> None:
    again = Plan.from_json(plan.to_json())
    assert again == plan
    assert again.to_json() == plan.to_json()


def test_explain_names_branch_and_reasons(plan: Plan) -> None:
    text = explain(plan)
    assert text.startswith("branch: numbered log")
    assert "serial share 1.0000" in text and "newest version of a slot wins: yes" in text
    lines = text.splitlines()
    start = lines.index("floors per 10 units, by channel; read budget U = 10")
    assert lines[start + 1 : start + 4] == ["  dense  2", "  bm25   0", "  graph  8"]  # one line per channel


# The plan above as version 1 wrote it (muster_exact at 3a1eeeb): floors as a list of three.
V1_PLAN = (
    '{"branch": "numbered_log", "floors": [2, 0, 8], "layout": "text", "mode": "native", '
    '"native_continuity": null, "native_median_tokens": null, "order": "serial", '
    '"parent_group_size": null, "parent_rule": "slot", "prose_budget": 1024, "reasons": '
    "[\"serial share 1.0000: 3 of 3 non-empty lines start with 'N. ' (numbered log at >= 0.80)\", "
    '"record share 1.0000: 33 of 33 tokens sit in records of <= 512 tokens (record store at >= 0.90)", '
    '"numbered log: serial share reaches the threshold; units are lines, ordered by serial", '
    '"parents: one per slot (entity + attribute); 2 slots, 1 with more than one version"], '
    '"record_budget": 512, "record_share": 1.0, "retrieval": null, "schema_version": 1, '
    '"serial_share": 1.0, "serial_style": "dot", "stats": {"lines": 3, "oversize_records": 0, '
    '"parents": 2, "records": 1, "slots_with_versions": 1, "tokens": 33, "units": 3}, '
    '"supersession": true, "thresholds": {"native_continuity": 0.95, "native_median_tokens": 20.0, '
    '"record_share": 0.9, "serial_share": 0.8}, "unit_budget": null, "units_read": 10}'
)


def test_a_version_1_plan_reads_as_the_same_plan(plan: Plan) -> None:
    old = Plan.from_json(V1_PLAN)
    assert old == plan
    assert old.floors == {"dense": 2, "bm25": 0, "graph": 8}
    assert list(old.floors) == ["dense", "bm25", "graph"]  # channel order, not the JSON's
    assert old.to_json() == plan.to_json()  # written back in the current version
    assert json.loads(plan.to_json())["schema_version"] == SCHEMA_VERSION == 2
    assert json.loads(plan.to_json())["floors"] == {"dense": 2, "bm25": 0, "graph": 8}


def test_a_version_1_plan_needs_three_floors() -> None:
    data = json.loads(V1_PLAN)
    data["floors"] = [2, 8]
    with pytest.raises(PlanError, match="version-1 plan's floors list three numbers"):
        Plan.from_dict(data)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.update(extra=1), "unknown keys: extra"),
        (lambda d: d.update(schema_version=99), "schema_version 99"),
        (lambda d: d.update(branch="novel"), "unknown branch"),
        (lambda d: d["stats"].update(bogus=2), r"plan.stats has unknown keys: bogus"),
        (lambda d: d.pop("floors"), "incomplete"),
        (lambda d: d.update(floors=[2, 0, 8]), "floors must map channel names"),
        (
            lambda d: d.update(floors={"dense": 2, "grpah": 8}),
            "unknown retrieval channel 'grpah'; did you mean graph",
        ),
        (lambda d: d.update(floors={"dense": -1}), "floors must map channel names to whole numbers"),
    ],
)
def test_malformed_plans_are_refused(plan: Plan, mutate, message) -> None:
    data = json.loads(plan.to_json())
    mutate(data)
    with pytest.raises(PlanError, match=message):
        Plan.from_json(json.dumps(data))


def test_not_json() -> None:
    with pytest.raises(PlanError, match="not valid JSON"):
        Plan.from_json("{")
