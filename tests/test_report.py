"""The HTML report: content, and a real headless Chromium reading it (10,000 episodes)."""

from __future__ import annotations

import os
import re
import shutil

import pytest

from raleval.analysis.report import write_report

from .conftest import run_config
from .report_fixture import replicate_run


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    good, _ = run_config(root, limit=12)
    bad, _ = run_config(root, model="scripted/malformed", limit=12)
    return root, good.run_dir, bad.run_dir


def test_report_content(runs):
    root, good, bad = runs
    path = write_report([good, bad], root / "r.html")
    text = path.read_text()
    assert (
        "<td>react/scripted/oracle</td>" in text
        and "TE:unparseable_output:invalid_format (12)" in text
    )
    assert text.count("<svg") >= 3  # radar/bars, error mix, deployment
    # self-contained: nothing is fetched when the file is opened
    assert re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text) is None
    assert '"label":"TE"' in text and '"label":"EM"' in text


def test_asking_for_one_figure_draws_only_that_one(runs, tmp_path, monkeypatch):
    """``raleval study figures --figure errors`` drew every figure and kept one (6.0 s against
    2.9 s on the study's cells): a figure not asked for is not drawn."""
    pytest.importorskip("matplotlib")
    from raleval.analysis import plots
    from raleval.analysis.report import save_figures
    from raleval.analysis.runs import load_run

    _, good, bad = runs
    loaded = [load_run(good), load_run(bad)]
    everything = [p.stem for p in save_figures(loaded, tmp_path / "all")]
    assert {"errors", "bars", "tokens", "deployment"} <= set(everything)

    def not_asked(*args, **kwargs):
        raise AssertionError("drew a figure nobody asked for")

    for name in ("radar", "level_bars", "tokens", "deployment", "cost", "robustness"):
        monkeypatch.setattr(plots, name, not_asked)
    written = save_figures(loaded, tmp_path / "one", ["errors"])
    assert [p.name for p in written] == ["errors.png"]
    assert written[0].read_bytes() == (tmp_path / "all" / "errors.png").read_bytes()


def test_report_threshold_moves_only_free_text_answers(runs, tmp_path):
    # issue 19: the F1 threshold used to decide every answer (F1 >= 0.5 was "correct"); typed
    # answers (entities, counts here) are graded by their own rule, so 1.01 relabels nothing
    _, good, _ = runs
    text = write_report([good], tmp_path / "r.html", threshold=1.01).read_text()
    assert '"label":"EM"' in text and '"label":"GE"' not in text


CHROMIUM = shutil.which("chromium")
CHROMEDRIVER = shutil.which("chromedriver")


@pytest.mark.integration
def test_report_in_a_real_browser_with_10000_episodes(runs, tmp_path):
    if not (CHROMIUM and CHROMEDRIVER):
        if os.environ.get("CI"):
            pytest.fail("CI must install chromium and chromium-driver (.ci/run does)")
        pytest.skip("needs Debian chromium and chromium-driver")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    _, good, bad = runs
    big = replicate_run(bad, tmp_path / "big", 9_988)
    path = write_report([good, big], tmp_path / "big.html")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1300,1800",
    ):
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path / 'profile'}")
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        driver.set_page_load_timeout(60)
        driver.get(path.as_uri())
        assert "10000 of 10000 episodes" in driver.find_element(By.ID, "count").text
        rows = driver.find_elements(By.CSS_SELECTOR, "#episodes tbody tr")
        assert len(rows) == 50  # paginated: the page stays responsive at 10,000 episodes
        tables = driver.find_elements(By.TAG_NAME, "table")
        assert len(tables) >= 4 and "react/scripted/oracle" in tables[0].text
        Select(driver.find_element(By.ID, "f-label")).select_by_value("EM")
        assert "12 of 10000 episodes" in driver.find_element(By.ID, "count").text
        first = driver.find_element(By.CSS_SELECTOR, "#episodes tbody tr")
        assert "EM" in first.text
        first.click()
        detail = driver.find_element(By.ID, "detail")
        assert "why EM:" in detail.text and "searchPerson" in detail.text
        assert "F1 1.00 >= threshold 0.5" in detail.text
        Select(driver.find_element(By.ID, "f-label")).select_by_value("TE")
        driver.find_element(By.CSS_SELECTOR, "#episodes tbody tr").click()
        assert "the model wrote: I will search the person" in detail.text
        driver.save_screenshot(str(tmp_path / "report.png"))
        assert (tmp_path / "report.png").stat().st_size > 10_000
    finally:
        driver.quit()


# Layout read back from the browser, per figure: the axes' background box, the legend's box,
# every tick label's box, the axis titles' boxes, and how many data marks the axes hold.
FIGURE_LAYOUT_JS = """
const box = (el) => { const r = el.getBoundingClientRect();
  return [r.left, r.top, r.right, r.bottom]; };
return [...document.querySelectorAll('.plots > div[data-figure]')].map((div) => {
  const svg = div.querySelector('svg');
  const axes = svg.querySelector('g[id^="axes"]');
  const background = axes.querySelector(':scope > g[id^="patch"]');
  const legend = svg.querySelector('g[id^="legend"]');
  const ticks = [...axes.querySelectorAll('g[id^="xtick"], g[id^="ytick"]')].map((t) => ({
    axis: t.id.startsWith('x') ? 'x' : 'y',
    text: t.querySelector('g[id^="text"]') ? box(t.querySelector('g[id^="text"]')) : null}));
  const titles = [...axes.querySelectorAll(
    ':scope > g[id^="matplotlib.axis"] > g[id^="text"]')].map(box);
  const marks = axes.querySelectorAll(':scope > g[id^="patch"]').length - 1 +
    axes.querySelectorAll(':scope > g[id^="line2d"]').length;
  return {polar: div.dataset.figure === 'radar', kind: div.dataset.figure,
          background: box(background), legend: legend ? box(legend) : null,
          ticks, titles, marks};
});
"""


def _overlap(a, b, slack=0.5):
    """Do two [left, top, right, bottom] boxes share more than ``slack`` pixels each way?"""
    return min(a[2], b[2]) - max(a[0], b[0]) > slack and min(a[3], b[3]) - max(a[1], b[1]) > slack


def chromium_driver(tmp_path):
    """A headless Chromium for a test (skipped, or failed on CI, without one)."""
    if not (CHROMIUM and CHROMEDRIVER):
        if os.environ.get("CI"):
            pytest.fail("CI must install chromium and chromium-driver (.ci/run does)")
        pytest.skip("needs Debian chromium and chromium-driver")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--window-size=1300,1800"):
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path / 'profile'}")
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    return driver


@pytest.mark.integration
def test_report_figures_and_viewer_in_a_real_browser(tmp_path):
    """Issue 22's figure defects, measured where a reader sees them: CRAG's long domain x level
    labels do not overlap, no legend covers an axes or its labels, no panel is empty, a run
    with a single domain x level gets bars (a radar needs three axes); the viewer shows the
    system prompt with the episode's demonstrations, every model call and the DFSDT tree.
    Issue 36: a priced system (-M price_in/price_out) gets the cost-versus-F1 Pareto plot
    beside time versus F1, held to the same layout checks."""
    pytest.importorskip("matplotlib")
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    crag = {"env": "crag", "env_options": {"size": "tiny"}, "tasks": "crag-kg"}
    react, _ = run_config(tmp_path, tasks_per_family=5, **crag)
    price = {"price_in": 1, "price_out": 2}  # USD per million tokens
    dfsdt, _ = run_config(
        tmp_path, tasks_per_family=5, workflow="dfsdt", model_options=price, **crag
    )
    single, _ = run_config(tmp_path, limit=4)  # scholar KS only: one axis
    many = write_report([react.run_dir, dfsdt.run_dir], tmp_path / "many.html")
    one = write_report([single.run_dir], tmp_path / "one.html")
    driver = chromium_driver(tmp_path)
    try:
        driver.get(many.as_uri())
        figures = driver.execute_script(FIGURE_LAYOUT_JS)
        # two radars (one per workflow), the F1 bars, the progress-rate bars, the error mix,
        # tokens, time and cost versus F1
        assert len(figures) == 8 and sum(f["polar"] for f in figures) == 2
        kinds = [f["kind"] for f in figures]
        assert kinds[-3:] == ["tokens", "deployment", "cost"], kinds
        cost = figures[-1]
        # both systems plotted (the free react one at 0), with their Pareto front
        assert cost["marks"] >= 2
        assert "US dollars per query" in driver.find_element(
            By.CSS_SELECTOR, '[data-figure="cost"]'
        ).get_attribute("innerHTML")
        for k, fig in enumerate(figures):
            assert fig["marks"] >= 1, f"figure {k} is an empty panel"
            labels = [t["text"] for t in fig["ticks"] if t["text"]]
            if not fig["polar"]:
                for axis in "xy":
                    same = [t["text"] for t in fig["ticks"] if t["axis"] == axis and t["text"]]
                    clash = [(a, b) for i, a in enumerate(same) for b in same[i + 1 :]
                             if _overlap(a, b)]  # fmt: skip
                    assert not clash, f"figure {k}: {axis} tick labels overlap: {clash[:2]}"
            else:
                angular = [t["text"] for t in fig["ticks"] if t["axis"] == "x" and t["text"]]
                assert len(angular) >= 12  # CRAG: five domains x three levels
                clash = [(a, b) for i, a in enumerate(angular) for b in angular[i + 1 :]
                         if _overlap(a, b)]  # fmt: skip
                assert not clash, f"radar {k}: axis labels overlap: {clash[:2]}"
            if fig["legend"]:
                assert not _overlap(fig["legend"], fig["background"]), f"figure {k}: legend"
                for text in labels + fig["titles"]:
                    assert not _overlap(fig["legend"], text), f"figure {k}: legend on a label"
        # the viewer: a DFSDT episode shows its prompt, demonstrations, model calls and tree
        Select(driver.find_element(By.ID, "f-system")).select_by_value(
            next(o.get_attribute("value") for o in driver.find_elements(
                By.CSS_SELECTOR, "#f-system option") if o.get_attribute("value").startswith(
                "dfsdt"))
        )  # fmt: skip
        driver.find_element(By.CSS_SELECTOR, "#episodes tbody tr").click()
        detail = driver.find_element(By.ID, "detail")
        for part in ("system prompt and demonstrations", "DFSDT search tree", "model calls"):
            assert part in detail.text
        for summary in detail.find_elements(By.TAG_NAME, "summary"):
            if not summary.find_element(By.XPATH, "..").get_attribute("open"):
                summary.click()
        assert "demonstration 1:" in detail.text and "call 1" in detail.text

        driver.get(one.as_uri())
        figures = driver.execute_script(FIGURE_LAYOUT_JS)
        assert "cost" not in [f["kind"] for f in figures]  # nothing cost money: no cost plot
        assert not any(f["polar"] for f in figures)  # one axis: no radar ...
        assert figures and all(f["marks"] >= 1 for f in figures)  # ... and no empty panel
    finally:
        driver.quit()


def test_intervals_pareto_and_robustness(runs, tmp_path):
    from raleval.store import TASKS, read_tasks, write_tasks

    _, good, _ = runs
    noisy = tmp_path / "noisy"
    noisy.mkdir()
    for name in ("results.jsonl", "header.json"):
        (noisy / name).write_bytes((good / name).read_bytes())
    tasks = read_tasks(good / TASKS)
    write_tasks(
        noisy / TASKS,
        [
            t.model_copy(
                update={"metadata": {**t.metadata, "noise_ratio": [0.0, 0.2, 0.4, 0.6, 0.8][i % 5]}}
            )
            for i, t in enumerate(tasks)
        ],
    )
    text = write_report([noisy], tmp_path / "n.html").read_text()
    # every task right: F1's Wilson interval is not certain of it (the t printed [1.000, 1.000])
    assert "F1 [95% interval]" in text and re.search(r"1\.000 \[0\.\d{3}, 1\.000\]", text)
    assert "<td>yes</td>" in text  # the only system is on its own Pareto front
    assert "noise ratio" in text  # the robustness curve was drawn


def test_table_command_formats(runs):
    from typer.testing import CliRunner

    from raleval.app.cli import app

    _, good, bad = runs
    for fmt, marker in (
        ("csv", "system,1-3"),
        ("markdown", "| system |"),
        ("latex", r"\begin{tabular}"),
    ):
        res = CliRunner().invoke(app, ["table", str(good), str(bad), "--format", fmt])
        assert res.exit_code == 0 and marker in res.output, res.output


def test_time_and_cost_axes_write_plain_numbers():
    """The study's first PNG showed its ticks as "$\\mathdefault{10^{0}}$": mathtext is off
    (names with "$" stay text), so the log axis must format its own ticks."""
    pytest.importorskip("matplotlib")
    from raleval.analysis import plots

    points = {"a": (0.5, 0.3, 0.9, 0.2), "b": (12.0, 9.0, 15.0, 0.6)}
    svg = plots.deployment(points, ["a", "b"])
    assert "mathdefault" not in svg and "$" not in svg
    with plots.rendered_as("png"):
        png = plots.cost(points, ["a", "b"])
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


def test_every_system_of_a_study_sized_figure_has_its_own_look():
    # the study's time-versus-F1 figure showed 14 systems in matplotlib's 10-colour cycle:
    # two systems shared a colour and a marker, and the legend could not tell them apart
    from raleval.analysis.plots import system_styles

    workflows = ["react", "function_calling", "pal", "dfsdt", "direct", "planned"]
    models = ["local/smollm2-135m", "local/qwen2.5-0.5b", "local/qwen2.5-1.5b"]
    names = [f"{w}/{m}" for w in workflows for m in models]
    styles = system_styles(names)
    assert len(set(styles.values())) == len(names) == 18
    # one colour per model, one marker per workflow: the legend reads as a grid
    for m in models:
        assert len({styles[f"{w}/{m}"][0] for w in workflows}) == 1
    for w in workflows:
        assert len({styles[f"{w}/{m}"][1] for m in models}) == 1
    many = [f"w{i}/m{i}" for i in range(40)]  # more models than colours: pairs still differ
    assert len(set(system_styles(many).values())) == 40


def test_time_and_cost_intervals_never_go_below_zero():
    # the study's 3-episode DFSDT cell: a t interval over 3 clusters reached -100 s, and the
    # time-versus-F1 axis grew negative ticks
    from types import SimpleNamespace

    from raleval.analysis.report import time_and_cost
    from raleval.analysis.stats import Interval

    few = SimpleNamespace(
        system="dfsdt/m",
        n=3,
        wall_s=Interval(144.0, -103.0, 391.0),
        f1=Interval(0.0, 0.0, 0.0),
        cost_usd=Interval(0.002, -0.001, 0.005),
    )
    points, _, cost_points, _ = time_and_cost([few])
    assert points["dfsdt/m"] == (144.0, 0.0, 391.0, 0.0)
    assert cost_points["dfsdt/m"] == (0.002, 0.0, 0.005, 0.0)


@pytest.mark.integration
@pytest.mark.slow
def test_the_study_report_names_each_rows_environment_and_task_set(tmp_path):
    """Issue 50: the study's report named rows by workflow/model only, so
    react/local/qwen2.5-0.5b stood five times (8, 40, 15, 10 and 45 episodes) with nothing to
    tell the cells apart. Read in a real browser: every run row names its environment and task
    set, no two rows are the same cell, and the run paths are folded away."""
    from selenium.webdriver.common.by import By

    from raleval.app.study import cells_under

    from .conftest import REPO

    study = REPO / "studies" / "local-models"
    path = write_report(list(cells_under(study)), tmp_path / "study.html")
    driver = chromium_driver(tmp_path)
    try:
        driver.get(path.as_uri())
        section = driver.find_element(
            By.XPATH, "//details[.//h2[starts-with(normalize-space(), 'Runs:')]]"
        )
        header = [th.text for th in section.find_elements(By.CSS_SELECTOR, "th")]
        assert header[:4] == ["system", "environment", "task set", "episodes"]
        # each row's first three cells as the browser renders them, read in one round trip
        # (a WebDriver call per cell took 1,100 calls)
        assert section.is_displayed()
        rows = driver.execute_script(
            "return Array.from(arguments[0].querySelectorAll('tr')).slice(1).map(tr =>"
            " Array.from(tr.querySelectorAll('td')).slice(0, 3).map(td => td.innerText.trim()))",
            section,
        )
        assert len(rows) == len(list(study.iterdir())) - sum(
            not p.is_dir() for p in study.iterdir()
        )
        assert all(env not in ("", "-") and tasks not in ("", "-") for _, env, tasks in rows)
        assert len({tuple(r) for r in rows}) == len(rows)
        assert {"crag-pages", "wiki", "scholar"} <= {env for _, env, _ in rows}
        subtitle = driver.find_element(By.CSS_SELECTOR, "body > div.muted")
        assert len(subtitle.text.splitlines()) <= 2  # one line and the folded list's summary
    finally:
        driver.quit()


def test_tokens_per_episode_against_f1_has_both_intervals_and_each_n():
    """Issue 48: the matched-compute comparison is read as F1 against tokens per episode (the
    same on any machine), with both intervals and n on every point."""
    pytest.importorskip("matplotlib")
    from types import SimpleNamespace

    from raleval.analysis import plots
    from raleval.analysis.report import token_points
    from raleval.analysis.stats import Interval

    def system(name, n, tokens, f1):
        return SimpleNamespace(
            system=name, n=n, tokens=tokens[0], tokens_ci=Interval(*tokens), f1=Interval(*f1)
        )

    summaries = [
        system("react/m", 80, (3678.0, 2622.0, 4733.0), (0.281, 0.177, 0.414)),
        system("direct/m", 80, (121.0, 116.0, 126.0), (0.135, 0.077, 0.228)),
        system("pal/m", 20, (810.0, -5.0, 974.0), (0.123, 0.06, 0.233)),  # a t interval below 0
        system("none/m", 0, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)),  # no episode: no point
    ]
    points, front = token_points(summaries)
    assert set(points) == {"react/m", "direct/m", "pal/m"}
    assert points["pal/m"] == (810.0, 0.0, 974.0, 0.123)
    assert front == ["direct/m", "react/m"]  # pal costs more than direct for less F1
    extras = {s.system: (s.f1.low, s.f1.high, s.n) for s in summaries if s.n}
    svg = plots.tokens(points, front, extras)
    assert "tokens per episode" in svg
    for name, n in (("react/m", 80), ("direct/m", 80), ("pal/m", 20)):
        assert f"{name} (n={n})" in svg
