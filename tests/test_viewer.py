"""`raleval view`: the lazy index, the viewer's API over a real HTTP server on 127.0.0.1, side by
side transcripts with their first divergence, and hostile text in a real browser (issue 49)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import urllib.error
import urllib.request

import pytest

from raleval.analysis.log_index import LogIndex, first_divergence
from raleval.analysis.runs import load_run
from raleval.app.viewer import serve_viewer

from .conftest import run_config
from .test_report import chromium_driver
from .test_report_hostile import HOSTILE, _hostile_run


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    oracle, _ = run_config(root, limit=6, tasks="scholar-ks")
    abstain, _ = run_config(root, limit=6, tasks="scholar-ks", model="scripted/abstain")
    return root, oracle.run_dir, abstain.run_dir


class Served:
    """The viewer on a free port of 127.0.0.1, in a thread of its own."""

    def __init__(self, paths):
        self.url = None
        started = threading.Event()

        def ready(url):
            self.url = url
            started.set()

        def main():
            self.loop = asyncio.new_event_loop()
            self.task = self.loop.create_task(serve_viewer(paths, "127.0.0.1", 0, ready))
            with contextlib.suppress(asyncio.CancelledError):
                self.loop.run_until_complete(self.task)

        self.thread = threading.Thread(target=main, daemon=True)
        self.thread.start()
        assert started.wait(30)

    def get(self, path, host=None):
        request = urllib.request.Request(self.url + path)
        if host:
            request.add_header("Host", host)
        with urllib.request.urlopen(request, timeout=30) as r:
            return json.loads(r.read())

    def wait_indexed(self):
        for _ in range(300):
            if self.get("api/status")["done"]:
                return
            threading.Event().wait(0.05)
        raise AssertionError("the index never finished")

    def close(self):
        self.loop.call_soon_threadsafe(self.task.cancel)
        self.thread.join(10)


@pytest.fixture
def served(two_runs):
    root, *_ = two_runs
    from raleval.analysis.runs import find_runs

    s = Served(find_runs([root]))
    s.wait_indexed()
    yield s
    s.close()


def test_index_holds_every_latest_episode_with_its_label(two_runs):
    _, oracle, abstain = two_runs
    index = LogIndex([oracle, abstain])
    index.build()
    assert index.done and index.error is None and len(index.rows) == 12
    total, rows = index.query({"run": "0"})
    stored = {t.task_id: t for t in load_run(oracle).results}
    assert total == 6 and {r["task_id"] for r in rows} == set(stored)
    for r in rows:
        assert r["label"] == stored[r["task_id"]].error_type.value
        assert r["f1"] == stored[r["task_id"]].scores["f1"]
    assert index.query({"right": "1"})[0] == 6 and index.query({"right": "0"})[0] == 6
    assert index.query({"label": "EM", "run": "1"})[0] == 0
    # an opened episode is the stored record, read from its offset
    row = index.find(0, rows[0]["task_id"], 0)
    assert index.trajectory(row) == stored[rows[0]["task_id"]]


def test_api_filters_pairs_and_side_by_side(served, two_runs):
    status = served.get("api/status")
    assert [r["episodes"] for r in status["runs"]] == [6, 6]
    assert all("(scholar, scholar-ks)" in r["name"] for r in status["runs"])
    names = [r["name"] for r in status["runs"]]
    oracle = next(i for i, n in enumerate(names) if "oracle" in n)
    abstain = 1 - oracle
    page = served.get(f"api/episodes?run={abstain}&limit=2")
    assert page["total"] == 6 and len(page["rows"]) == 2
    assert all(r["label"] == "RE" and not r["right"] for r in page["rows"])
    task = page["rows"][0]["task_id"]
    episode = served.get(f"api/episode?run={oracle}&task={task}&epoch=0")
    assert episode["label"] == "EM" and episode["steps"] and episode["question"]
    pairs = served.get(f"api/pairs?a={oracle}&b={abstain}")["pairs"]
    assert len(pairs) == 6 and all(p["differ"] for p in pairs)
    side = served.get(f"api/side?runs={oracle},{abstain}&task={task}&epoch=0")
    assert [c["label"] for c in side["columns"]] == ["EM", "RE"]
    assert side["divergence"] == 0  # the oracle searches where the abstainer answers at once


def test_api_refuses_other_hosts_and_bad_arguments(served):
    with pytest.raises(urllib.error.HTTPError) as err:
        served.get("api/status", host="attacker.example:80")
    assert err.value.code == 403
    for bad in ("api/episode?run=x&task=t", "api/side?runs=0", "api/pairs?a=0&b=0",
                "api/episode?run=7&task=t"):  # fmt: skip
        with pytest.raises(urllib.error.HTTPError) as err:
            served.get(bad)
        assert err.value.code in (400, 404), bad


def test_first_divergence_aligns_steps(two_runs):
    _, oracle, abstain = two_runs
    a, b = load_run(oracle).results[0], load_run(abstain).results[0]
    assert first_divergence([a, a]) is None
    assert first_divergence([a, b]) == 0
    longer = a.model_copy(update={"steps": [*a.steps, a.steps[-1]]})
    assert first_divergence([a, longer]) == len(a.steps)


@pytest.mark.integration
def test_viewer_and_side_by_side_in_a_real_browser_keep_hostile_text_inert(two_runs, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    _, oracle, abstain = two_runs
    hostile, hostile_b = tmp_path / "hostile", tmp_path / "hostile-abstain"
    _hostile_run(oracle, hostile)
    _hostile_run(abstain, hostile_b)  # the same hostile task ids: the two runs pair up
    served = Served([hostile, hostile_b])
    served.wait_indexed()
    driver = chromium_driver(tmp_path)
    try:
        driver.get(served.url)
        wait = WebDriverWait(driver, 30)
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#episodes tbody tr")) == 12)
        row = driver.find_element(By.CSS_SELECTOR, "#episodes tbody tr")
        row.click()
        wait.until(lambda d: "question" in d.find_element(By.ID, "detail").text)
        # the pairs list, then one pair side by side
        driver.find_element(By.ID, "p-go").click()
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#pairs tbody tr")) == 6)
        driver.find_elements(By.CSS_SELECTOR, "#pairs tbody tr.differ")[0].click()
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#side tr.diverge"))
        side = driver.find_element(By.ID, "side").text
        assert "first divergence" in side and "the runs first take different steps" in side
        assert HOSTILE.split()[0] in side  # hostile text shown as text
        # nothing ran and nothing was injected
        assert driver.execute_script("return window.__pwned === undefined")
        assert len(driver.find_elements(By.TAG_NAME, "script")) == 2
        assert not driver.find_elements(By.TAG_NAME, "img")
        assert not driver.find_elements(By.CSS_SELECTOR, "[onerror], [onload]")
    finally:
        driver.quit()
        served.close()


def test_a_report_above_the_embedding_limit_sends_the_reader_to_the_viewer(two_runs, monkeypatch):
    from raleval.analysis import report

    _, oracle, abstain = two_runs
    runs = [load_run(oracle), load_run(abstain)]
    monkeypatch.setattr(report, "MAX_EMBEDDED_EPISODES", 11)
    page = report.build_report(runs)
    assert "12 episodes: more than this page embeds (11)" in page
    assert f"raleval view {oracle} {abstain}" in page
    data = page.split('id="episode-data">', 1)[1].split("</script>", 1)[0]
    assert json.loads(data)["episodes"] == []
    monkeypatch.setattr(report, "MAX_EMBEDDED_EPISODES", 12)
    page = report.build_report(runs)
    data = page.split('id="episode-data">', 1)[1].split("</script>", 1)[0]
    assert len(json.loads(data)["episodes"]) == 12
