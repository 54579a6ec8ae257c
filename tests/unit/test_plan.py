from __future__ import annotations

import json

import pytest

from muster_exact import Plan, PlanError, derive, explain


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


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.update(extra=1), "unknown keys: extra"),
        (lambda d: d.update(schema_version=99), "schema_version 99"),
        (lambda d: d.update(branch="novel"), "unknown branch"),
        (lambda d: d["stats"].update(bogus=2), r"plan.stats has unknown keys: bogus"),
        (lambda d: d.pop("floors"), "incomplete"),
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
