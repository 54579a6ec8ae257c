"""The inspector page (``muster http`` serves it at ``/``) over a real conversation, in the headless
browser of :mod:`harness.report.screenshot`: the records of a LoCoMo conversation, the page opened,
its token entered, a question asked.

``make inspector`` saves the committed screenshot, ``results/inspector.png``, with these steps
(``scripts/inspector_screenshot.py``); ``tests/serve/test_inspector_page.py`` takes the same steps
and checks what they show (a test never writes the committed file).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

TURNS = 150  # the first conversation's first turns: five sessions, enough for a read of U = 10
QUESTION = "When did Caroline go to the LGBTQ support group?"
READ = re.compile(r"Read \d+ passages")  # the status line once the answer is shown
WAIT_S = 300  # the first read embeds the records (a minute or two on two busy cores)


def locomo_records(data: Path, turns: int = TURNS) -> list[dict[str, Any]]:
    """The first LoCoMo conversation's first ``turns`` turns as store records: the turn's id,
    speaker, session date and text, and its session number as metadata."""
    from muster_exact.verify.corpora import locomo_sessions

    sample = json.loads((data / "locomo" / "locomo10.json").read_text(encoding="utf-8"))[0]
    records = [
        {
            "id": turn["dia_id"],
            "speaker": turn["speaker"],
            "time": date,
            "text": turn["text"],
            "metadata": {"session": number},
        }
        for number, date, session in locomo_sessions(sample["conversation"])
        for turn in session
    ]
    return records[:turns]


def until(driver: Any, condition: Any, timeout: float = WAIT_S) -> Any:
    """What ``condition(driver)`` gives once it is truthy (selenium's wait)."""
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(condition)


def enter_token(driver: Any, token: str) -> None:
    """Type the token into the page's form and wait for the store's panels."""
    field = driver.find_element("id", "token")
    until(driver, lambda d: field.is_displayed())
    field.send_keys(token)
    driver.find_element("css selector", "#token-form button[type=submit]").click()
    until(driver, lambda d: d.find_element("id", "main").is_displayed())
    until(driver, lambda d: d.find_elements("css selector", "#records tbody tr"))


def ask(driver: Any, question: str, units: int | None = None) -> None:
    """Ask ``question`` in the query box (with a budget of ``units``) and wait for the passages."""
    box = driver.find_element("id", "query")
    box.clear()
    box.send_keys(question)
    if units is not None:
        driver.find_element("id", "units").send_keys(str(units))
    driver.find_element("css selector", "#query-form button[type=submit]").click()  # "Reading…"
    until(driver, lambda d: READ.match(d.find_element("id", "status").text))
