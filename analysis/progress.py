"""Progress rate (AgentBoard): the share of a task's subgoals an episode reached.

AgentBoard (Ma et al., 2024) scores an episode by how many of its task's subgoals the agent
completed, the best matching score over its turns, so that an agent that got halfway scores
0.5 where success rate says 0. raleval's subgoals are the gold solution's calls, each written
as the key values its result holds (``raleval.tasks.subgoals``, stored with the task). A
subgoal is reached when every one of its key values appears in an observation the agent saw
(token-aligned, after answer normalisation), or when the agent made that very gold call and
it succeeded. Solutions whose steps are independent (comparisons, sets) are credited in any
order; a step that depends on earlier ones (an argument found by an earlier call, as
``analysis/calls.py`` decides) counts only once every step before it is reached: the same
rule (``calls.ready``) that call matching and the departure point apply. Because
observations only accumulate, the final share is AgentBoard's maximum over turns.

Pure: reads records only.
"""

from __future__ import annotations

from raleval.analysis.calls import FINISH_TOOLS, GoldPaths, call_keys, gold_of, ready
from raleval.records import OutcomeKind, Task, Trajectory
from raleval.text import contains_tokens, normalize_answer

SUBGOALS = "subgoals"  # Task.metadata key written by raleval.tasks.subgoals


def reached_subgoals(
    traj: Trajectory, task: Task, gold: GoldPaths | None = None
) -> list[bool] | None:
    """Per gold call, whether the episode reached its subgoal; None without stored subgoals.
    ``gold`` is ``gold_of(task)`` when the caller has it already."""
    subgoals = task.metadata.get(SUBGOALS)
    calls = list(task.solution or [])
    if not calls or not isinstance(subgoals, list) or len(subgoals) != len(calls):
        return None
    gold = gold or gold_of(task)  # the solution is its first path
    seen: list[list[str]] | None = None  # the observations' tokens, read when needed
    # keyed as call matching keys them: a Lookup with the page it read
    calls = [s for s in traj.steps if s.tool is not None and s.tool not in FINISH_TOOLS]
    keys = call_keys([(s.tool, s.arguments) for s in calls])
    made = {k for s, k in zip(calls, keys, strict=True) if s.kind is OutcomeKind.ok}
    ordered = gold.orders[0]
    reached: list[bool] = []
    for i, (key, values) in enumerate(zip(gold.keys[0], subgoals, strict=True)):
        hit = key in made
        if not hit:
            if seen is None:
                seen = [normalize_answer(s.observation).split() for s in traj.steps
                        if s.observation and s.tool not in FINISH_TOOLS]  # fmt: skip
            wanted = [normalize_answer(str(v)).split() for v in values]
            wanted = [w for w in wanted if w]
            hit = bool(wanted) and all(any(contains_tokens(o, w) for o in seen) for w in wanted)
        reached.append(hit and ready(reached, ordered, i))
    return reached


def progress_rate(traj: Trajectory, task: Task, gold: GoldPaths | None = None) -> float | None:
    """The share of the task's subgoals the episode reached (None without subgoals)."""
    reached = reached_subgoals(traj, task, gold)
    if not reached:
        return None
    return sum(reached) / len(reached)
