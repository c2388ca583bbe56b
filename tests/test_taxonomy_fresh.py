"""raleval's labels on real study episodes it was never tuned on (issue 45).

``tests/data/taxonomy_fresh.jsonl``: 60 episodes drawn from the stored study cells
(``studies/local-models``; seed 1445, 10 per workflow, every source a workflow ran on, none
already in a labelled set), each labelled by hand from the rendered trajectory, the gold and
R-Eval's definitions before raleval's label was looked at (``build_taxonomy_fresh.py``).
Before the three rules below, raleval agreed on 54 of 60 (53 against the first hand labels,
one of which a display filter had misled); with them, on all 60. Issue 59 re-adjudicated the
sets by the codebook (docs/taxonomy.md): two fresh labels and one held-out label moved, each
reason says why; raleval agrees on all of them.
"""

import json
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

from raleval.analysis.scoring import score_trajectory
from raleval.records import AgentSpec, Step, Task, Trajectory

DATA = Path(__file__).parent / "data"
FRESH = [
    json.loads(line)
    for line in (DATA / "taxonomy_fresh.jsonl").read_text().splitlines()
    if line.strip()
]
WORKFLOWS = ("direct", "planned", "react", "function_calling", "pal", "dfsdt")


def test_the_fresh_set_is_drawn_as_described():
    assert len(FRESH) == 60 and all(c["reason"] and c["cell"] for c in FRESH)
    per = Counter(c["trajectory"]["agent"]["workflow"] for c in FRESH)
    assert per == dict.fromkeys(WORKFLOWS, 10)
    keys = {(c["cell"], c["trajectory"]["task_id"], c["trajectory"]["epoch"]) for c in FRESH}
    assert len(keys) == 60
    # none of them in the real-answer set the grading rules were checked on
    answers = Path(__file__).parents[1] / "grading" / "real_answers.jsonl"
    labelled = {
        (r["run"], r["task_id"], r["epoch"])
        for r in map(json.loads, answers.read_text().split("\n")[:-1])
    }
    assert not keys & labelled
    # the stored episodes carry no label or score raleval gave them
    assert not any("error_type" in c["trajectory"] or "scores" in c["trajectory"] for c in FRESH)


def test_agreement_with_the_hand_labels_per_workflow(capsys):
    agree, total, lines = Counter(), Counter(), []
    for case in FRESH:
        traj = Trajectory.model_validate(case["trajectory"])
        score_trajectory(traj, Task.model_validate(case["task"]))
        wf = traj.agent.workflow
        total[wf] += 1
        if traj.error_type.value == case["label"]:
            agree[wf] += 1
        else:
            lines.append(f"  {case['cell']} {traj.task_id}: hand {case['label']}, raleval "
                         f"{traj.error_cause}: {case['reason']}")  # fmt: skip
    with capsys.disabled():
        print(
            "\nfresh-set agreement: " + ", ".join(f"{w} {agree[w]}/{total[w]}" for w in WORKFLOWS)
        )
        print("\n".join(lines))
    # the level reached, every workflow: a rule that moves any of these labels must say why
    assert sum(agree.values()) == 60, "\n".join(lines)


HELDOUT = [
    json.loads(line)
    for line in (DATA / "taxonomy_heldout.jsonl").read_text().splitlines()
    if line.strip()
]


def test_agreement_on_the_held_out_draw(capsys):
    """18 more episodes (seed 2445, 3 per workflow, none of the 60), labelled by hand after
    the rules below were written: 17 agreed. The one that did not, a HotpotQA comparison
    ("Who is older, Annie Morton or Terry Richardson?") answered right after reading Annie
    Morton's page only, where Terry Richardson is named as her photographer, was hand-labelled
    AM; the codebook checks containment, not attribution, so it is EM (re-adjudicated, issue
    59), as raleval says: 18 agree."""
    assert len(HELDOUT) == 18 and all(c["reason"] for c in HELDOUT)
    fresh = {(c["cell"], c["trajectory"]["task_id"]) for c in FRESH}
    assert not fresh & {(c["cell"], c["trajectory"]["task_id"]) for c in HELDOUT}
    wrong = []
    for case in HELDOUT:
        traj = Trajectory.model_validate(case["trajectory"])
        score_trajectory(traj, Task.model_validate(case["task"]))
        if traj.error_type.value != case["label"]:
            wrong.append((traj.task_id, case["label"], traj.error_cause))
    with capsys.disabled():
        print(f"\nheld-out agreement: {len(HELDOUT) - len(wrong)}/{len(HELDOUT)} {wrong}")
    assert wrong == []


# --- the three rules the fresh set brought, each on a small episode of its own -------------

CRAG = {"workflow": "react", "model": "m", "env": "crag"}


def _traj(answer, steps, termination="finished", agent=CRAG):
    return Trajectory(
        task_id="t",
        agent=AgentSpec(**agent),
        answer=answer,
        termination=termination,
        steps=[Step(index=i, **s) for i, s in enumerate(steps)],
        started_at=datetime(2026, 1, 1, tzinfo=timezone.utc),
        wall_time_s=1.0,
    )


def _label(traj, task):
    score_trajectory(traj, Task.model_validate(task))
    return traj.error_type.value, traj.error_cause


CAP = {
    "id": "t",
    "question": "What is the market capitalization of Cormel Labs in USD?",
    "answers": ["393042320000.0"],
    "answer_type": "number",
    "domain": "crag/finance",
    "family": "crag-simple",
    "level": "KS",
}
LOOKUP = {"tool": "finance_get_ticker_by_name", "arguments": {"query": "Cormel Labs"},
          "observation": "CORME"}  # fmt: skip


def test_a_name_passed_where_the_tool_takes_a_key_is_made_up():
    """The question names the company, not its ticker: passing the name as the ticker (after
    the lookup returned CORME) is improper use, TE when it dominated (every call from it on);
    the ticker the lookup gave, or one the question names as a key, is not."""
    by_name = {"tool": "finance_get_market_capitalization",
               "arguments": {"ticker": "Cormel Labs"}, "observation": "null"}  # fmt: skip
    assert _label(_traj("1.0", [LOOKUP, by_name]), CAP) == ("TE", "TE:misuse:unknown_id")
    by_ticker = {**by_name, "arguments": {"ticker": "CORME"}, "observation": "1.2e9"}
    assert _label(_traj("1.0", [LOOKUP, by_ticker]), CAP) == ("RE", "RE:wrong_answer")
    named = {**CAP, "question": "What is the market capitalization of CORME in USD?"}
    assert _label(_traj("1.0", [by_ticker]), named) == ("RE", "RE:wrong_answer")


PREMISE = {
    "id": "t",
    "question": "What was the most recent dividend paid by Tasarfenmi Bank?",
    "answers": ["invalid question"],
    "answer_type": "invalid_premise",
    "domain": "crag/finance",
    "family": "crag-false-premise",
    "level": "KS",
    "tags": {"question_type": "false_premise"},
    "solution": [
        {"tool": "finance_get_ticker_by_name", "arguments": {"query": "Tasarfenmi Bank"}},
        {"tool": "finance_get_dividends_history", "arguments": {"ticker": "TAS"}},
    ],
}


def test_a_premise_is_checked_only_by_the_call_that_decides_it():
    """A right "invalid question" is EM only after the gold plan's deciding call (here the
    dividend history) ran with a key not made up; a ticker lookup, another domain's tool, or
    the dividend history given the bank's name instead of TAS checked nothing (AM)."""
    lookup = {"tool": "finance_get_ticker_by_name",
              "arguments": {"query": "Tasarfenmi Bank"}, "observation": "TAS"}  # fmt: skip
    history = {"tool": "finance_get_dividends_history", "arguments": {"ticker": "TAS"},
               "observation": "null"}  # fmt: skip
    by_name = {**history, "arguments": {"ticker": "Tasarfenmi Bank"}}
    other = {
        "tool": "sports_soccer_get_games_on_date",
        "arguments": {"date": "2024-04-07", "team_name": "x"},
        "observation": "null",
    }
    rejection = "invalid question"
    assert _label(_traj(rejection, [lookup, history]), PREMISE)[0] == "EM"
    assert _label(_traj(rejection, [lookup]), PREMISE)[0] == "AM"
    assert _label(_traj(rejection, [lookup, by_name]), PREMISE)[0] == "AM"
    assert _label(_traj(rejection, [other]), PREMISE)[0] == "AM"
    # a task without a gold plan: any successful call is the check, as before
    bare = {k: v for k, v in PREMISE.items() if k != "solution"}
    assert _label(_traj(rejection, [other]), bare)[0] == "EM"


WIKI = {"workflow": "react", "model": "m", "env": "wiki"}
HOTPOT = {
    "id": "t",
    "question": 'What screenwriter with credits for "Evolution" co-wrote a film starring '
    "Nicolas Cage and Téa Leoni?",
    "answers": ["David Weissman"],
    "answer_type": "entity",
    "domain": "wiki",
    "family": "3-1",
    "level": "KA",
}


def test_a_gold_among_a_failed_searchs_suggested_titles_was_shown():
    """ReAct's and R-Eval's wiki tools answer a miss with page titles; the codebook counts
    them as scratchpad (the paper checks containment): a wrong answer after a gold there is
    GE. The strict reading, kept beside the label, says the titles were never read: RE."""
    for miss in (
        "Could not find Evolution. Similar: ['David Weissman', 'Outline of Ethiopia'].",
        "Could not find [Evolution]. Similar: ['David Weissman', 'Outline of Ethiopia']",
    ):
        step = {"tool": "Search", "arguments": {"entity": "Evolution"}, "observation": miss}
        traj = _traj("I don't know.", [step], agent=WIKI)
        assert _label(traj, HOTPOT)[0] == "GE"
        assert traj.strict_error_type.value == "RE"
    page = {
        "tool": "Search",
        "arguments": {"entity": "David Weissman"},
        "observation": "David Weissman is a screenwriter (Evolution, The Family Man).",
    }
    assert _label(_traj("I don't know.", [page], agent=WIKI), HOTPOT)[0] == "GE"


def test_a_disambiguation_title_the_task_names_as_evidence_still_counts():
    """Wiki 2-3 names a disambiguation title ('Dronddrain (sairktaend)') among its evidence:
    there the suggested titles are what the task asks the agent to read."""
    task = {
        "id": "t",
        "question": 'In the sentence "The Dronddrain we saw was plucked.", which concept does '
        "Dronddrain belong to: sairktaend or lurkgril?",
        "answers": ["sairktaend"],
        "answer_type": "entity",
        "domain": "wiki",
        "family": "2-3",
        "level": "KU",
        "evidence": ["Dronddrain (sairktaend)", "plucked"],
    }
    miss = (
        "Could not find Dronddrain. Similar: ['Dronddrain (sairktaend)', 'Dronddrain (lurkgril)']."
    )
    page = "Sairktaend is a kind of tavrel. Sairktaends are bowed, fretted and plucked."
    steps = [
        {"tool": "Search", "arguments": {"entity": "Dronddrain"}, "observation": miss},
        {"tool": "Search", "arguments": {"entity": "sairktaend"}, "observation": page},
    ]
    assert _label(_traj("sairktaend", steps, agent=WIKI), task)[0] == "EM"
    assert _label(_traj("sairktaend", steps[1:], agent=WIKI), task)[0] == "AM"


SECOND = [
    json.loads(line)
    for line in (DATA / "taxonomy_second.jsonl").read_text().splitlines()
    if line.strip()
]


def test_the_second_studys_set_is_drawn_as_described():
    """42 episodes of ``studies/local-models-2`` (seed 5959, 7 per workflow), none whose model,
    workflow, environment and task an earlier labelled set holds, stored without any score or
    label raleval gave them."""
    assert len(SECOND) == 42 and all(c["reason"] and c["study"] == "local-models-2" for c in SECOND)
    assert Counter(c["trajectory"]["agent"]["workflow"] for c in SECOND) == dict.fromkeys(
        WORKFLOWS, 7
    )
    real = [json.loads(x) for x in (DATA / "taxonomy_real.jsonl").read_text().splitlines()]

    def agent_task(c):
        t = c["trajectory"]
        return (t["agent"]["model"], t["agent"]["workflow"], t["agent"]["env"], t["task_id"])

    earlier = {agent_task(c) for c in [*FRESH, *HELDOUT, *real]}
    assert not earlier & {agent_task(c) for c in SECOND}
    assert not any(
        k in c["trajectory"] for c in SECOND for k in ("error_type", "strict_error_type", "scores")
    )


def test_agreement_on_the_second_studys_set(capsys):
    """Labelled blind by the codebook (issue 59). Before the codebook rules raleval agreed on
    41 of 42 (a PAL program that crashed after its search returned the gold: TE, the codebook
    GE); with them, on all 42. The strict reading's agreement is printed beside it."""
    agree, strict, total, lines = Counter(), 0, Counter(), []
    for case in SECOND:
        traj = Trajectory.model_validate(case["trajectory"])
        score_trajectory(traj, Task.model_validate(case["task"]))
        wf = traj.agent.workflow
        total[wf] += 1
        agree[wf] += traj.error_type.value == case["label"]
        strict += traj.strict_error_type.value == case["label"]
        if traj.error_type.value != case["label"]:
            lines.append(f"  {case['cell']} {traj.task_id}: hand {case['label']}, raleval "
                         f"{traj.error_cause}: {case['reason']}")  # fmt: skip
    with capsys.disabled():
        print(
            "\nsecond-study agreement: "
            + ", ".join(f"{w} {agree[w]}/{total[w]}" for w in WORKFLOWS)
            + f"; strict reading {strict}/{len(SECOND)}"
        )
        print("\n".join(lines))
    assert sum(agree.values()) == 42, "\n".join(lines)
