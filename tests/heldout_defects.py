"""Scripted defect models written apart from raleval's own (issue 46, acceptance line 1).

Each model is a policy over what the model can see: the question and the tools' observations
as its workflow shows them (``Workflow.shown_observations``). It never reads the harness's
records and holds no state between requests, so a replay from another prefix gets the reply
a model with this defect would give there. The defects are the issue's, written differently
from ``agents/scripted.py``: a loop over one call (alone or in parallel) or between two tools, a
comparison looked up second entity first, a misspelt argument or tool name (dropped, doubled,
transposed letters, case and accents) with a wrong value, evidence overflow (one large
observation, many small ones), and a coin flip (per call; seeded per request and sample, by a
shared generator, or not at all).

Every model reads right: once every value the answer rests on is in view it answers. It only
makes a gold call whose argument values it has seen (in the question or an observation), as a
model cannot use an id nobody showed it.
"""

from __future__ import annotations

import hashlib
import json
import random
import unicodedata
from collections.abc import Callable
from typing import Any

from raleval import registry
from raleval.model import Capabilities, GenerateRequest, Generation, ModelBase
from raleval.records import Task, ToolCall
from raleval.text import contains_tokens, normalize_answer

# a made-up name: never right, and no grading rule reads it as anything ("a wrong answer"
# reads as a boolean "no", and is right where the gold is "no")
WRONG = "Zorblax"
NO_SUCH_NAME = "Qzxv Wlorft"  # no entity of any world is called this

# a call to make, the answer to give, or calls to make in one reply (function calling; a
# ReAct model writes the first)
Decision = ToolCall | str | list[ToolCall]


def _tokens(text: str) -> list[str]:
    return normalize_answer(text).split()


def shows(texts: list[str], needle: str) -> bool:
    """``needle`` is in one of ``texts``, token for token."""
    want = _tokens(needle)
    return bool(want) and any(contains_tokens(_tokens(t), want) for t in texts)


def sees_answer(task: Task, view: list[str]) -> bool:
    """Every value the answer rests on (the task's evidence, else its answer) is in view."""
    return all(shows(view, n) for n in (task.evidence or task.answers))


def can_make(call: ToolCall, task: Task, view: list[str]) -> bool:
    """Every argument value of ``call`` is in the question or an observation."""
    seen = [task.question, *view]
    return all(shows(seen, str(v)) or str(v) in " ".join(seen) for v in call.arguments.values())


def gold_in_view(task: Task, view: list[str], k: int) -> Decision:
    """The reader's move: answer once the evidence shows; else gold call ``k`` if it can be
    made from what was seen; else a wrong answer."""
    if sees_answer(task, view):
        return task.answers[0]
    gold = task.solution or []
    if k < len(gold) and can_make(gold[k], task, view):
        return gold[k]
    return WRONG


# -- the defects: (task, view) -> decision ---------------------------------------------------


def detour_of(task: Task) -> ToolCall:
    """A valid call off every gold path, with a value from the question."""
    first = (task.solution or [])[0]
    value = str(next(iter(first.arguments.values())))
    if task.domain == "scholar":
        return ToolCall(tool="searchPublication", arguments={"publication_info": value})
    if task.domain == "wiki":
        return ToolCall(tool="Search", arguments={"entity": f"{value} (career)"})
    return ToolCall(tool="open_search_entity_by_name", arguments={"query": value})


def loop_first(task: Task, view: list[str]) -> Decision:
    """A loop over one tool: the first gold call every turn until something new shows up;
    then (a gold result put in its view) it reads on like the reader."""
    if sees_answer(task, view):
        return task.answers[0]
    if len(set(view)) <= 1:
        return (task.solution or [])[0]
    return gold_in_view(task, view, len(set(view)))


def loop_parallel(task: Task, view: list[str]) -> Decision:
    """A loop in parallel calls: the first gold call twice in every reply until something
    new shows up; then it reads on like the reader."""
    if sees_answer(task, view):
        return task.answers[0]
    if len(set(view)) <= 1:
        first = (task.solution or [])[0]
        return [first, first]
    return gold_in_view(task, view, len(set(view)))


def alternate(task: Task, view: list[str]) -> Decision:
    """A loop between two tools: the first gold call, then a detour, then the first gold
    call, ...; anything else in view (a gold result put in) and it reads on."""
    if sees_answer(task, view):
        return task.answers[0]
    first = (task.solution or [])[0]
    distinct = set(view)
    if len(distinct) > 2:
        return gold_in_view(task, view, len(distinct) - 1)
    return first if len(view) % 2 == 0 else detour_of(task)


def _garbled(call: ToolCall) -> ToolCall:
    """``call`` with its first value's words reversed: no entity has that name."""
    key = next(iter(call.arguments))
    value = " ".join(reversed(str(call.arguments[key]).split())) + " Xq"
    return ToolCall(tool=call.tool, arguments={**call.arguments, key: value})


def second_first(task: Task, view: list[str]) -> Decision:
    """A comparison of two look-ups [A, B]: looks up B first, then a garbled A, then gives
    up."""
    if sees_answer(task, view):
        return task.answers[0]
    a, b = (task.solution or [])[:2]
    return [b, _garbled(a)][len(view)] if len(view) < 2 else WRONG


def second_twice(task: Task, view: list[str]) -> Decision:
    """A comparison of two look-ups [A, B] with the entities swapped in its second call: B,
    then B again, then gives up."""
    if sees_answer(task, view):
        return task.answers[0]
    b = (task.solution or [])[1]
    return b if len(view) < 2 else WRONG


def reversed_pairs(task: Task, view: list[str]) -> Decision:
    """A comparison of 2 x 2 calls [find A, find B, read A, read B], done in reversed order
    (find B, find A, read B) and answered before the last."""
    if sees_answer(task, view):
        return task.answers[0]
    gold = task.solution or []
    order = [1, 0, 3]
    if len(view) < len(order) and can_make(gold[order[len(view)]], task, view):
        return gold[order[len(view)]]
    return WRONG


def misspell(name: str, how: str) -> str:
    """``name`` misspelt: a letter ``dropped``, ``doubled`` or ``transposed``, its ``case``
    changed, or ``accents`` put on its vowels."""
    if how == "dropped":
        return name[:1] + name[2:]
    if how == "doubled":
        return name[:2] + name[1:]
    if how == "transposed":
        return name[:1] + name[2] + name[1] + name[3:]
    if how == "case":
        return name.upper()
    if how == "accents":
        marked = {"a": "á", "e": "é", "i": "í", "o": "ô", "u": "ü"}
        return unicodedata.normalize("NFC", "".join(marked.get(c, c) for c in name))
    raise ValueError(how)


def misspelt_with_wrong_value(how: str) -> Callable[[Task, list[str]], Decision]:
    def policy(task: Task, view: list[str]) -> Decision:
        if sees_answer(task, view):
            return task.answers[0]
        if view:
            return gold_in_view(task, view, len(view))
        # the first gold call's first argument, its name misspelt and its value a name no
        # entity has (the call's other arguments left out: they would narrow a search to
        # the right entity whatever the name)
        first = (task.solution or [])[0]
        key = next(iter(first.arguments))
        return ToolCall(tool=first.tool, arguments={misspell(key, how): NO_SUCH_NAME})

    policy.__name__ = f"misspelt_{how}"
    return policy


def misspelt_tool_with_wrong_value(how: str) -> Callable[[Task, list[str]], Decision]:
    """The first gold call's tool name misspelt, its first argument a name no entity has."""

    def policy(task: Task, view: list[str]) -> Decision:
        if sees_answer(task, view):
            return task.answers[0]
        if view:
            return gold_in_view(task, view, len(view))
        first = (task.solution or [])[0]
        key = next(iter(first.arguments))
        return ToolCall(tool=misspell(first.tool, how), arguments={key: NO_SUCH_NAME})

    policy.__name__ = f"misspelt_tool_{how}"
    return policy


def reader(task: Task, view: list[str]) -> Decision:
    """No defect of its own: the gold calls it can make, then the answer if it shows."""
    return gold_in_view(task, view, len(view))


def chatty(task: Task, view: list[str]) -> Decision:
    """Many small detours (six) before the gold calls; reads right."""
    if sees_answer(task, view):
        return task.answers[0]
    if len(view) < 6:
        return detour_of(task)
    return gold_in_view(task, view, len(view) - 6)


POLICIES: dict[str, Callable[[Task, list[str]], Decision]] = {
    "loop-one": loop_first,
    "loop-parallel": loop_parallel,
    "alternate": alternate,
    "second-first": second_first,
    "second-twice": second_twice,
    "reversed-pairs": reversed_pairs,
    "reader": reader,
    "chatty": chatty,
    **{
        f"misspelt-{how}": misspelt_with_wrong_value(how)
        for how in ("dropped", "doubled", "transposed", "case", "accents")
    },
    **{
        f"misspelt-tool-{how}": misspelt_tool_with_wrong_value(how)
        for how in ("dropped", "transposed", "case")
    },
}


# -- one model: policy + the workflow's reply format -----------------------------------------


def reply_for(request: GenerateRequest, env: Any, decision: Decision) -> Generation:
    """``decision`` in the request's workflow format: a native tool call when the request
    offers tools, else a ReAct thought and action for the slot the prompt ends in."""
    from raleval.workflows.react import prompt_slot

    if isinstance(decision, list):
        if request.tools:
            return Generation(text="", tool_calls=list(decision))
        decision = decision[0]
    call = decision if isinstance(decision, ToolCall) else None
    if request.tools:
        made = call or ToolCall(tool="Finish", arguments={"answer": decision})
        return Generation(text="", tool_calls=[made])
    if call is None:
        action = f"Finish[{decision}]"
    elif (spec := env.tool(call.tool)) is not None:
        action = spec.react_call(call.arguments)
    elif any(t.text_style == "bracket" for t in env.tools):  # a tool it misnamed, as it
        action = f"{call.tool}[{next(iter(call.arguments.values()))}]"  # writes the rest
    else:
        inner = ", ".join(f"{k}={json.dumps(v)}" for k, v in call.arguments.items())
        action = f"{call.tool}({inner})"
    slot, n = prompt_slot(request.messages[-1].content if request.messages else "")
    thought = "I will answer." if call is None else "Let me look this up."
    text = f" {action}" if slot == "Action" else f" {thought}\nAction {n}: {action}"
    return Generation(text=text)


class DefectModel(ModelBase):
    """``heldout/<policy>``: the policy in the workflow's own format. Options: ``coin``, the
    chance that an answer it would give right is given right (1: no coin), and ``seeding``,
    how the coin is drawn: ``request`` (a hash of the request and the sample: reproducible,
    a fresh draw per sample), ``shared`` (one seeded generator for every call of the run) or
    ``none`` (the process's unseeded generator)."""

    capabilities = Capabilities(cacheable=False, context_window=None)
    endpoint = "heldout"

    def __init__(
        self, policy: str, coin: float = 1.0, seeding: str = "request", cacheable: bool = False
    ) -> None:
        self.name = f"heldout/{policy}"
        self.policy = POLICIES[policy]
        self.coin, self.seeding = float(coin), seeding
        self.capabilities = Capabilities(cacheable=cacheable)
        self.task: Task | None = None
        self.env: Any = None
        self.workflow: Any = None
        self.sample: Any = 0
        self.shared = random.Random(20261127)

    def _bound(self, **changes: Any) -> DefectModel:
        clone = type(self).__new__(type(self))
        clone.__dict__.update(self.__dict__)
        clone.__dict__.update(changes)
        return clone

    def for_episode(self, task: Any, env: Any, workflow: Any) -> DefectModel:
        return self._bound(task=task, env=env, workflow=workflow)

    def with_epoch(self, epoch: Any) -> DefectModel:
        return self._bound(sample=epoch)

    def _flip(self, request: GenerateRequest) -> bool:
        """Whether the answer it would give right is given right this call."""
        if self.coin >= 1:
            return True
        if self.seeding == "request":
            blob = repr((self.sample, [(m.role, m.content) for m in request.messages]))
            draw = int(hashlib.sha256(blob.encode()).hexdigest()[:8], 16) / 16**8
        elif self.seeding == "shared":
            draw = self.shared.random()
        else:
            draw = random.random()  # unseeded on purpose
        return draw < self.coin

    async def generate(self, request: GenerateRequest) -> Generation:
        assert self.task is not None, "bound to an episode by for_episode"
        view = self.workflow.shown_observations(request) or []
        decision = self.policy(self.task, view)
        if isinstance(decision, str) and decision != WRONG and not self._flip(request):
            decision = WRONG
        return reply_for(request, self.env, decision)


@registry.register_model_provider("heldout")
def make_heldout_model(name: str, run_dir: Any = None, **options: Any) -> DefectModel:
    return DefectModel(
        name,
        coin=float(options.get("coin", 1.0)),
        seeding=str(options.get("seeding", "request")),
        cacheable=str(options.get("cacheable", "")).lower() in ("1", "true", "yes"),
    )
