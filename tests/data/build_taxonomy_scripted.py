"""Build ``taxonomy_scripted.jsonl``: trajectories of scripted agents that fail in known ways,
each with the label the paper's definitions give it (docs/taxonomy.md) and why.

The expected labels are written here from the definitions, not computed by raleval's
taxonomy: ``tests/test_taxonomy_validation.py`` checks raleval against them.
Run ``python tests/data/build_taxonomy_scripted.py`` to rebuild the file.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

START = datetime(2026, 1, 1, tzinfo=timezone.utc).isoformat()
AGENT = {"workflow": "react", "model": "scripted/known-failure", "env": "scholar"}
SEARCH = {"tool": "searchPerson", "arguments": {"name": "Ada Lin"}}
EVIDENCE = {**SEARCH, "observation": '[{"person_id": "p1", "name": "Ada Lin", "num_pubs": 17}]'}
NOTHING = {**SEARCH, "observation": "No person found."}
COUNT_TASK = {
    "id": "count",
    "domain": "scholar",
    "level": "KS",
    "family": "1-3",
    "question": "How many papers has Ada Lin published?",
    "answers": ["17"],
    "answer_type": "count",
}
# stop reason -> (termination, cause); external stops are faults outside the agent's control
STOPS = {
    "answered": ("finished", None),
    "step_budget": ("step_limit", None),
    "time_budget": ("timeout", "wall_clock"),
    "token_budget": ("context_limit", "token_budget"),
    "cost_budget": ("cost_limit", "cost_budget"),
    "context_overflow": ("context_limit", "context_window"),
    "tool_failure": ("tool_fault", "backend_exception:OSError"),
    "model_failure": ("llm_error", "backend_error"),
    "unparseable_output": ("invalid_format", "3_consecutive_parse_errors"),
    "program_error": ("program_error", "KeyError"),
    "policy_violation": ("program_error", "sandbox denied open()"),
    "harness_failure": ("harness_error", "RuntimeError: bug"),
}
EXTERNAL = {"tool_failure", "model_failure", "harness_failure"}
BUDGETS = {"step_budget", "time_budget", "token_budget", "cost_budget", "context_overflow"}
# the stop is itself improper use
MISUSE_STOPS = {"unparseable_output", "program_error", "policy_violation"}
HARNESS = {"time_budget", "context_overflow"}


def expected(correct: bool, evidence: bool, stop: str, misuse: bool) -> tuple[str, str]:
    """The paper's definitions (R-Eval section 3.4), as the codebook settles them
    (docs/taxonomy.md). ``misuse``: improper use interrupted the retrieval (every call from the
    first invalid one on was invalid); one incidental invalid call among valid ones is not."""
    if correct:
        return (
            ("EM", "matches the gold, and a tool returned it")
            if evidence
            else (
                "AM",
                "matches the gold, but no tool returned it: from memory",
            )
        )
    if evidence:  # the paper asks about the scratchpad first, about interruption after
        return "GE", "wrong although a tool returned the gold"
    if stop in EXTERNAL:
        return "ME", f"wrong, and the episode was interrupted by a fault outside the agent ({stop})"
    if stop in MISUSE_STOPS:
        return "TE", f"wrong, no evidence, interrupted by improper use of the tool ({stop})"
    if misuse:
        return "TE", "wrong, no evidence, and every call from the first invalid one on was invalid"
    if stop in BUDGETS:
        return "RE", f"wrong, no evidence, only valid calls until the retrieval halted ({stop})"
    return "RE", "wrong, no evidence, the retrieval ran to the end without interruption"


def step(i: int, **fields) -> dict:
    return {"index": i, **fields}


def traj(task_id: str, answer, stop: str, steps: list[dict], workflow: str = "react") -> dict:
    term, cause = STOPS[stop]
    return {
        "task_id": task_id,
        "agent": {**AGENT, "workflow": workflow},
        "answer": answer,
        "termination": term,
        "termination_cause": cause,
        "steps": [step(i, **s) for i, s in enumerate(steps)],
        "started_at": START,
        "wall_time_s": 1.0,
    }


def cases() -> list[dict]:
    out = []
    # every stop reason x correct/wrong x evidence/no evidence
    for stop in STOPS:
        for correct in (True, False):
            for evidence in (True, False):
                steps = [EVIDENCE if evidence else NOTHING]
                if stop == "unparseable_output":
                    steps.append({"kind": "parse_error", "cause": "invalid_format"})
                label, reason = expected(correct, evidence, stop, False)
                out.append(
                    {
                        "name": f"{stop}/{'correct' if correct else 'wrong'}/"
                        f"{'evidence' if evidence else 'no-evidence'}",
                        "task": COUNT_TASK,
                        "trajectory": traj("count", "17" if correct else "12", stop, steps),
                        "label": label,
                        "harness_limit": stop in HARNESS,
                        "reason": reason,
                    }
                )
    # misuse is TE in every workflow: unknown tool, bad arguments, a made-up id, a wrong tool
    misuses = {
        "unknown_tool": {"tool": "getPaper", "arguments": {}, "kind": "misuse",
                         "cause": "unknown_tool", "observation": "Unknown tool 'getPaper'."},
        "bad_arguments": {"tool": "searchPerson", "arguments": {"nme": "Ada"}, "kind": "misuse",
                          "cause": "bad_arguments", "observation": "searchPerson: unknown nme"},
        "unknown_id": {"tool": "getPersonPubs", "arguments": {"person_id": "p999"},
                       "observation": "No publication found."},
        "unparsed_plan": {"kind": "parse_error", "cause": "invalid_plan",
                          "observation": "The plan held no function call."},
    }  # fmt: skip
    for wf in ("react", "planned", "pal", "function_calling", "dfsdt"):
        for name, bad in misuses.items():
            label, reason = expected(False, False, "answered", True)
            out.append(
                {
                    "name": f"misuse/{wf}/{name}",
                    "task": COUNT_TASK,
                    "trajectory": traj("count", "12", "answered", [NOTHING, bad], wf),
                    "label": label,
                    "harness_limit": False,
                    "reason": f"{reason}: {name}",
                }
            )
            # one incidental invalid call, then a valid one: the retrieval was not interrupted
            label, reason = expected(False, False, "answered", False)
            out.append(
                {
                    "name": f"incidental-misuse/{wf}/{name}",
                    "task": COUNT_TASK,
                    "trajectory": traj("count", "12", "answered", [bad, NOTHING], wf),
                    "label": label,
                    "harness_limit": False,
                    "reason": f"{reason}; one incidental invalid call ({name}) among valid ones",
                }
            )
    # misuse, then a budget stop: TE when misuse dominated (every call from the first invalid
    # one on), RE when one incidental invalid call was followed by valid calls to the budget
    for stop in sorted(BUDGETS):
        for name, steps, misuse in (
            ("misuse-then-budget", [NOTHING, misuses["bad_arguments"]], True),
            ("incidental-misuse-then-budget", [misuses["bad_arguments"], NOTHING], False),
        ):
            label, reason = expected(False, False, stop, misuse)
            out.append(
                {
                    "name": f"{name}/{stop}",
                    "task": COUNT_TASK,
                    "trajectory": traj("count", None, stop, steps),
                    "label": label,
                    "harness_limit": stop in HARNESS,
                    "reason": f"{reason}; the budget stopped it afterwards",
                }
            )
    # a computed answer is grounded only when every value it reads was seen
    compare = {
        "id": "compare",
        "domain": "crag/finance",
        "level": "KA",
        "family": "crag-comparison",
        "question": "Which has the larger market cap, Nolo Labs or Vexa Corp?",
        "answers": ["Vexa Corp"],
        "answer_type": "entity",
        "evidence": ["1250000000.0", "3400000000.0"],
    }
    cap = "finance_get_market_capitalization"
    nolo = {"tool": cap, "arguments": {"ticker": "NOLO"}, "observation": "1250000000.0"}
    vexa = {"tool": cap, "arguments": {"ticker": "VEXA"}, "observation": "3400000000.0"}
    for name, steps, label, reason in (
        ("computed/both-values", [nolo, vexa], "EM", "right, and both market caps were seen"),
        ("computed/one-value", [nolo], "AM",
         "right, but only one of the two market caps it compares was seen: not grounded"),
    ):  # fmt: skip
        out.append(
            {
                "name": name,
                "task": compare,
                "trajectory": traj("compare", "Vexa Corp", "answered", steps),
                "label": label,
                "harness_limit": False,
                "reason": reason,
            }
        )
    # a misused call, then the evidence: GE; then the right answer: EM
    for answer, label, reason in (
        ("12", "GE", "wrong although a tool returned the gold; the earlier misuse recovered"),
        ("17", "EM", "right and grounded; the earlier misuse recovered"),
    ):
        out.append(
            {
                "name": f"misuse-then-evidence/{label}",
                "task": COUNT_TASK,
                "trajectory": traj(
                    "count", answer, "answered", [misuses["bad_arguments"], EVIDENCE]
                ),
                "label": label,
                "harness_limit": False,
                "reason": reason,
            }
        )
    # invalid premise: a correct "invalid question" with no tool call is AM, with one EM
    premise = {
        "id": "fp",
        "domain": "crag/finance",
        "level": "KS",
        "family": "crag-false-premise",
        "question": "What dividend did Nolo Labs pay in 1850?",
        "answers": ["invalid question"],
        "answer_type": "invalid_premise",
        "tags": {"question_type": "false_premise"},
    }
    lookup = {"tool": "finance_get_ticker_by_name", "arguments": {"query": "Nolo Labs"},
              "observation": "null"}  # fmt: skip
    for name, answer, steps, label, reason in (
        ("invalid/no-call", "invalid question", [], "AM",
         "right rejection, but no tool was asked: the premise was never checked"),
        ("invalid/checked", "The premise is false.", [lookup], "EM",
         "right rejection after looking the company up"),
        ("invalid/idk", "I don't know", [lookup], "GE",
         "CRAG: 'I don't know' is missing, not the rejection; the empty lookup showed it"),
        ("invalid/answered", "0.52 USD", [lookup], "GE",
         "answered a false premise although the lookup found no such company"),
        ("invalid/idk-no-call", "I don't know", [], "RE",
         "missing, and nothing was looked up: the retrieval never started"),
    ):  # fmt: skip
        out.append(
            {
                "name": name,
                "task": premise,
                "trajectory": traj("fp", answer, "answered", steps),
                "label": label,
                "harness_limit": False,
                "reason": reason,
            }
        )
    # titles holding abstention words are answers; an abstention is not
    album = {
        "id": "album",
        "domain": "crag/music",
        "level": "KS",
        "family": "crag-simple",
        "question": "What was Joy Division's debut album?",
        "answers": ["Unknown Pleasures"],
        "answer_type": "entity",
    }
    obs = {"tool": "music_get_artist_all_works", "arguments": {"artist_name": "Joy Division"},
           "observation": '["Unknown Pleasures", "Closer"]'}  # fmt: skip
    for name, answer, steps, label, reason in (
        ("title/grounded", "Unknown Pleasures", [obs], "EM", "the title is the gold, retrieved"),
        ("title/memory", "Unknown Pleasures", [], "AM", "the title is the gold, no tool call"),
        ("title/abstain", "Unknown.", [obs], "GE", "abstained although the tool returned it"),
        ("title/other", "Closer", [obs], "GE", "another album from the same observation"),
    ):
        out.append(
            {
                "name": name,
                "task": album,
                "trajectory": traj("album", answer, "answered", steps),
                "label": label,
                "harness_limit": False,
                "reason": reason,
            }
        )
    # a list named in part is wrong
    interests = {
        "id": "interests",
        "domain": "scholar",
        "level": "KS",
        "family": "1-3",
        "question": "What are the research interests of Ada Lin?",
        "answers": ["compilers, databases, robotics"],
        "answer_type": "list",
    }
    got = {"tool": "getPersonInterest", "arguments": {"person_id": "p1"},
           "observation": '["compilers", "databases", "robotics"]'}  # fmt: skip
    found = {**EVIDENCE}
    for name, answer, label, reason in (
        ("list/all", "robotics; databases and compilers", "EM", "every element, any order"),
        ("list/one", "compilers", "GE", "one element of three: not the answer"),
    ):
        out.append(
            {
                "name": name,
                "task": interests,
                "trajectory": traj("interests", answer, "answered", [found, got]),
                "label": label,
                "harness_limit": False,
                "reason": reason,
            }
        )
    return out


def main() -> None:
    path = Path(__file__).with_name("taxonomy_scripted.jsonl")
    lines = [json.dumps(c, sort_keys=True) for c in cases()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{len(lines)} cases -> {path}")


if __name__ == "__main__":
    main()
