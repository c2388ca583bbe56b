"""The pieces issue 63 changed, by hand: a wiki ``Lookup`` matched with the page it read (call
scores, progress rate, departure point, gold retrieval), prefixes cut at reply boundaries,
mending that keeps the model's values (malformed JSON, values in each other's slots), and the
causes of a nondeterministic or budget-bound episode."""

from __future__ import annotations

import json
from datetime import datetime, timezone

from raleval.analysis.calls import call_scores
from raleval.analysis.diagnosis import (
    Cause,
    Outcome,
    budget_bound,
    cause_of,
    clean_interface_prefix,
    gold_retrieval_prefix,
    partial_json,
    reslotted,
)
from raleval.analysis.progress import progress_rate
from raleval.records import AgentSpec, OutcomeKind, Step, Task, Termination, ToolCall, Trajectory

A, B = "Kroth Queikialini", "Lun Megrusberg"
COMPARISON = Task(
    id="w1",
    domain="wiki",
    level="KA",
    family="3-2",
    question=f"Who received a doctorate earlier, {A} or {B}?",
    answers=[A],
    evidence=["1991", "1992"],
    solution=[
        ToolCall(tool="Search", arguments={"entity": A}),
        ToolCall(tool="Lookup", arguments={"keyword": "Ph.D."}),
        ToolCall(tool="Search", arguments={"entity": B}),
        ToolCall(tool="Lookup", arguments={"keyword": "Ph.D."}),
    ],
    metadata={"subgoals": [[A], ["1991"], [B], ["1992"]]},
)


def _traj(steps: list[Step], env: str = "wiki", answer: str = "Zorblax") -> Trajectory:
    steps = [s.model_copy(update={"index": i}) for i, s in enumerate(steps)]
    steps.append(Step(index=len(steps), tool="Finish", arguments={"answer": answer}))
    return Trajectory(
        task_id="w1",
        agent=AgentSpec(workflow="react", model="scripted/x", env=env),
        steps=steps,
        answer=answer,
        termination=Termination.finished,
        started_at=datetime(2026, 1, 1, tzinfo=timezone.utc),
        wall_time_s=0.1,
    )


def _step(tool: str, observation: str = "...", **arguments: object) -> Step:
    return Step(index=0, tool=tool, arguments=dict(arguments), observation=observation)


SKIPPED = _traj(
    [
        _step("Search", f"{A} is a professor.", entity=A),
        _step("Search", f"{B} is an engineer.", entity=B),
        _step("Lookup", "(Result 1 / 1) Ph.D. in 1992.", keyword="Ph.D."),
    ]
)


def test_a_lookup_on_the_other_page_is_not_the_gold_lookup():
    scores = call_scores(SKIPPED, COMPARISON)
    # Search A, Search B, Lookup on B's page: the Lookup on A's page is missing
    assert scores["on_gold_path"] == 0.0
    assert scores["first_departure"] == 2.0
    assert scores["call_recall"] == 0.5
    assert progress_rate(SKIPPED, COMPARISON) == 0.5  # the two searches; 1991 never seen


def test_the_lookups_on_their_own_pages_are_the_gold_path():
    steps = [
        _step("Search", entity=A),
        _step("Lookup", keyword="Ph.D."),
        _step("Search", entity=B),
        _step("Lookup", keyword="ph.d."),
    ]
    scores = call_scores(_traj(steps), COMPARISON)
    assert scores["on_gold_path"] == 1.0 and scores["call_recall"] == 1.0


def test_gold_retrieval_opens_the_page_each_lookup_reads():
    prefix, why, added = gold_retrieval_prefix(SKIPPED, COMPARISON)
    assert why == "" and prefix is not None
    calls = [
        (s.tool, (s.arguments or {}).get("entity") or s.arguments.get("keyword")) for s in prefix
    ]
    assert calls == [
        ("Search", A),
        ("Search", B),  # the agent's own, given as recorded
        ("Search", A),
        ("Lookup", "Ph.D."),
        ("Search", B),
        ("Lookup", "Ph.D."),
    ]
    assert added == 4 and all(s.observation is None for s in prefix[2:])
    one, _why, n = gold_retrieval_prefix(SKIPPED, COMPARISON, whole_path=False)
    assert [s.tool for s in one[2:]] == ["Search", "Lookup"] and n == 2


def test_the_comparisons_winner_named_in_the_question_is_not_evidence_retrieved():
    shown = _traj([_step("Search", f"{A} studied in Paris.", entity=A)], answer=A)
    assert call_scores(shown, COMPARISON)["evidence_retrieved"] == 0.0


PERSON = Task(
    id="s1",
    domain="scholar",
    level="KA",
    family="2-4",
    question="Where does Ada Lin of Grikrart Institute work?",
    answers=["Grikrart Institute"],
    solution=[
        ToolCall(
            tool="searchPerson",
            arguments={"name": "Ada Lin", "organization": "Grikrart Institute"},
        ),
        ToolCall(tool="getPersonBasicInfo", arguments={"person_id": "a1b2"}),
    ],
)


def _fc(step: Step, turn: int, call_id: str) -> Step:
    record = {"id": call_id, "turn": turn, "name": step.tool, "arguments": step.arguments}
    return step.model_copy(update={"raw_action": json.dumps(record)})


def test_a_made_up_id_in_a_parallel_reply_is_mended_inside_that_reply():
    from raleval.app.plan import build_env

    tools = build_env("scholar", {"size": "tiny"}).tools
    traj = _traj(
        [
            _fc(_step("searchPerson", '[{"person_id": "a1b2"}]', **PERSON.solution[0].arguments),
                0, "c0"),
            _fc(_step("getPersonBasicInfo", '{"organization": "Grikrart"}', person_id="a1b2"),
                1, "c1"),
            _fc(_step("getPersonBasicInfo", "No person found.", person_id="ffff0000"), 1, "c2"),
        ],
        env="scholar",
    )  # fmt: skip
    prefix, why, keep, control_tail = clean_interface_prefix(traj, PERSON, tools)
    assert why == "" and prefix is not None and keep == 2
    # the reply's valid call as recorded, then the mended call in the same turn, same id
    assert prefix[1].observation is not None and prefix[2].observation is None
    assert prefix[2].arguments == {"person_id": "a1b2"}
    assert json.loads(prefix[2].raw_action)["turn"] == 1
    assert json.loads(prefix[2].raw_action)["id"] == "c2"
    # the control is the whole reply as recorded, the made-up id included
    assert [s.arguments["person_id"] for s in control_tail] == ["a1b2", "ffff0000"]


def test_malformed_json_is_parsed_as_far_as_it_goes():
    assert partial_json('{"name": "Qzxv Wlorft"') == {"name": "Qzxv Wlorft"}
    assert partial_json('{"name": "Ada", "organization": "MIT",') == {
        "name": "Ada",
        "organization": "MIT",
    }
    assert partial_json('{"name": ["a", "b"') == {"name": ["a", "b"]}
    assert partial_json("searchPerson Ada") is None


def test_malformed_json_is_mended_with_the_models_own_value():
    from raleval.app.plan import build_env

    tools = build_env("scholar", {"size": "tiny"}).tools
    bad = Step(
        index=0,
        tool="searchPerson",
        arguments={"_raw": '{"name": "Qzxv Wlorft"'},
        observation="error: unexpected argument _raw",
        kind=OutcomeKind.misuse,
        cause="TE:bad_arguments",
    )
    prefix, _why, _keep, _tail = clean_interface_prefix(_traj([bad], "scholar"), PERSON, tools)
    assert prefix is not None and prefix[-1].arguments == {"name": "Qzxv Wlorft"}


def test_values_in_each_others_slots_are_put_back():
    swapped = _step("searchPerson", "[]", name="Grikrart Institute", organization="Ada Lin")
    assert reslotted(swapped, PERSON) == PERSON.solution[0]
    assert reslotted(_step("searchPerson", name="Ada Lin", organization="MIT"), PERSON) is None
    assert reslotted(PERSON.solution and _step("searchPerson", **PERSON.solution[0].arguments),
                     PERSON) is None  # fmt: skip


def test_a_nondeterministic_episode_is_unstable_whatever_an_intervention_did():
    fixed = {"gold_retrieval": Outcome(applied=True, fixed=True, rate=1.0, control_rate=0.0)}
    assert cause_of(False, fixed) is Cause.retrieval
    assert cause_of(False, fixed, nondeterministic=True) is Cause.unstable
    split = {"gold_retrieval": Outcome(applied=True, nondeterministic=True, rate=0.5)}
    assert cause_of(False, split) is Cause.unstable


def test_a_task_whose_gold_path_exceeds_the_step_budget_is_a_harness_limit():
    assert budget_bound(COMPARISON, 2) and not budget_bound(COMPARISON, 4)
    assert not budget_bound(COMPARISON, None)
    nothing = {"evidence_in_hand": Outcome(applied=True, rate=0.0, control_rate=0.0)}
    assert cause_of(False, nothing, budget_bound=True) is Cause.harness_limit
    assert cause_of(False, nothing) is Cause.beyond_reach
