"""RAGEval's key-point shares by rule (raleval.keypoints): one changed value is one
hallucinated point, one left out is one irrelevant point; long-form grading, labels and the
oracle's text built on them."""

from datetime import datetime, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raleval.analysis.scoring import score_trajectory
from raleval.grading.rules import LONG_FORM_COMPLETENESS, grade, grade_task
from raleval.keypoints import judge_key_points, oracle_text, score_key_points
from raleval.records import AgentSpec, KeyPoint, Step, Task, Trajectory

POSITIONS = ["professor", "associate professor", "assistant professor", "researcher", "lecturer"]


def _points(papers=45, cites=1234, year=2009, position="associate professor", venue="KDD"):
    return [
        KeyPoint(
            slot="papers",
            kind="number",
            value=str(papers),
            cues=["paper", "published"],
            statement=f"Ada Lin has published {papers} papers.",
        ),
        KeyPoint(
            slot="citations",
            kind="number",
            value=str(cites),
            cues=["cited", "citation"],
            statement=f"Her work has been cited {cites:,} times.",
        ),
        KeyPoint(
            slot="phd_year",
            kind="year",
            value=str(year),
            cues=["ph.d", "doctorate"],
            statement=f"She received her Ph.D. in {year}.",
        ),
        KeyPoint(
            slot="position",
            kind="entity",
            value=position,
            cues=["position", "works as"],
            choices=POSITIONS,
            statement=f"She works as {position} at Qerrin Institute.",
        ),
        KeyPoint(
            slot="interest",
            kind="member",
            value="graph mining",
            cues=["interest"],
            statement="Her research interests include graph mining.",
        ),
        KeyPoint(
            slot="top_venue",
            kind="entity",
            value=venue,
            cues=["venue"],
            statement=f"Her most cited paper appeared in the venue {venue}.",
        ),
    ]


def _text(points, skip=None, swap=None):
    """The statements joined; ``skip`` leaves point i out, ``swap`` = (i, wrong) writes a wrong
    value into point i's statement."""
    out = []
    for i, p in enumerate(points):
        if i == skip:
            continue
        s = p.statement
        if swap and swap[0] == i:
            s = s.replace(p.value if p.slot != "citations" else f"{int(p.value):,}", swap[1])
        out.append(s)
    return " ".join(out)


def test_reference_covers_every_point():
    points = _points()
    assert score_key_points(_text(points), points).to_dict() == {
        "completeness": 1.0,
        "hallucination": 0.0,
        "irrelevance": 0.0,
        "verdicts": ["covered"] * 6,
    }


@pytest.mark.parametrize(
    ("i", "wrong"), [(0, "52"), (1, "999"), (2, "2011"), (3, "lecturer"), (3, "professor")]
)
def test_one_changed_value_is_one_hallucinated_point(i, wrong):
    points = _points()
    shares = score_key_points(_text(points, swap=(i, wrong)), points)
    k = len(points)
    assert shares.hallucination == pytest.approx(1 / k)
    assert shares.completeness == pytest.approx((k - 1) / k)
    assert shares.irrelevance == 0.0
    assert shares.verdicts[i] == "contradicted"


@pytest.mark.parametrize("i", range(6))
def test_one_left_out_is_one_irrelevant_point(i):
    points = _points()
    shares = score_key_points(_text(points, skip=i), points)
    k = len(points)
    assert shares.irrelevance == pytest.approx(1 / k)
    assert shares.completeness == pytest.approx((k - 1) / k)
    assert shares.hallucination == 0.0
    assert shares.verdicts[i] == "missing"


@settings(max_examples=60, deadline=None)
@given(
    papers=st.integers(1, 900),
    cites=st.integers(1000, 90000),
    year=st.integers(1960, 2024),
    wrong=st.integers(1, 90000),
    which=st.sampled_from([0, 1, 2]),
)
def test_any_changed_number_is_caught(papers, cites, year, wrong, which):
    points = _points(papers, cites, year)
    values = [papers, cites, year]
    if wrong in values or (which == 2 and not 1500 <= wrong <= 2199):
        return  # not a different value of the slot's kind
    if len(set(values)) < 3:
        return  # a value stated for another slot states it (documented: stated anywhere)
    shown = f"{wrong:,}" if which == 1 else str(wrong)
    shares = score_key_points(_text(points, swap=(which, shown)), points)
    assert shares.verdicts[which] == "contradicted"
    assert shares.hallucination == pytest.approx(1 / 6)


def test_value_of_another_point_near_a_cue_is_not_a_contradiction():
    points = _points()
    # "published ... cited 1,234 times": 1,234 is the citations, not a wrong paper count
    text = "Ada Lin published papers that have been cited 1,234 times."
    verdicts = judge_key_points(text, points)
    assert verdicts[:2] == ["missing", "covered"]


def test_a_longer_choice_does_not_state_a_shorter_one():
    points = _points(position="professor")
    verdicts = judge_key_points("She works as associate professor.", points)
    assert verdicts[3] == "contradicted"
    verdicts = judge_key_points("She works as professor.", _points())  # value: associate
    assert verdicts[3] == "contradicted"


def test_open_entities_and_members_are_never_contradicted():
    points = _points()
    text = "Her most cited paper appeared in the venue ICML. Her interests include robotics."
    verdicts = judge_key_points(text, points)
    assert verdicts[4:] == ["missing", "missing"]  # documented: a wrong open value is missing


def test_grade_long_form_is_aligned_at_the_threshold_with_no_contradiction():
    points = _points()
    ref = _text(points)
    assert grade(ref, [ref], "long_form", key_points=points).correct
    one_missing = grade(_text(points, skip=5), [ref], "long_form", key_points=points)
    assert one_missing.completeness == pytest.approx(5 / 6)
    assert LONG_FORM_COMPLETENESS <= 5 / 6
    assert one_missing.correct
    two_missing = _text(points[:4], skip=0)  # 3 of 6
    assert not grade(two_missing, [ref], "long_form", key_points=points).correct
    contradicted = grade(_text(points, swap=(0, "52")), [ref], "long_form", key_points=points)
    assert contradicted.completeness == pytest.approx(5 / 6) and not contradicted.correct
    abstained = grade("I don't know.", [ref], "long_form", key_points=points)
    assert not abstained.correct and abstained.completeness == 0.0
    with pytest.raises(ValueError, match="key points"):
        grade(ref, [ref], "long_form")


def _task(points):
    return Task(
        id="lf-1",
        domain="scholar",
        level="KS",
        family="lf",
        question="Write a profile of Ada Lin of Qerrin Institute.",
        answers=[_text(points)],
        key_points=points,
    )


def test_a_task_with_key_points_is_long_form():
    task = _task(_points())
    assert task.answer_type.value == "long_form"
    assert grade_task(task, _text(_points())).correct


def _traj(answer, observations):
    steps = [Step(index=i, tool="Search", observation=o) for i, o in enumerate(observations)]
    return Trajectory(
        task_id="lf-1",
        agent=AgentSpec(workflow="react", model="m", env="e"),
        answer=answer,
        termination="finished",
        steps=steps,
        started_at=datetime(2026, 1, 1, tzinfo=timezone.utc),
        wall_time_s=1.0,
    )


def test_labels_of_long_form_episodes():
    points = _points()
    task = _task(points)
    everything = [_text(points)]
    five = [_text(points, skip=5)]
    # right and every stated value was shown: EM; a stated value no tool showed: AM
    traj = _traj(_text(points, skip=5), five)
    score_trajectory(traj, task)
    assert (traj.error_type.value, traj.scores["kp_completeness"]) == ("EM", pytest.approx(5 / 6))
    traj = _traj(_text(points), five)
    score_trajectory(traj, task)
    assert traj.error_type.value == "AM"
    # wrong with every value in hand: GE; wrong without: RE
    wrong = _text(points, swap=(0, "52"))
    for shown, label in ((everything, "GE"), (five, "RE")):
        traj = _traj(wrong, shown)
        score_trajectory(traj, task)
        assert traj.error_type.value == label
        assert traj.scores["kp_hallucination"] == pytest.approx(1 / 6)


def test_oracle_writes_only_what_it_was_shown():
    points = _points()
    shown = ['{"num_pubs": 45, "n_citation": 1234, "phd": "Ph.D., 2009"}']
    text = oracle_text(points, shown)
    assert text == " ".join(p.statement for p in points[:3])
    assert oracle_text(points, ["nothing here"]) is None


def _family(n=24):
    """Long-form tasks about different people: shared positions and interests, own numbers."""
    tasks = []
    for i in range(n):
        points = _points(
            papers=10 + i,
            cites=2000 + 37 * i,
            year=1990 + i % 20,
            position=POSITIONS[i % 5],
            venue=f"Venue{i}",
        )
        tasks.append(
            Task(
                id=f"lf-{i}",
                domain="scholar",
                level="KS",
                family="lf",
                question=f"Write a profile of scholar number {i}.",
                answers=[_text(points)],
                key_points=points,
            )
        )
    return tasks


def test_audit_grades_long_form_baselines_by_key_points():
    from raleval.analysis.audit import audit_family

    tasks = _family()
    audit = audit_family("lf", tasks)
    names = {b.name: b for b in audit.baselines}
    assert {"echo", "slot_majority", "majority"} <= set(names)
    assert audit.passed, [(b.name, b.accuracy, b.chance) for b in audit.baselines]
    # a family whose question gives its key points away fails
    leaky = [t.model_copy(update={"question": t.answers[0]}) for t in tasks]
    leaky_audit = audit_family("lf", leaky)
    assert not leaky_audit.passed
    assert {b.name: b.accuracy for b in leaky_audit.baselines}["echo"] == 1.0


def test_console_table_shows_key_point_shares_beside_f1():
    import io

    from rich.console import Console

    from raleval.analysis.summary import render_table, summarize

    points = _points()
    task = _task(points)
    trajs = [_traj(_text(points), [_text(points)]), _traj(_text(points, swap=(0, "52")), [])]
    for i, traj in enumerate(trajs):
        traj.epoch = i
        score_trajectory(traj, task)
    rows = summarize(trajs, {task.id: task})
    assert rows[0].completeness == pytest.approx((1 + 5 / 6) / 2)
    assert rows[0].kp_hallucination == pytest.approx(1 / 12)
    out = io.StringIO()
    Console(file=out, width=100).print(render_table(rows))
    text = out.getvalue()
    assert "long-form answers" in text and "complete" in text and "halluc." in text
    assert "0.917" in text and "0.083" in text
