"""The inspector page in a real headless browser: Debian's chromium, driven by selenium through
chromedriver (as tests/harness/test_report_page.py), against the real server with a token over a
LoCoMo conversation.

The page asks for the token, shows the plan and the records, answers a question with each
passage's channels (checked in the DOM against ``POST /v1/inspect`` and in the pixels: coloured
channel badges), forgets and updates records through its buttons (checked through
``GET /v1/records``), and logs no console error. The test keeps no file: ``make inspector`` saves
the committed screenshot, results/inspector.png (scripts/inspector_screenshot.py).

Without chromium or chromedriver the tests skip, unless MUSTER_BROWSER_REQUIRED=1 (``make test``
sets it, after ``make browser`` installs them): then they fail and say how to install them.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest

from harness.report import inspector, screenshot
from tests.harness.test_report_page import coloured_pixels, distinct_colours, png_pixels, unavailable
from tests.serve.test_http import TOKEN, Server

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytestmark = pytest.mark.slow

AUTH = {"Authorization": f"Bearer {TOKEN}"}
UNITS = 4


@pytest.fixture(scope="module")
def browser(served: Server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    try:
        with screenshot.browser(f"{served.url}/", tmp_path_factory.mktemp("chromium-profile")) as driver:
            yield driver
    except screenshot.NoBrowser as missing:
        unavailable(str(missing))


def opened(driver: Any, url: str) -> Any:
    """``url`` in a new tab, which holds no token yet (sessionStorage is the tab's): each test
    starts from there."""
    old = driver.current_window_handle
    driver.switch_to.new_window("tab")
    new = driver.current_window_handle
    driver.switch_to.window(old)
    driver.close()
    driver.switch_to.window(new)
    driver.get(url)
    return driver


def find(driver: Any, css: str) -> list[Any]:
    return list(driver.find_elements("css selector", css))


def errors(driver: Any) -> list[dict[str, Any]]:
    """The console's errors since the last call."""
    return [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


def element_png(driver: Any, element: Any) -> bytes:
    """An element as PNG bytes, whole (chromedriver's own element shot stops at the window)."""
    box = {**element.location, **element.size}
    clip = {"x": box["x"], "y": box["y"], "width": box["width"], "height": box["height"], "scale": 1}
    shot = driver.execute_cdp_cmd(
        "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True, "clip": clip}
    )
    return base64.b64decode(shot["data"])


def server_records(served: Server) -> dict[str, dict[str, Any]]:
    page = httpx.get(f"{served.url}/v1/records", params={"limit": 500}, headers=AUTH, timeout=60).json()
    return {line["record"]["id"]: line["record"] for line in page["records"]}


def test_every_field_has_a_label_and_the_page_asks_for_the_token(browser: Any, served: Server) -> None:
    driver = opened(browser, f"{served.url}/")
    form = inspector.until(driver, lambda d: d.find_element("id", "token-form"))
    inspector.until(driver, lambda d: form.is_displayed())
    assert driver.switch_to.active_element.get_attribute("id") == "token"  # focused: type and Enter
    assert not driver.find_element("id", "main").is_displayed()
    for field in find(driver, "input, select, textarea"):
        labels = find(driver, f'label[for="{field.get_attribute("id")}"]')
        assert len(labels) == 1 and labels[0].get_attribute("textContent"), field.get_attribute("outerHTML")
    assert not errors(driver)


def test_a_wrong_token_is_asked_for_again(browser: Any, served: Server) -> None:
    driver = opened(browser, f"{served.url}/")
    field = driver.find_element("id", "token")
    inspector.until(driver, lambda d: field.is_displayed())
    field.send_keys("wrong\n")  # Enter submits
    inspector.until(driver, lambda d: "refused" in d.find_element("id", "status").text)
    assert field.is_displayed() and not driver.find_element("id", "main").is_displayed()
    assert driver.execute_script("return sessionStorage.length") == 0
    logged = errors(driver)  # the browser logs the refused request itself, and nothing else
    assert logged and all("401" in entry["message"] for entry in logged), logged


def test_a_query_shows_each_passage_with_its_channels(browser: Any, served: Server) -> None:
    driver = opened(browser, f"{served.url}/")
    inspector.enter_token(driver, TOKEN)
    info = httpx.get(f"{served.url}/v1/info", headers=AUTH, timeout=60).json()
    assert driver.find_element("id", "explain").text == info["explain"]
    rows = find(driver, "#namespaces tbody tr")
    assert [r.text for r in rows] == [f"default {info['head']['records']}"]
    assert driver.find_element("id", "page").text == f"records 1–20 of {info['head']['records']}"
    assert len(find(driver, "#records tbody tr")) == 20

    inspector.ask(driver, inspector.QUESTION, UNITS)
    body = {"query": inspector.QUESTION, "units": UNITS}
    read = httpx.post(f"{served.url}/v1/inspect", json=body, headers=AUTH, timeout=300).json()
    for css, passages in (("#kept > li", read["kept"]), ("#left-out > li", read["left_out"])):
        shown = find(driver, css)
        assert [li.get_attribute("data-unit") for li in shown] == [str(p["unit"]) for p in passages]
        for li, passage in zip(shown, passages, strict=True):
            badges = li.find_elements("css selector", ".badge")
            assert [b.text for b in badges] == [f"{c} #{r}" for c, r in passage["channels"].items()]
            assert li.find_element("css selector", ".reason").text == passage["reason"]
            assert f"parent {passage['parent']}" in li.text and passage["records"][0] in li.text
    assert len(read["kept"]) == read["units_read"] and len(read["left_out"]) == 5
    # Each channel its own colour, drawn: the result panel's pixels hold the badges.
    colours = {
        b.get_attribute("data-channel"): b.value_of_css_property("background-color")
        for b in find(driver, "#kept .badge")
    }
    assert len(colours) >= 2 and len(set(colours.values())) == len(colours)
    assert not set(colours.values()) & {"rgba(0, 0, 0, 0)", "transparent", "rgb(255, 255, 255)"}
    pixels = png_pixels(element_png(driver, driver.find_element("id", "result")))
    assert pixels.shape[0] > 300 and distinct_colours(pixels) > 50
    assert coloured_pixels(pixels) > 2000, "the channel badges drew (almost) nothing"

    # The keyboard: Enter in the filter box reads again, Caroline's records only.
    driver.find_element("id", "where").send_keys('{"speaker": "Caroline"}\n')
    inspector.until(driver, lambda d: inspector.READ.match(d.find_element("id", "status").text))
    speakers = {r: record["speaker"] for r, record in server_records(served).items()}
    lines = [li.find_element("css selector", ".records").text for li in find(driver, ".passage")]
    shown = {r for line in lines for r in line.removeprefix("records: ").split(", ")}
    assert shown and {speakers[r] for r in shown} == {"Caroline"}
    assert not errors(driver)


def test_forget_and_update_buttons_change_the_store(browser: Any, served: Server) -> None:
    driver = opened(browser, f"{served.url}/")
    inspector.enter_token(driver, TOKEN)
    before = server_records(served)
    gone, edited = "D1:3", "D1:4"
    assert {gone, edited} <= set(before)
    driver.find_element("css selector", f'tr[data-id="{gone}"] button.forget').click()
    alert = inspector.until(driver, lambda d: d.switch_to.alert)
    assert gone in alert.text
    alert.accept()
    inspector.until(driver, lambda d: not d.find_elements("css selector", f'tr[data-id="{gone}"]'))
    assert f"Forgot {gone}" in driver.find_element("id", "status").text
    after = server_records(served)
    assert gone not in after and len(after) == len(before) - 1
    assert driver.find_element("id", "page").text.endswith(f"of {len(after)}")

    driver.find_element("css selector", f'tr[data-id="{edited}"] button.edit').click()
    text = driver.switch_to.active_element
    assert text.get_attribute("id") == "edit-text"
    text.clear()
    text.send_keys("The support group meets on Tuesdays now.")
    driver.find_element("css selector", "#edit-form button[type=submit]").click()
    row = f'tr[data-id="{edited}"] td.text'
    inspector.until(driver, lambda d: d.find_element("css selector", row).text.startswith("The support"))
    assert driver.switch_to.active_element.get_attribute("aria-label") == f"Update record {edited}"
    record = server_records(served)[edited]
    assert record["text"] == "The support group meets on Tuesdays now."
    assert (record["speaker"], record["time"], record["metadata"]) == (
        before[edited]["speaker"],
        before[edited]["time"],
        before[edited]["metadata"],
    )
    assert not errors(driver)


def test_the_api_reference_lists_every_route_with_no_outside_script(browser: Any, served: Server) -> None:
    driver = opened(browser, f"{served.url}/docs")
    field = driver.find_element("id", "token")
    inspector.until(driver, lambda d: field.is_displayed())
    field.send_keys(TOKEN + "\n")
    inspector.until(driver, lambda d: d.find_elements("css selector", "section.route"))
    openapi = httpx.get(f"{served.url}/openapi.json", headers=AUTH, timeout=60).json()
    expected = sum(len(methods) for methods in openapi["paths"].values())
    assert len(find(driver, "section.route")) == expected
    assert "/v1/inspect" in driver.find_element("id", "inspect").text
    scripts = [s.get_attribute("src") for s in find(driver, "script")]
    assert scripts == [f"{served.url}/inspector/docs.js"]
    assert not errors(driver)


def test_another_namespace_and_markup_in_a_record_shown_as_text(browser: Any, served: Server) -> None:
    markup = '<img src="x" onerror="document.title=\'owned\'"><b>bold</b>'
    note = {"records": [{"id": "n1", "text": markup}], "namespace": "notes"}
    httpx.post(f"{served.url}/v1/add", json=note, headers=AUTH, timeout=60).raise_for_status()
    driver = opened(browser, f"{served.url}/")
    inspector.enter_token(driver, TOKEN)
    rows = find(driver, "#namespaces tbody tr")
    counts = {row.get_attribute("data-namespace"): row.text.split()[-1] for row in rows}
    assert counts["notes"] == "1" and set(counts) == {"default", "notes"}
    from selenium.webdriver.support.ui import Select  # here: the module loads without selenium

    Select(driver.find_element("id", "namespace")).select_by_value("notes")
    inspector.until(driver, lambda d: d.find_elements("css selector", 'tr[data-id="n1"]'))
    cell = driver.find_element("css selector", 'tr[data-id="n1"] td.text')
    assert cell.text == markup and not cell.find_elements("css selector", "*")  # text, not elements
    assert driver.title == "MUSTER inspector" and not errors(driver)
