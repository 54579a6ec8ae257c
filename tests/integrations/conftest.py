"""A real MUSTER store of 60 records (the packaged CPU embedder, ``cpu-small``), built and read once
per test session and shared by the framework tests that need more than a handful of records;
and the ``asyncio`` mark on the coroutine tests of LangChain's standard suites, which that suite
leaves to its users' configuration (``asyncio_mode = "auto"`` in LangChain's own repositories)."""

from __future__ import annotations

import inspect
import shutil
from pathlib import Path

import pytest

PEOPLE = ("Ana", "Ben", "Chloe", "Dev", "Elif", "Farid", "Greta", "Hugo", "Ines", "Jonas", "Kiri", "Luca")
PLACES = ("shed", "garage", "cellar", "attic", "studio", "boathouse")
CITIES = ("Lisbon", "Oslo", "Porto", "Gdansk", "Tartu", "Lyon", "Bergen", "Turin", "Ghent", "Cork")
FOODS = ("peanuts", "shellfish", "sesame", "kiwi", "mustard", "celery", "lupin", "soy")
MONTHS = ("January", "March", "May", "July", "September", "November")


def sixty_records() -> list[dict[str, str]]:
    """Five facts about each of twelve people, each a record of three sentences (about 58 tokens:
    ``cpu-small`` cuts 15 units of four records each, so a small read chooses among them), with ids
    ``<person>-<fact>`` and the person as speaker."""
    records = []
    for n, person in enumerate(PEOPLE):
        place, city, food = PLACES[n % len(PLACES)], CITIES[n % len(CITIES)], FOODS[n % len(FOODS)]
        facts = {
            "passport": f"{person}'s passport expires in {MONTHS[n % len(MONTHS)]} {2027 + n}. "
            f"{person} renewed it at the consulate last time and said the queue took two hours, "
            "so the plan is to book an appointment online three months ahead and to bring two "
            "printed photos, the old passport and the confirmation letter this time.",
            "key": f"{person} keeps the spare key to the {place} under the blue flower pot by the door. "
            f"Nobody else in the family knows where {person} hides it, and the neighbours were "
            "asked to water the tomatoes while the house is empty in August; they will need "
            "that key, so it has to be back under the pot before the trip.",
            "allergy": f"{person} is allergic to {food}. At the team dinner {person} asked the waiter "
            f"twice whether the sauce had any {food} in it. The restaurant on the corner now keeps "
            "a note of it with the booking, and the office canteen labels every dish, which "
            "made the lunches at work much easier.",
            "locker": f"{person}'s locker number at the swimming club is {400 + 7 * n}. "
            f"{person} swims there every Tuesday and Thursday morning before work, forty lengths "
            "in the outdoor pool whatever the weather, and then has a coffee at the kiosk by the "
            "entrance with the other early swimmers.",
            "move": f"{person} moved to {city} in {2010 + n} for a job at a shipping company. "
            f"{person} still misses the old neighbourhood bakery, the one with the rye bread and "
            "the cinnamon rolls on Saturdays, and visits it whenever the train goes back that "
            "way for a family birthday.",
        }
        for fact, text in facts.items():
            records.append({"id": f"{person.lower()}-{fact}", "speaker": person, "text": text})
    return records


@pytest.fixture(scope="session")
def sixty_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The 60 records in a closed store file, read once so its vectors are in the file. Copy it
    (:func:`copied`) before writing to it."""
    from muster_exact.store import Store

    path = tmp_path_factory.mktemp("sixty") / "sixty.muster"
    with Store.open(path, models="cpu-small") as store:
        store.add(sixty_records())
        store.memory()
    return path


def copied(store: Path, folder: Path) -> Path:
    """A copy of a closed store file, for a test that writes."""
    target = folder / store.name
    shutil.copyfile(store, target)
    return target


@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_pycollect_makeitem(collector: pytest.Collector, name: str, obj: object) -> object:
    """Coroutine tests of the LangChain standard suites marked ``asyncio`` (pytest-asyncio is a
    dependency of langchain-tests), as the test is made: pytest-asyncio, whose wrapper runs
    around this one (``trylast``), reads the mark right after. Other tests are not touched."""
    made = yield
    module = getattr(obj, "__module__", None) or ""
    if inspect.iscoroutinefunction(obj) and module.startswith("langchain_tests."):
        for item in made if isinstance(made, list) else [made]:
            if isinstance(item, pytest.Function):
                item.add_marker(pytest.mark.asyncio)
    return made
