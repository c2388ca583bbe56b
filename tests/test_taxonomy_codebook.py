"""One small episode per case of the codebook every hand-labelled set is adjudicated by
(``../shared/taxonomy-codebook.md``; docs/taxonomy.md says the same in the project's words).

Each test builds the episode through the public records, scores it with
:func:`raleval.analysis.scoring.score_trajectory` and asserts the label; where raleval's
stricter reading departs, the second, named column (``strict_error_type``) too. The gold
self-check and yes/no paraphrases belong to grading (``grading/rules.py``), not to the labels.
"""

from datetime import datetime, timezone

import pytest

from raleval.analysis.scoring import score_trajectory
from raleval.records import AgentSpec, Step, Task, Trajectory

GOLD = "Troulerk State University"
QUESTION = "Which organization is the first author of 'Causal Graphs' affiliated with?"
PAPER = {
    "tool": "Search",
    "arguments": {"entity": "Causal Graphs"},
    "observation": "Causal Graphs is a 2020 paper by Vel Kamertton and Zyn Thekoumholt.",
}
AUTHOR = {
    "tool": "Search",
    "arguments": {"entity": "Vel Kamertton"},
    "observation": f"Vel Kamertton is a Professor at {GOLD}. She has published 12 papers.",
}
NOTHING = {"tool": "Search", "arguments": {"entity": "Causal"}, "observation": "No page found."}
REFUSED = {
    "tool": "Lookup",
    "arguments": {"keyword": "affiliation", "page": 2},
    "kind": "misuse",
    "cause": "bad_arguments",
    "observation": "Invalid arguments for Lookup: page: Extra inputs are not permitted.",
}
UNPARSED = {"kind": "parse_error", "cause": "invalid_format", "observation": "Invalid action."}


def _task(**fields) -> Task:
    base = {
        "id": "t",
        "question": QUESTION,
        "answers": [GOLD],
        "answer_type": "entity",
        "domain": "wiki",
        "family": "3-1",
        "level": "KA",
    }
    return Task.model_validate({**base, **fields})


def _episode(answer, steps, termination="finished", cause=None, workflow="react", env="wiki"):
    return Trajectory(
        task_id="t",
        agent=AgentSpec(workflow=workflow, model="m", env=env),
        answer=answer,
        termination=termination,
        termination_cause=cause,
        steps=[Step(index=i, **s) for i, s in enumerate(steps)],
        started_at=datetime(2026, 1, 1, tzinfo=timezone.utc),
        wall_time_s=1.0,
    )


def _label(traj: Trajectory, task: Task | None = None) -> str:
    score_trajectory(traj, task or _task())
    return traj.error_type.value


def _strict(traj: Trajectory) -> str:
    return traj.strict_error_type.value


# --- the decision order -----------------------------------------------------------------------


def test_right_is_em_when_the_scratchpad_held_the_answer_else_am():
    assert _label(_episode(GOLD, [PAPER, AUTHOR])) == "EM"
    assert _label(_episode(GOLD, [PAPER])) == "AM"
    assert _label(_episode(GOLD, [])) == "AM"


@pytest.mark.parametrize(
    ("termination", "cause"),
    [
        ("finished", None),
        ("step_limit", None),
        ("context_limit", "context_window"),
        ("timeout", "wall_clock"),
        ("tool_fault", "backend_exception:OSError"),
        ("llm_error", "backend_error"),
        ("invalid_format", "3_consecutive_parse_errors"),
    ],
)
def test_wrong_after_the_evidence_is_ge_whatever_ended_the_episode(termination, cause):
    """The scratchpad is asked first: a budget, a context overflow, a fault or the agent's
    own misuse afterwards does not move it."""
    answer = "MIT" if termination == "finished" else None
    assert _label(_episode(answer, [PAPER, AUTHOR], termination, cause)) == "GE"


def test_wrong_after_the_evidence_then_refused_calls_is_ge():
    steps = [PAPER, AUTHOR, REFUSED, REFUSED]
    traj = _episode("MIT", steps)
    assert _label(traj) == "GE"
    assert _strict(traj) == "GE"


@pytest.mark.parametrize(
    ("termination", "cause", "answer", "label"),
    [
        ("finished", None, "MIT", "RE"),  # answered
        ("finished", None, "I don't know.", "RE"),  # gave up
        ("step_limit", None, None, "RE"),
        ("context_limit", "token_budget", None, "RE"),
        ("timeout", "wall_clock", None, "RE"),
        ("context_limit", "context_window", None, "RE"),  # the model's window: a halt
        ("tool_fault", "backend_exception:OSError", None, "ME"),
        ("llm_error", "HTTP 503 after 3 retries", None, "ME"),  # the model service
        ("invalid_format", "3_consecutive_parse_errors", None, "TE"),
    ],
)
def test_wrong_with_nothing_useful_seen_asks_whether_the_retrieval_was_interrupted(
    termination, cause, answer, label
):
    assert _label(_episode(answer, [PAPER, NOTHING], termination, cause)) == label


# --- the scratchpad ---------------------------------------------------------------------------

MISS = {
    "tool": "Search",
    "arguments": {"entity": "Vel"},
    "observation": f"Could not find Vel. Similar: ['Vel Kamertton', '{GOLD}'].",
}


def test_a_failed_searchs_suggestions_are_scratchpad():
    """Wrong after a gold among the suggested titles is GE, right is EM; the strict reading
    (titles are not content) keeps RE and AM in its own column."""
    wrong = _episode("Vel Kamertton", [MISS])
    assert (_label(wrong), _strict(wrong)) == ("GE", "RE")
    right = _episode(GOLD, [MISS])
    assert (_label(right), _strict(right)) == ("EM", "AM")


def test_a_distractors_result_is_scratchpad():
    """A look-alike tool of a testbed (``distractors=K``) returns an observation like any
    other: what it returned was received."""
    legacy = {**AUTHOR, "tool": "Search_legacy"}
    assert _label(_episode("MIT", [PAPER, legacy])) == "GE"
    assert _label(_episode(GOLD, [PAPER, legacy])) == "EM"


def test_a_planned_workflows_executed_calls_are_scratchpad():
    assert _label(_episode("MIT", [PAPER, AUTHOR], workflow="planned")) == "GE"
    assert _label(_episode(GOLD, [PAPER, AUTHOR], workflow="planned")) == "EM"


def test_the_models_own_text_and_the_question_are_not_scratchpad():
    thought = {**NOTHING, "thought": f"Maybe {GOLD}? Let me search."}
    assert _label(_episode("MIT", [thought])) == "RE"
    asked = _task(question=f"Is {GOLD} where the first author of 'Causal Graphs' works?")
    assert _label(_episode("MIT", [NOTHING]), asked) == "RE"


# --- containment ------------------------------------------------------------------------------

COUNT = {"answers": ["5"], "answer_type": "count", "question": "How many papers has Ada Lin?"}


def test_containment_is_token_bounded():
    """A gold 5 inside the id 175 or a date is not seen; standing as a value it is."""
    inside = {**NOTHING, "observation": '{"person_id": "175", "since": "2015-05-05"}'}
    assert _label(_episode("7", [inside]), _task(**COUNT)) == "RE"
    seen = {**NOTHING, "observation": '{"person_id": "175", "num_pubs": 5}'}
    assert _label(_episode("7", [seen]), _task(**COUNT)) == "GE"


def test_a_gold_seen_as_another_entitys_field_counts():
    """Containment, not attribution: the gold as the organization of someone else."""
    other = {
        **NOTHING,
        "observation": f'[{{"name": "Zyn Thekoumholt", "organization": "{GOLD}"}}]',
    }
    assert _label(_episode("MIT", [other])) == "GE"
    assert _label(_episode(GOLD, [other])) == "EM"


# --- PAL --------------------------------------------------------------------------------------

CALLS = "r0 = Search(entity='Causal Graphs')\nr1 = Search(entity='Vel Kamertton')\n"


def _pal(program, answer, calls=(PAPER, AUTHOR), termination="finished", cause=None, end=()):
    steps = [*calls, *end]
    if termination == "finished":
        steps.append({"thought": program, "tool": "Finish", "arguments": {"answer": answer}})
    return _episode(answer, steps, termination, cause, workflow="pal")


def test_pal_right_literal_is_am_right_computed_is_em():
    literal = _pal(CALLS + f"final_result = {GOLD!r}", GOLD)
    assert _label(literal) == "AM"
    computed = _pal(CALLS + "final_result = r1.split(' at ')[1].split('.')[0]", GOLD)
    assert _label(computed) == "EM"


def test_pal_wrong_after_the_evidence_is_ge_literal_or_computed():
    literal = _pal(CALLS + "final_result = 'MIT'", "MIT")
    assert (_label(literal), _strict(literal)) == ("GE", "RE")
    computed = _pal(CALLS + "final_result = r0.split(' by ')[1]", "Vel Kamertton")
    assert _label(computed) == "GE"


def _crash(error: str, program: str) -> dict:
    return {
        "thought": program,
        "kind": "misuse",
        "cause": f"program_error:{error}",
        "observation": f"{error}: ...",
    }


def test_pal_crash_after_the_evidence_is_ge():
    """A KeyError reading a field that does not exist, after the search returned the gold."""
    crash = _crash("KeyError", CALLS + "final_result = r1['organization']")
    traj = _pal("", None, termination="program_error", cause="KeyError", end=[crash])
    assert (_label(traj), _strict(traj)) == ("GE", "TE")


def test_pal_crash_before_the_evidence_is_te():
    """On a tool call's arguments (the call refused inside the program), or on a result's
    shape when the result held nothing useful."""
    refused = _crash("RuntimeError", "r0 = Lookup(keyword='affiliation', page=2)")
    on_arguments = _pal(
        "", None, calls=[REFUSED], termination="program_error", cause="RuntimeError", end=[refused]
    )
    assert _label(on_arguments) == "TE"
    shape = _crash("TypeError", "r0 = Search(entity='Causal Graphs')\nfinal_result = r0['x']")
    on_shape = _pal(
        "", None, calls=[PAPER], termination="program_error", cause="TypeError", end=[shape]
    )
    assert _label(on_shape) == "TE"


# --- TE needs an interruption -----------------------------------------------------------------


def test_te_when_the_episode_ended_on_misuse():
    assert _label(_episode(None, [PAPER, UNPARSED], "invalid_format", "parse_errors")) == "TE"


def test_te_when_misuse_dominated_the_episode():
    """Every call from the first misuse on refused or invalid, then an answer or a budget."""
    assert _label(_episode("MIT", [PAPER, REFUSED, REFUSED])) == "TE"
    assert _label(_episode(None, [PAPER, REFUSED, UNPARSED, REFUSED], "step_limit")) == "TE"


def test_one_incidental_invalid_call_among_valid_ones_is_re():
    """A made-up call among valid ones that then ran to the step budget, or to an answer: the
    retrieval was halted, not interrupted. The strict reading keeps TE in its own column."""
    budget = _episode(None, [PAPER, REFUSED, NOTHING, NOTHING], "step_limit")
    assert (_label(budget), _strict(budget)) == ("RE", "TE")
    assert budget.error_cause == "RE:step_budget"
    answered = _episode("MIT", [REFUSED, PAPER, NOTHING])
    assert (_label(answered), _strict(answered)) == ("RE", "TE")


# --- made-up identifiers ----------------------------------------------------------------------

CAP = {
    "question": "What is the market capitalization of Cormel Labs in USD?",
    "answers": ["393042320000.0"],
    "answer_type": "number",
    "domain": "crag/finance",
    "family": "crag-simple",
    "level": "KS",
}
LOOKUP = {
    "tool": "finance_get_ticker_by_name",
    "arguments": {"query": "Cormel Labs"},
    "observation": "CORME",
}


def test_a_made_up_identifier_is_misuse():
    """A ticker no observation or the question showed is misuse of the call that carries it,
    though the tool answered it; one the lookup returned is not."""

    def cap(ticker):
        return {
            "tool": "finance_get_market_capitalization",
            "arguments": {"ticker": ticker},
            "observation": "1.2e9",
        }

    made_up = _episode("1.0", [LOOKUP, cap("CORMEL")], env="crag")
    assert _label(made_up, _task(**CAP)) == "TE"
    assert made_up.error_cause == "TE:misuse:unknown_id"
    given = _episode("1.0", [LOOKUP, cap("CORME")], env="crag")
    assert _label(given, _task(**CAP)) == "RE"


# --- context overflow, the model service ------------------------------------------------------


def test_context_overflow_is_a_halt_re_or_ge_after_the_evidence():
    overflow = ("llm_error", "request exceeds the context window (4096 tokens)")
    assert _label(_episode(None, [PAPER, NOTHING], *overflow)) == "RE"
    assert _label(_episode(None, [PAPER, AUTHOR], *overflow)) == "GE"
    assert _label(_episode(None, [PAPER, NOTHING], "llm_error", "HTTP 500 after retries")) == "ME"


# --- direct -----------------------------------------------------------------------------------


def test_direct_has_no_scratchpad_right_is_am_wrong_is_re():
    assert _label(_episode(GOLD, [], workflow="direct")) == "AM"
    assert _label(_episode("MIT", [], workflow="direct")) == "RE"


# --- the strict reading is a named column, never the label ------------------------------------


def test_the_strict_reading_is_stored_beside_the_label():
    traj = _episode(None, [PAPER, REFUSED, NOTHING], "step_limit")
    score_trajectory(traj, _task())
    assert (traj.error_type.value, traj.error_cause) == ("RE", "RE:step_budget")
    assert (traj.strict_error_type.value, traj.strict_error_cause) == (
        "TE",
        "TE:step_budget:bad_arguments",
    )
    again = Trajectory.model_validate_json(traj.model_dump_json())
    assert again.strict_error_type == traj.strict_error_type
