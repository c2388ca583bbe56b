"""The report treats every text as hostile (issue 38): questions, answers, model outputs, tool
results, task ids, system names and run paths can neither run script nor change the page's
structure, and a real headless Chromium lists and shows every episode as text."""

from __future__ import annotations

import json

import pytest

from raleval.analysis.report import build_report, script_json
from raleval.analysis.runs import load_run
from raleval.store import HEADER, RESULTS, TASKS, ResultsFile, read_header, read_tasks, write_tasks

from .conftest import run_config
from .test_report import chromium_driver

# Each one ends, re-opens or escapes a script element, an attribute, a comment, a template
# marker or a JS template literal, or is text a parser may choke on.
PAYLOADS = [
    "</script><script>window.__pwned=1;alert(1)</script>",
    "<!--<script>window.__pwned=2</script>",
    '<img src=x onerror="window.__pwned=3;alert(3)">',
    "\"'><svg onload=alert(4)>",
    "</SCRIPT >",
    "<script",
    "]]><![CDATA[",
    "-->",
    "\u2028\u2029",
    "\\u003c/script\\u003e \\x3cscript \\",
    "@@data@@ @@subtitle@@",
    "${alert(5)} `",
    "&lt;b&gt; &amp;",
    "$\\frac{",  # mathtext in a figure label
    "\x00",
]
HOSTILE = " ".join(PAYLOADS)
# What the page shows for HOSTILE: NUL is not representable in HTML text (U+FFFD or dropped)
VISIBLE = [p for p in PAYLOADS if p not in ("\x00", "\u2028\u2029")]
LONG = "x" * 200_000


def _hostile_run(src, dest):
    """``src``'s run rewritten with hostile text in every field the report displays."""
    dest.mkdir()
    (dest / HEADER).write_bytes((src / HEADER).read_bytes())
    header = read_header(src)
    header.prompts = {
        "template": "template " + HOSTILE,
        "shots": 1,
        "demonstrations": {"fam " + HOSTILE: ["demo " + HOSTILE]},
        "rendered": {"fam " + HOSTILE: ["rendered " + HOSTILE]},
    }
    (dest / HEADER).write_text(header.model_dump_json(), encoding="utf-8")
    tasks = read_tasks(src / TASKS)
    ids = {t.id: f"t{k} {HOSTILE}" for k, t in enumerate(tasks)}
    write_tasks(
        dest / TASKS,
        [
            t.model_copy(
                update={
                    "id": ids[t.id],
                    "family": "fam " + HOSTILE,
                    "question": f"question {HOSTILE} {LONG}",
                    "answers": [f"gold {HOSTILE}"],
                }
            )
            for t in tasks
        ],
    )
    out = ResultsFile(dest / RESULTS)
    for t in ResultsFile(src / RESULTS):
        steps = [
            s.model_copy(
                update={
                    "thought": "thought " + HOSTILE,
                    "observation": f"observation {HOSTILE} {LONG}",
                    "cause": "cause " + HOSTILE,
                    "arguments": {HOSTILE: HOSTILE},
                    "tool": None,
                    "raw_action": "raw " + HOSTILE,
                }
            )
            for s in t.steps
        ]
        calls = [
            c.model_copy(
                update={
                    "prompt": "prompt " + HOSTILE,
                    "output": "output " + HOSTILE,
                    "error": HOSTILE,
                }
            )
            for c in t.llm_calls
        ]
        tree = [
            {"id": HOSTILE, "parent": HOSTILE, "depth": '1"><img src=x onerror=alert(9)>',
             "status": HOSTILE, "tool": HOSTILE, "arguments": {HOSTILE: 1},
             "thought": HOSTILE, "observation": HOSTILE}
        ]  # fmt: skip
        out.append(
            t.model_copy(
                update={
                    "task_id": ids[t.task_id],
                    "agent": t.agent.model_copy(update={"model": "model " + HOSTILE}),
                    "answer": f"answer {HOSTILE} {LONG}",
                    "steps": steps,
                    "llm_calls": calls,
                    "termination_cause": HOSTILE,
                    "extra": {"tree": tree},
                }
            )
        )
    return ids


def test_script_json_cannot_end_or_reopen_its_element():
    data = script_json({"s": HOSTILE + "\ud800"})
    assert not any(c in data for c in "<>&\u2028\u2029\x00")
    assert json.loads(data) == {"s": HOSTILE + "\ufffd"}
    data.encode("utf-8")  # writable: the lone surrogate is gone


def test_hostile_report_in_a_real_browser(tmp_path):
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.common.by import By

    good, _ = run_config(tmp_path, limit=3)
    # a run path is text too (a folder name cannot hold "/", so the rest of the payloads)
    folder = tmp_path / " ".join(p for p in PAYLOADS if "/" not in p and "\x00" not in p)
    ids = _hostile_run(good.run_dir, folder)
    run = load_run(folder)
    run.rescore()
    # a lone surrogate cannot be read from a results file, but a run built in memory holds one
    run.results[0].answer = "surrogate \ud800 " + run.results[0].answer
    report = tmp_path / "hostile.html"
    report.write_text(build_report([run]), encoding="utf-8")
    html = report.read_text(encoding="utf-8")
    # the page's own structure, whatever the data: three script elements (the episode renderer
    # the viewer shares, the data, the page's script), nothing else
    assert html.count("<script") == 3 and html.count("</script>") == 3

    driver = chromium_driver(tmp_path)
    try:
        driver.get(report.as_uri())
        count = driver.find_element(By.ID, "count").text
        assert count == f"{len(ids)} of {len(ids)} episodes"
        rows = driver.find_elements(By.CSS_SELECTOR, "#episodes tbody tr")
        shown = sorted(r.find_elements(By.TAG_NAME, "td")[1].text for r in rows)
        for task_id, text in zip(sorted(ids.values()), shown, strict=True):
            for payload in VISIBLE:
                assert payload.strip() in text, (payload, text[:200])
            assert text.startswith(task_id.split(" ", 1)[0] + " ")
        for k in range(len(rows)):
            driver.find_elements(By.CSS_SELECTOR, "#episodes tbody tr")[k].click()
            for summary in driver.find_elements(By.CSS_SELECTOR, "#detail summary"):
                summary.click()
            detail = driver.find_element(By.ID, "detail").text
            for part in ("question", "gold", "answer", "thought", "observation", "raw", "output"):
                assert f"{part} {VISIBLE[0]}" in detail, part
        body = driver.find_element(By.TAG_NAME, "body").text
        assert VISIBLE[2] in body  # the run path, shown as text in the subtitle
        # nothing ran and nothing was injected
        assert driver.execute_script("return window.__pwned === undefined")
        assert len(driver.find_elements(By.TAG_NAME, "script")) == 3
        assert not driver.find_elements(By.TAG_NAME, "img")
        assert not driver.find_elements(By.CSS_SELECTOR, "[onerror], [onload]")
        with pytest.raises(NoAlertPresentException):
            driver.switch_to.alert  # noqa: B018
    finally:
        driver.quit()
