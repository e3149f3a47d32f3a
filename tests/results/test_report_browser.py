"""The HTML report in a real headless Chromium (Selenium): loads from file:// without console errors,
shows its tables and figures, and sorts a table when a header is clicked.

Needs Debian's ``chromium`` and ``chromium-driver`` (``.ci/run`` installs them) and the ``selenium``
package (the ``test`` extra); without them the test skips and says which is missing.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
_CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
_DRIVER = shutil.which("chromedriver")

# One browser for the module's tests, on one worker (Note [parallel tests]).
pytestmark = pytest.mark.xdist_group("browser")


def _fixture_rows() -> list[dict]:
    spec = importlib.util.spec_from_file_location("gnnbench_results_fixture", FIXTURES / "results_fixture.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.fixture_rows()


def _browser():
    webdriver = pytest.importorskip("selenium.webdriver", reason="the browser test needs selenium "
                                                                 "(pip install -e '.[test]')")
    if _CHROMIUM is None or _DRIVER is None:
        pytest.skip("the browser test needs Chromium and its driver: apt-get install chromium chromium-driver "
                    f"(found chromium: {_CHROMIUM}, chromedriver: {_DRIVER})")
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = _CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1400,1000", "--allow-file-access-from-files"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(_DRIVER), options=options)


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    pytest.importorskip("matplotlib", reason="the report's figures need matplotlib (gnnbench[plot])")
    from gnnbench.results.report import build_report

    driver = _browser()
    index = build_report(_fixture_rows(), tmp_path_factory.mktemp("report"))
    try:
        driver.get(index.resolve().as_uri())
        yield driver
    finally:
        driver.quit()


def _column(driver, table_id: str, index: int) -> list[str]:
    return [row.find_elements("tag name", "td")[index].text
            for row in driver.find_elements("css selector", f"#{table_id} tbody tr")]


def test_loads_without_console_errors_with_tables_and_figures(page):
    assert page.title == "gnnbench report"
    errors = [e for e in page.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
    assert errors == []
    assert [t.get_attribute("id") for t in page.find_elements("css selector", "table.sortable")] == [
        "compare-0", "compare-1", "runs"]
    assert _column(page, "compare-0", 1)[:3] == ["reference", "few", "fused"]
    images = page.find_elements("css selector", "#figures img")
    assert [Path(i.get_attribute("src")).name for i in images] == ["epoch_time.svg", "peak_memory.svg",
                                                                   "scaling.svg"]
    assert all(page.execute_script("return arguments[0].complete && arguments[0].naturalWidth > 0", i)
               for i in images), "a figure did not load"


def test_clicking_a_header_sorts(page):
    speedup = page.find_elements("css selector", "#compare-0 thead th")[6]
    assert speedup.text == "speedup"
    speedup.click()
    assert speedup.get_attribute("aria-sort") == "ascending"
    assert _column(page, "compare-0", 6)[:4] == ["0.80x", "1.03x", "2.01x", "2.50x"]  # numbers first, by value
    speedup.click()
    assert speedup.get_attribute("aria-sort") == "descending"
    assert _column(page, "compare-0", 6)[:2] == ["2.50x", "2.01x"]
    system = page.find_elements("css selector", "#compare-0 thead th")[1]
    system.click()
    assert _column(page, "compare-0", 1) == sorted(_column(page, "compare-0", 1))
    if os.environ.get("GNNBENCH_REPORT_SCREENSHOT"):  # README's picture: see README "Report"
        page.save_screenshot(os.environ["GNNBENCH_REPORT_SCREENSHOT"])


def test_history_figure_marks_the_slow_commit(tmp_path):
    """The report of a three-commit history: its figure loads from file:// and names the slow commit."""
    pytest.importorskip("matplotlib", reason="the report's figures need matplotlib (gnnbench[plot])")
    from gnnbench.results.report import build_report

    from .test_by_build import build_rows
    from .test_regression import with_commits

    driver = _browser()
    try:
        index = build_report(with_commits(build_rows((0.020, 0.026, 0.026))), tmp_path / "report")
        driver.get(index.resolve().as_uri())
        assert [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "WARNING")] == []
        (figure,) = driver.find_elements("css selector", "#history figure.history")
        image = figure.find_element("tag name", "img")
        assert Path(image.get_attribute("src")).name == "history-0.svg"
        assert driver.execute_script("return arguments[0].complete && arguments[0].naturalWidth > 0", image)
        marks = [li.text for li in figure.find_elements("css selector", "li.regression")]
        assert marks == ["isplib gcn cora: +30% at 1abcdef [+28%, +32%]"]
    finally:
        driver.quit()


# ------------------------------------------------ two systems, one graph size, neither verified (issue 59)
#: every text of a matplotlib SVG (``<g id="text_N">``, its words in a comment) drawn past the figure's edge
_TEXT_OUTSIDE = """
const svg = document.documentElement, box = svg.viewBox.baseVal, out = [];
for (const g of svg.querySelectorAll('g[id^="text_"]')) {
  const b = g.getBBox();
  if (b.width > 0 && (b.x < box.x - 0.5 || b.y < box.y - 0.5 || b.x + b.width > box.x + box.width + 0.5
                      || b.y + b.height > box.y + box.height + 0.5)) {
    const words = [...g.childNodes].find(n => n.nodeType === Node.COMMENT_NODE);
    out.push((words ? words.textContent.trim() : g.id) + ': x ' + Math.round(b.x) + '..' + Math.round(b.x + b.width)
             + ' of ' + Math.round(box.width));
  }
}
return out;"""


def _two_systems_one_size() -> list[dict]:
    """20 runs: isplib and dgl-native interleaved on cora, neither verified, dgl-native the slower."""
    spec = importlib.util.spec_from_file_location("gnnbench_results_fixture", FIXTURES / "results_fixture.py")
    fixture = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fixture)
    rows = []
    for i in range(20):
        system, median = (("isplib", 0.010), ("dgl-native", 0.012))[i % 2]
        rows.append(fixture._run(i, system, "cora", fixture._samples(median * (1 + 0.01 * (i * 7 % 5)), 0.02),
                                 verified="unverified", memory_mib=100 + i, accuracy=0.81))
    return rows


@pytest.fixture(scope="module")
def two_systems(tmp_path_factory):
    """The report of :func:`_two_systems_one_size`'s store, through the CLI, against dgl-native, unverified
    systems included: ``(browser on its page, report folder)``."""
    pytest.importorskip("matplotlib", reason="the report's figures need matplotlib (gnnbench[plot])")
    from gnnbench.cli import main
    from gnnbench.results.store import ResultsStore

    folder = tmp_path_factory.mktemp("two-systems")
    with ResultsStore(folder / "runs.sqlite") as store:
        store.insert_many(_two_systems_one_size())
    driver = _browser()
    try:
        assert main(["report", "--results", str(folder / "runs.sqlite"), "--out", str(folder / "report"),
                     "--baseline", "dgl-native", "--include-unverified"]) == 0
        driver.get((folder / "report" / "index.html").resolve().as_uri())
        yield driver, folder / "report"
    finally:
        driver.quit()


def test_report_takes_compares_baseline_and_unverified_choices(two_systems):
    page, _ = two_systems
    header = [th.text for th in page.find_elements("css selector", "#compare-0 thead th")]
    assert header[1] == "system" and header[6] == "speedup"
    assert _column(page, "compare-0", 1) == ["dgl-native", "isplib"]
    assert _column(page, "compare-0", 6) == ["baseline", "1.20x"]  # not "unverified": --include-unverified


def test_no_scaling_figure_for_one_graph_size(two_systems):
    page, report = two_systems
    images = page.find_elements("css selector", "#figures img")
    assert [Path(i.get_attribute("src")).name for i in images] == ["epoch_time.svg", "peak_memory.svg"]
    assert sorted(p.name for p in (report / "figures").iterdir()) == [
        "epoch_time.png", "epoch_time.svg", "peak_memory.png", "peak_memory.svg"]
    assert ("Epoch time against graph size is not drawn: the runs shown have one graph size (13,264 edges); run "
            "more datasets to see scaling.") in page.find_element("css selector", "#figures").text


def test_every_figures_text_fits_its_figure(two_systems):
    page, report = two_systems
    for figure in sorted((report / "figures").glob("*.svg")):
        page.get(figure.resolve().as_uri())
        assert page.execute_script(_TEXT_OUTSIDE) == [], f"{figure.name}: text past the figure's edge"
