"""Labels in R-Eval's order (section 3.4): the scratchpad first (GE whenever the answer or
every value it needs was shown, whatever stopped the episode), interruption after; a PAL
program's answer is grounded only through its data flow, and its misuse is TE."""

from datetime import datetime, timezone

import pytest

from raleval.analysis.programs import answer_reads_tools
from raleval.analysis.scoring import score_trajectory
from raleval.failures import failure_cause
from raleval.records import AgentSpec, Step, Task, Trajectory

AGENT = {"workflow": "react", "model": "m", "env": "wiki"}
QUESTION = "Which organization is the first author of 'Causal Graphs' affiliated with?"
GOLD = "Troulerk State University"
PAPER = Step(
    index=0,
    tool="Search",
    arguments={"entity": "Causal Graphs"},
    observation="Causal Graphs is a 2020 paper by Vel Kamertton and Zyn Thekoumholt.",
)
AUTHOR = Step(
    index=1,
    tool="Search",
    arguments={"entity": "Vel Kamertton"},
    observation=f"Vel Kamertton is a Professor at {GOLD}. She has published 12 papers.",
)


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


def _traj(answer, termination="finished", steps=(), cause=None, workflow="react", **fields):
    return Trajectory(
        task_id="t",
        agent=AgentSpec(**{**AGENT, "workflow": workflow}),
        answer=answer,
        termination=termination,
        termination_cause=cause,
        steps=list(steps),
        started_at=datetime(2026, 1, 1, tzinfo=timezone.utc),
        wall_time_s=1.0,
        **fields,
    )


def _label(traj: Trajectory, task: Task | None = None) -> tuple[str, str]:
    score_trajectory(traj, task or _task())
    return traj.error_type.value, traj.error_cause


def test_a_budget_stop_after_the_answer_was_shown_is_ge():
    """The task names the values its answer reads (here a count's two inputs), but a tool
    showed the answer itself; the agent then looped until the step budget: GE, not
    RE:step_budget (the answer was in the scratchpad; what stopped it comes second)."""
    task = _task(
        question="How many papers have Vel Kamertton and Zyn Thekoumholt published together?",
        answers=["7"],
        answer_type="count",
        evidence=["published 12 papers", "published 9 papers"],
    )
    shown = Step(
        index=0,
        tool="Search",
        arguments={"entity": "Vel Kamertton"},
        observation="Vel Kamertton and Zyn Thekoumholt have written 7 papers together.",
    )
    loop = [
        Step(index=i, tool="Lookup", arguments={"keyword": "x"}, observation="No more results.")
        for i in (1, 2, 3)
    ]
    assert _label(_traj(None, "step_limit", [shown, *loop]), task) == (
        "GE",
        "GE:evidence_ignored",
    )
    # every value it needs, without the answer itself: GE as well
    both = [
        Step(index=0, tool="Search", observation="Vel Kamertton has published 12 papers."),
        Step(index=1, tool="Search", observation="Zyn Thekoumholt has published 9 papers."),
    ]
    assert _label(_traj(None, "step_limit", both), task)[0] == "GE"
    # one of the two values only, and the answer never shown: the budget stop is RE
    assert _label(_traj(None, "step_limit", both[:1]), task) == ("RE", "RE:step_budget")


def test_a_fault_after_the_answer_was_shown_is_ge_and_before_it_me():
    """A tool or model fault that stops an episode after the gold was shown: GE; with no
    evidence it stays ME."""
    assert _label(_traj(None, "tool_fault", [PAPER, AUTHOR], "backend_error"))[0] == "GE"
    assert _label(_traj(None, "llm_error", [PAPER, AUTHOR], "backend_error"))[0] == "GE"
    assert _label(_traj(None, "tool_fault", [PAPER], "backend_error")) == (
        "ME",
        "ME:tool_failure:backend_error",
    )


def test_a_comparison_winner_named_by_the_question_is_not_evidence():
    """Where the task lists the values its answer reads, the winner's name (which the
    question itself names) in an observation is no evidence; yes/no never is."""
    task = _task(
        question="Who has published more papers, Methov Ciakrailton or Hidrart Beinouard?",
        answers=["Methov Ciakrailton"],
        evidence=["published 12 papers", "published 6 papers"],
    )
    one = Step(index=0, tool="Search", observation="Methov Ciakrailton has published 12 papers.")
    assert _label(_traj("Hidrart Beinouard", steps=[one]), task) == ("RE", "RE:wrong_answer")
    yes_no = _task(question="Is toun saellol a kind of thaiswair?", answers=["no"])
    says_no = Step(index=0, tool="Search", observation="No page found. Similar: ['Toun']")
    assert _label(_traj("yes", steps=[says_no]), yes_no) == ("RE", "RE:wrong_answer")


# --- PAL ------------------------------------------------------------------------------------

PROGRAM_CALLS = [PAPER.model_copy(update={"index": 0}), AUTHOR.model_copy(update={"index": 1})]


def _pal(program: str, answer: str | None, termination="finished", cause=None, extra=()):
    steps = [*PROGRAM_CALLS, *extra]
    if termination == "finished":
        steps.append(Step(index=2, thought=program, tool="Finish", arguments={"answer": answer}))
    return _traj(answer, termination, steps, cause, workflow="pal")


def test_a_literal_answer_in_a_pal_program_is_am_when_right():
    """``final_result`` written as a literal reads no tool result: right is AM, though the
    gold appears in an observation; the same answer computed from the result is EM."""
    literal = "r0 = Search(entity='Causal Graphs')\nr1 = Search(entity='Vel Kamertton')\n"
    assert _label(_pal(literal + f"final_result = {GOLD!r}", GOLD)) == ("AM", "AM:from_memory")
    computed = literal + "final_result = r1.split(' at ')[1].split('.')[0]"
    assert _label(_pal(computed, GOLD)) == ("EM", "EM:grounded")
    # wrong after the evidence was returned: GE, literal or computed (the codebook); the strict
    # reading asks the data flow there too, and a literal read nothing (RE)
    wrong = _pal(literal + "final_result = 'MIT'", "MIT")
    assert _label(wrong) == ("GE", "GE:evidence_ignored")
    assert (wrong.strict_error_type.value, wrong.strict_error_cause) == ("RE", "RE:wrong_answer")
    assert _label(_pal(computed, "MIT"))[0] == "GE"


def test_a_pal_program_that_crashed_after_the_evidence_is_ge():
    """The codebook: a program that crashes after the evidence was returned is GE (the
    scratchpad held it); the strict reading, where nothing reached final_result, says TE."""
    crash = Step(
        index=2,
        thought="r0 = Search(entity='Causal Graphs')\nr1 = Search(entity='Vel Kamertton')\n"
        "final_result = r1['organization']",
        kind="misuse",
        cause="program_error:TypeError",
        observation="TypeError: string indices must be integers",
    )
    traj = _pal("", None, "program_error", "TypeError", extra=[crash])
    assert _label(traj) == ("GE", "GE:evidence_ignored")
    assert traj.strict_error_type.value == "TE"
    assert traj.strict_error_cause == "TE:program_error:program_error:TypeError"


def test_a_pal_argument_error_is_te_not_a_harness_failure():
    """As stored before 4bfb0de: the tool refused the program's call and the refusal escaped as
    a harness error. The model misused the tool: TE, and the episode counts in the scores."""
    refused = (
        "Invalid arguments for searchPublication: organization: Extra inputs are not "
        "permitted. Usage: searchPublication(publication_info=...)"
    )
    step = Step(
        index=0,
        tool="searchPublication",
        arguments={"publication_info": "Krim", "organization": "University of Riyerk"},
        observation=refused,
        kind="misuse",
        cause="bad_arguments",
    )
    traj = _traj(
        None,
        "harness_error",
        [step],
        f"RuntimeError: {refused}",
        workflow="pal",
        failure="harness_error",
    )
    assert failure_cause(traj) is None
    kind, cause = _label(traj)
    assert kind == "TE" and cause.startswith("TE:program_error"), cause
    # a harness error of the harness's own stays an infrastructure failure
    other = _traj(None, "harness_error", [step], "RuntimeError: boom", failure="harness_error")
    assert failure_cause(other) == "harness_error"


@pytest.mark.parametrize(
    ("program", "reads"),
    [
        ("r0 = Search(entity='x')\nfinal_result = 'yes'", False),
        ("final_result = 'yes'\nr0 = Search(entity='x')", False),
        ("x = 3\nfinal_result = str(x)", False),
        ("r0 = Search(entity='x')\nfinal_result = str(len('abc'))", False),
        ("r0 = Search(entity='x')\nfinal_result = r0", True),
        (
            "r0 = Search(entity='x')\nif 'American' in r0:\n    final_result = 'yes'\n"
            "else:\n    final_result = 'no'",
            True,
        ),
        ("def g(n):\n    return Search(entity=n)\nfinal_result = g('a')", True),
        (
            "res = []\nfor n in ['a', 'b']:\n    res.append(Search(entity=n))\n"
            "final_result = len(res)",
            True,
        ),
        ("final_result = [Search(entity=n) for n in ['a']]", True),
        ("r0 = Search(entity='x')\nfinal_result = f'{r0}'", True),
    ],
)
def test_data_flow_from_tool_calls_to_final_result(program, reads):
    assert answer_reads_tools(program, ["Search"]) is reads


# --- made-up identifiers, by what the tool declares ------------------------------------------


def _crag(steps, answer="null"):
    task = _task(
        question="What is the market capitalization of Pellius Foods in USD?",
        answers=["393042320000.0"],
        answer_type="number",
        domain="crag",
        family="crag-simple",
        level="KS",
    )
    traj = _traj(answer, steps=steps)
    traj.agent = AgentSpec(workflow="react", model="m", env="crag")
    return _label(traj, task)


def test_a_made_up_crag_ticker_is_te_though_it_is_not_named_id():
    """CRAG's ``ticker`` is declared a key from an earlier result (not by an ``_id`` name): one
    that no observation or the question held, answered null, is TE."""
    made_up = Step(
        index=0,
        tool="finance_get_market_capitalization",
        arguments={"ticker": "PELLIUS"},
        observation="null",
    )
    assert _crag([made_up]) == ("TE", "TE:misuse:unknown_id")
    # the ticker an earlier search returned is not made up: a wrong answer, RE
    found = Step(
        index=0,
        tool="finance_get_ticker_by_name",
        arguments={"query": "Pellius Foods"},
        observation="PELF",
    )
    looked_up = made_up.model_copy(update={"index": 1, "arguments": {"ticker": "PELF"}})
    assert _crag([found, looked_up]) == ("RE", "RE:wrong_answer")
    # a ticker that only stands inside a longer word of an earlier result was not given by it
    partial = made_up.model_copy(update={"index": 1, "arguments": {"ticker": "PEL"}})
    assert _crag([found, partial])[0] == "TE"


def test_declared_references_come_from_the_tools():
    from raleval.analysis.references import declared_references

    crag = declared_references("crag")
    assert crag["finance_get_eps"] == ("ticker",)
    assert crag["sports_nba_get_play_by_play_data_by_game_ids"] == ("game_ids",)
    assert "finance_get_ticker_by_name" not in crag  # a search takes a name, not a key
    assert declared_references("scholar")["getCoauthors"] == ("person_id",)
    assert declared_references("wiki") == {}
    assert declared_references("no-such-env") == {}


@pytest.mark.parametrize(
    "program",
    [
        "final_result = " + "(" * 20000 + "1" + ")" * 20000,  # deeper than the parser goes
        "if r0:\n" + "".join(" " * i + "if r0:\n" for i in range(1, 400)) + " " * 400 + "x=1",
        "final_result = 'a'\x00",
        "r0 = Search(entity='x')\nfinal_result = r0" + "\n" * 100_000,
    ],
)
def test_hostile_programs_leave_the_labeller_unharmed(program):
    """A stored program nested past the parser's depth, or holding a NUL byte: the data-flow
    check answers (taken as reading the tools where it cannot tell) and raises nothing."""
    assert answer_reads_tools(program, ["Search"]) in (True, False)
    step = Step(index=0, thought=program, tool="Finish", arguments={"answer": "x"})
    kind, _ = _label(_traj("x", steps=[PAPER, step], workflow="pal"))
    assert kind in ("RE", "GE")
