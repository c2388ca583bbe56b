"""Fresh scripted defect models, served over HTTP (issue 63, item 9).

Written from the issue's list of defects before reading the fixes' tests or the earlier
held-out models' expectations. Each model is a policy over what a model is shown: the
question and the observations its workflow put in the request (``shown_observations``). It
holds no state between requests (apart from a nondeterministic server's draws), so a replay
from another prefix gets the reply a model with this defect would give there.

The policies are served by :class:`DefectServer`, a chat-completions server on 127.0.0.1
that raleval reaches through its ordinary ``openai-compatible`` provider, with the response
cache and the tool-call ids a real server gives. The server counts the requests it answers,
so a test can check what a second ``diagnose --fresh`` sends.

Every policy reads right (it answers once every value the answer rests on is in view) and
makes only calls whose values it has seen, except where its defect is to do otherwise.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from raleval.records import Task
from raleval.text import contains_tokens, normalize_answer

WRONG = "Vexquor Plimb"  # a made-up answer: no grading rule reads it as right
NO_ONE = "Glumph Traxwiddle"  # a name no entity of any world has
MADE_UP_ID = "53f4deadbeef0000cafe0000"  # an id no observation shows


@dataclass(frozen=True)
class Call:
    """A call as the model writes it: ``raw`` replaces the JSON arguments (malformed JSON);
    ``positional`` writes a ReAct call's values without their names."""

    tool: str
    arguments: dict[str, Any] = field(default_factory=dict)
    raw: str | None = None
    positional: bool = False


Decision = str | Call | list[Call]  # an answer, a call, or several calls in one reply
Policy = Callable[[Task, list[str]], Decision]


def _tokens(text: str) -> list[str]:
    return normalize_answer(text).split()


def shows(texts: list[str], needle: str) -> bool:
    want = _tokens(needle)
    return bool(want) and any(contains_tokens(_tokens(t), want) for t in texts)


def sees_answer(task: Task, view: list[str]) -> bool:
    """Every value the answer rests on (the task's evidence, else its answers) is in view."""
    return all(shows(view, n) for n in (task.evidence or task.answers))


def can_make(args: dict[str, Any], task: Task, view: list[str]) -> bool:
    seen = [task.question, *view]
    return all(shows(seen, str(v)) or str(v) in " ".join(seen) for v in args.values())


def failed(observation: str) -> bool:
    """An observation that says a call found nothing or was refused."""
    text = observation.casefold()
    return "not found" in text or text.startswith(("no ", "error")) or MADE_UP_ID in text


def gold(task: Task) -> list[Any]:
    return list(task.solution or [])


def as_call(c: Any) -> Call:
    return Call(c.tool, dict(c.arguments))


def reader_move(task: Task, view: list[str], k: int) -> Decision:
    """Answer once the evidence shows; else gold call ``k`` if its values were seen; else a
    wrong answer."""
    if sees_answer(task, view):
        return task.answers[0]
    g = gold(task)
    if k < len(g) and can_make(g[k].arguments, task, view):
        return as_call(g[k])
    return WRONG


# -- the policies ------------------------------------------------------------------------------


def reader(task: Task, view: list[str]) -> Decision:
    """No defect: the gold calls it can make, then the answer."""
    return reader_move(task, view, len(view))


def never_right(task: Task, view: list[str]) -> Decision:
    """Makes the gold calls, then always answers wrong: nothing fixes it."""
    move = reader_move(task, view, len(view))
    return WRONG if isinstance(move, str) else move


def parallel_made_up_id(task: Task, view: list[str]) -> Decision:
    """A two-call solution [find, read(id)]: finds, then in one reply reads with the right id
    and again with a made-up one; an error in view confuses it (a wrong answer)."""
    g = gold(task)
    if any(failed(v) for v in view[1:]):
        return WRONG
    if sees_answer(task, view):
        return task.answers[0]
    if not view:
        return as_call(g[0])
    if len(view) == 1 and can_make(g[1].arguments, task, view):
        (key,) = list(g[1].arguments)
        return [as_call(g[1]), Call(g[1].tool, {key: MADE_UP_ID})]
    return WRONG


def skip_lookup(task: Task, view: list[str]) -> Decision:
    """A comparison [Search A, Lookup k, Search B, Lookup k]: Search A, Search B, then one
    Lookup (on B's page); then it answers with what it has (wrong)."""
    if sees_answer(task, view):
        return task.answers[0]
    g = gold(task)
    order = [g[0], g[2], g[3]]
    if len(view) < len(order):
        return as_call(order[len(view)])
    return WRONG


def swapped_positional(task: Task, view: list[str]) -> Decision:
    """The first gold call (two or more values) with its first two values swapped, written
    positionally in ReAct (``searchPerson("MIT", "Ada Lin")``) or under each other's names in
    native calls; a result that does not show the answer and it answers wrong."""
    if sees_answer(task, view):
        return task.answers[0]
    if view:
        return WRONG
    first = gold(task)[0]
    keys = list(first.arguments)
    values = [first.arguments[k] for k in keys]
    values[0], values[1] = values[1], values[0]
    return Call(first.tool, dict(zip(keys, values, strict=True)), positional=True)


def malformed(value_of: Callable[[Task], str]) -> Policy:
    def policy(task: Task, view: list[str]) -> Decision:
        """The first gold call with its JSON arguments cut short (no closing quote and
        brace), holding ``value_of(task)``; then the reader."""
        if sees_answer(task, view):
            return task.answers[0]
        if view:
            return (
                reader_move(task, view, len(view))
                if any(shows(view, str(v)) for v in gold(task)[0].arguments.values())
                else WRONG
            )
        first = gold(task)[0]
        key = next(iter(first.arguments))
        return Call(first.tool, raw=json.dumps({key: value_of(task)})[:-2])

    return policy


def budget_reader(task: Task, view: list[str]) -> Decision:
    """The reader, on a comparison whose gold calls do not fit ``max_steps``."""
    return reader_move(task, view, len(view))


def give_up_after_three(task: Task, view: list[str]) -> Decision:
    """A perfect reader that gives up after three calls."""
    if sees_answer(task, view):
        return task.answers[0]
    if len(view) >= 3:
        return WRONG
    return reader_move(task, view, len(view))


def look_alike(tools: dict[str, list[str]]) -> Policy:
    def policy(task: Task, view: list[str]) -> Decision:
        """The first gold call, then the tool whose name looks most like the second gold
        call's and takes the same arguments (same values: a valid call), then it answers
        with what it has."""
        from rapidfuzz import fuzz, process

        if sees_answer(task, view):
            return task.answers[0]
        g = gold(task)
        if not view:
            return as_call(g[0])
        if len(view) == 1 and can_make(g[1].arguments, task, view):
            names = sorted(g[1].arguments)
            others = [n for n, params in tools.items() if n != g[1].tool and params == names]
            if not others:
                return WRONG
            name = process.extractOne(g[1].tool, others, scorer=fuzz.ratio)[0]
            return Call(name, dict(g[1].arguments))
        return WRONG

    return policy


def first_listed(task: Task, view: list[str]) -> Decision:
    """Searches by name alone, takes the first person the search lists, and reads that
    person's record; it answers from what it read after the search (wrong when the first
    listed is a namesake)."""
    import re

    g = gold(task)
    if len(view) > 1 and sees_answer(task, view[1:]):
        return task.answers[0]
    if not view:
        return Call(g[0].tool, {"name": g[0].arguments["name"]})
    ids = re.findall(r"[0-9a-f]{24}", view[0])
    if len(view) == 1 and ids:
        key = next(iter(g[1].arguments))
        return Call(g[1].tool, {key: ids[0]})
    return WRONG


def made_up_tool(task: Task, view: list[str]) -> Decision:
    """Calls a tool that does not exist first; an error in view and it gives up."""
    if sees_answer(task, view):
        return task.answers[0]
    if not view:
        first = gold(task)[0]
        return Call("lookupEverything", {"query": str(next(iter(first.arguments.values())))})
    if any("lookupEverything" in v for v in view):
        return WRONG
    return reader_move(task, view, len(view))


def truncated_id(task: Task, view: list[str]) -> Decision:
    """A two-call solution: the second call with the id it saw cut short (an id no
    observation showed); an error in view and it gives up."""
    if sees_answer(task, view):
        return task.answers[0]
    g = gold(task)
    if not view:
        return as_call(g[0])
    if len(view) == 1:
        key, value = next(iter(g[1].arguments.items()))
        if shows(view, str(value)):
            return Call(g[1].tool, {key: str(value)[:-4]})
    return WRONG


def detour_then_quit(task: Task, view: list[str]) -> Decision:
    """The first gold call, then a search for a name nobody has, then it gives up."""
    if sees_answer(task, view):
        return task.answers[0]
    g = gold(task)
    if not view:
        return as_call(g[0])
    if len(view) == 1:
        key = next(iter(g[0].arguments))
        return Call(g[0].tool, {key: NO_ONE})
    return WRONG


def wrong_keyword(task: Task, view: list[str]) -> Decision:
    """A page's Search, then a Lookup of a keyword the page does not hold, then gives up."""
    if sees_answer(task, view):
        return task.answers[0]
    g = gold(task)
    if not view:
        return as_call(g[0])
    if len(view) == 1:
        return Call("Lookup", {"keyword": "Xyzzy award"})
    return WRONG


def coin_reader(task: Task, view: list[str]) -> Decision:
    """The reader; the server flips its answer (``DefectServer.coin``)."""
    return reader_move(task, view, len(view))


def policies(tools: dict[str, list[str]]) -> dict[str, Policy]:
    """Every policy by name (``tools``: the environment's tools and their parameters, for
    the look-alike)."""
    return {
        "reader": reader,
        "never-right": never_right,
        "parallel-made-up-id": parallel_made_up_id,
        "skip-lookup": skip_lookup,
        "swapped-positional": swapped_positional,
        "malformed-wrong-value": malformed(lambda t: NO_ONE),
        "malformed-right-value": malformed(
            lambda t: str(next(iter(gold(t)[0].arguments.values())))
        ),
        "budget-comparison": budget_reader,
        "give-up-after-three": give_up_after_three,
        "look-alike": look_alike(tools),
        "first-listed": first_listed,
        "made-up-tool": made_up_tool,
        "truncated-id": truncated_id,
        "detour-then-quit": detour_then_quit,
        "wrong-keyword": wrong_keyword,
        "coin-t0": coin_reader,
        "tight-window": reader,
    }


# -- the server --------------------------------------------------------------------------------


def _arguments(raw: Any) -> dict[str, Any]:
    """A call's arguments as a server would read its own earlier reply (malformed: kept raw)."""
    try:
        value = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return {"_raw": raw}
    return value if isinstance(value, dict) else {"_raw": value}


def to_request(body: dict[str, Any]) -> Any:
    from raleval.model import GenerateRequest, Message
    from raleval.records import ToolCall

    messages = []
    for m in body["messages"]:
        calls = tuple(
            ToolCall(tool=c["function"]["name"], arguments=_arguments(c["function"]["arguments"]))
            for c in m.get("tool_calls") or []
        )
        ids = tuple(c.get("id") or "" for c in m.get("tool_calls") or [])
        messages.append(
            Message(m["role"], m.get("content") or "", calls, m.get("tool_call_id"), ids)
        )
    return GenerateRequest(messages=tuple(messages), tools=tuple(body.get("tools") or ()))


def _react_text(call: Call | None, answer: str, env: Any, prompt: str) -> str:
    from raleval.workflows.react import prompt_slot

    if call is None:
        action = f"Finish[{answer}]"
    else:
        spec = env.tool(call.tool)
        if spec is not None and spec.text_style == "bracket":
            action = f"{call.tool}[{next(iter(call.arguments.values()))}]"
        elif call.positional:
            action = f"{call.tool}({', '.join(json.dumps(v) for v in call.arguments.values())})"
        else:
            inner = ", ".join(f"{k}={json.dumps(v)}" for k, v in call.arguments.items())
            action = f"{call.tool}({inner})"
    slot, n = prompt_slot(prompt)
    thought = "I will answer." if call is None else "Let me look this up."
    return f" {action}" if slot == "Action" else f" {thought}\nAction {n}: {action}"


def _completion(text: str | None, calls: list[dict[str, Any]]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = calls
    return {
        "id": "chatcmpl-fresh",
        "object": "chat.completion",
        "created": 0,
        "model": "fresh",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


class DefectServer:
    """Serves the policy a request's ``model`` names, for the task of ``run_dir`` whose
    question the request asks. ``coin``: the chance a right answer is given right (a
    nondeterministic server at temperature 0: the same request twice may get two answers;
    the draw is a hash of the request and how many times it was asked, so runs repeat)."""

    def __init__(self, run_dir: Path, env: Any, workflow: Any, coin: float = 1.0) -> None:
        self.run_dir, self.env, self.workflow, self.coin = Path(run_dir), env, workflow, coin
        self.policies = policies({t.name: sorted(t.param_names) for t in env.tools})
        self.requests = 0
        self.seen: dict[str, int] = {}
        self.lock = threading.Lock()
        self._tasks: list[Task] | None = None
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                payload = json.dumps(server.answer(body)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def task_of(self, body: dict[str, Any]) -> Task:
        from raleval.store import TASKS, read_tasks

        if self._tasks is None:
            self._tasks = read_tasks(self.run_dir / TASKS)
        text = "\n".join(
            m.get("content") or "" for m in body["messages"] if m.get("role") in ("system", "user")
        )
        asked = [(text.rfind(t.question), len(t.question), t) for t in self._tasks
                 if t.question in text]  # fmt: skip
        return max(asked, key=lambda a: (a[0], a[1]))[2]

    def _flip(self, body: dict[str, Any]) -> bool:
        """Whether a right answer is given right this time."""
        if self.coin >= 1:
            return True
        blob = json.dumps(body["messages"], sort_keys=True)
        with self.lock:
            n = self.seen.get(blob, 0)
            self.seen[blob] = n + 1
        draw = int(hashlib.sha256(f"{n}:{blob}".encode()).hexdigest()[:8], 16) / 16**8
        return draw < self.coin

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            self.requests += 1
        task = self.task_of(body)
        request = to_request(body)
        view = self.workflow.shown_observations(request) or []
        decision = self.policies[body["model"]](task, view)
        if isinstance(decision, str) and decision != WRONG and not self._flip(body):
            decision = WRONG
        if not request.tools:
            call = decision[0] if isinstance(decision, list) else decision
            prompt = body["messages"][-1].get("content") or ""
            if isinstance(call, Call):
                return _completion(_react_text(call, "", self.env, prompt), [])
            return _completion(_react_text(None, str(call), self.env, prompt), [])
        calls = decision if isinstance(decision, list) else [decision]
        if isinstance(decision, str):
            calls = [Call("Finish", {"answer": decision})]
        # ids as a server makes them, but from the request (so that runs repeat exactly)
        stem = hashlib.sha256(json.dumps(body["messages"]).encode()).hexdigest()[:10]
        out = []
        for j, c in enumerate(calls):
            arguments = c.raw if c.raw is not None else json.dumps(c.arguments)
            out.append({
                "id": f"call_{stem}{j}",
                "type": "function",
                "function": {"name": c.tool, "arguments": arguments},
            })  # fmt: skip
        return _completion(None, out)

    def __enter__(self) -> DefectServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
