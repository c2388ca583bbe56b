# ruff: noqa: E501  (the hand labels: one reason a line, keys are cell/task/epoch)
"""Draw, render and write ``taxonomy_fresh.jsonl``: real study episodes raleval's labels were
never tuned on, labelled by hand (issue 45).

1. ``python tests/data/build_taxonomy_fresh.py sample`` draws the episodes: from the stored
   study cells (``studies/local-models``; only episodes that count in scores), seed 1445,
   10 per workflow, taken in turn from each of the workflow's sources (the generated scholar,
   wiki and CRAG sets, HotpotQA dev, CRAG dev pages) so every source a workflow ran on is
   drawn; episodes already in a labelled set (``grading/real_answers.jsonl`` by cell, task and
   epoch; ``taxonomy_real.jsonl`` by model, workflow, environment and task) are left out, and
   so are tasks whose gold is not an answer (CRAG dev's 'nan', which the loaders now refuse).
2. ``... render`` prints each drawn episode for labelling: task, golds, every step (thought,
   call, observation, kind, cause), termination and answer; never raleval's scores or label.
3. Labels and reasons were written by hand in :data:`HAND` from the rendering alone;
   ``... write`` stores ``taxonomy_fresh.jsonl`` (task, trajectory without its stored scores,
   label, reason, cell) for ``tests/test_taxonomy_fresh.py``.
4. ``... sample heldout`` (and ``render heldout``, ``write heldout``): a second draw (seed
   2445, 3 per workflow, none of the first), labelled the same way after the rules the first
   set brought were written: ``taxonomy_heldout.jsonl``.
5. ``... sample second`` (``render second``, ``write second``): 42 episodes of the second
   study's cells (``studies/local-models-2``, every arm; seed 5959, 7 per workflow), none
   whose model, workflow, environment and task an earlier labelled set holds (the second
   study re-ran some of the first study's tasks with the same models), labelled blind by the
   codebook (``../shared/taxonomy-codebook.md``, issue 59): ``taxonomy_second.jsonl``.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STUDIES = ROOT / "studies"
WORKFLOWS = ("direct", "planned", "react", "function_calling", "pal", "dfsdt")
# draw -> (seed, episodes per workflow, file, study). "heldout" was drawn and labelled after
# the rules the "fresh" set brought were written, to measure them on episodes they were not
# made on; it leaves out the fresh episodes too. "second" is drawn from the second study and
# leaves out every episode (by model, workflow, environment, task) of the sets before it.
DRAWS = {
    "fresh": (1445, 10, "taxonomy_fresh.jsonl", "local-models"),
    "heldout": (2445, 3, "taxonomy_heldout.jsonl", "local-models"),
    "second": (5959, 7, "taxonomy_second.jsonl", "local-models-2"),
}


def _source(cell: str) -> str:
    """A cell's task source, arm included (``matched-4000__crag__pal__...``)."""
    *arm, env, _, _, tasks = cell.split("__")
    return ":".join([*arm, env, tasks])


def _excluded() -> tuple[set, set]:
    answers = ROOT / "grading" / "real_answers.jsonl"
    by_cell = {
        (r["run"], r["task_id"], r["epoch"])
        for r in map(json.loads, answers.read_text().splitlines())
    }
    by_agent = set()
    for name in ("taxonomy_real.jsonl", "taxonomy_fresh.jsonl", "taxonomy_heldout.jsonl"):
        path = Path(__file__).with_name(name)
        if name != "taxonomy_real.jsonl" and not path.exists():
            continue  # drawing the set itself
        for line in path.read_text().splitlines():
            t = json.loads(line)["trajectory"]
            a = t["agent"]
            by_agent.add((a["model"], a["workflow"], a["env"], t["task_id"]))
    return by_cell, by_agent


def _excluded_real() -> set:
    real = Path(__file__).with_name("taxonomy_real.jsonl")
    out = set()
    for line in real.read_text().splitlines():
        t = json.loads(line)["trajectory"]
        a = t["agent"]
        out.add((a["model"], a["workflow"], a["env"], t["task_id"]))
    return out


def sample(draw: str = "fresh") -> list[tuple[str, str, int]]:
    """(cell, task id, epoch) of the episodes of ``draw``, in a fixed order."""
    from raleval.analysis.runs import find_runs, load_run
    from raleval.grading.freetext import is_answer

    seed, per_workflow, _, study = DRAWS[draw]
    by_cell, by_agent = _excluded()
    if draw == "heldout":
        by_cell |= set(sample("fresh"))
    if draw != "second":
        # the first draws were made before the later sets existed: only taxonomy_real counts
        by_agent = _excluded_real()
    pools: dict[str, dict[str, list]] = {w: {} for w in WORKFLOWS}
    for path in find_runs([STUDIES / study]):
        run = load_run(path)
        for t in run.scored:
            a = t.agent
            if not all(is_answer(g) for g in run.tasks[t.task_id].answers):
                continue
            if (path.name, t.task_id, t.epoch) in by_cell:
                continue
            if (a.model, a.workflow, a.env, t.task_id) in by_agent:
                continue
            src = _source(path.name)
            pools[a.workflow].setdefault(src, []).append((path.name, t.task_id, t.epoch))
    rng = random.Random(seed)
    drawn = []
    for w in WORKFLOWS:
        queues = []
        for src in sorted(pools[w]):
            items = sorted(pools[w][src])
            rng.shuffle(items)
            queues.append(items)
        picked: list = []
        while len(picked) < per_workflow and any(queues):
            for q in queues:
                if q and len(picked) < per_workflow:
                    picked.append(q.pop())
        drawn.extend(picked)
    return drawn


def _episodes(draw: str):
    from raleval.analysis.runs import load_run

    runs: dict = {}
    for cell, task_id, epoch in sample(draw):
        study = STUDIES / DRAWS[draw][3]
        run = runs.get(cell) or runs.setdefault(cell, load_run(study / cell))
        traj = next(t for t in run.results if t.task_id == task_id and t.epoch == epoch)
        yield cell, run.tasks[task_id], traj


def render(draw: str = "fresh", limit: int = 1500) -> None:
    for n, (cell, task, traj) in enumerate(_episodes(draw)):
        print(f"==== #{n} {cell} {task.id} e{traj.epoch}")
        print(f"Q: {task.question}")
        print(f"GOLD: {task.answers} type={task.answer_type} elements={task.elements}")
        print(f"EVIDENCE: {task.evidence} answerable={task.tags.answerable}")
        for s in traj.steps:
            print(f"  [{s.index}] kind={s.kind.value} cause={s.cause} tool={s.tool}")
            if s.thought:
                print(f"      thought: {s.thought[:limit]!r}")
            if s.arguments:
                print(f"      args: {json.dumps(s.arguments)[:limit]}")
            if s.observation:
                print(f"      obs: {s.observation[:limit]!r}")
        print(f"  END {traj.termination.value} cause={traj.termination_cause}")
        print(f"  ANSWER: {traj.answer!r}")


# cell/task/epoch -> (label, reason), written from the rendering before raleval's labels were read
HAND: dict[str, tuple[str, str]] = {
    "crag__direct__local_qwen2.5-0.5b__crag-kg/crag-simple-s0-0001/0": (
        "RE",
        "no tools; answered RME, gold ROM",
    ),
    "scholar__direct__local_smollm2-135m__scholar/scholar-1-3-s0-0003/0": (
        "RE",
        "no tools; answered 7 publications, gold 4",
    ),
    "wiki__direct__local_qwen2.5-0.5b__hotpotqa-dev-a248973a/3-1-5a8b57f25542995d1e6f1371/0": (
        "RE",
        "no tools; said different nationalities, gold yes",
    ),
    "wiki__direct__local_qwen2.5-0.5b__wiki/wiki-3-1-s0-0000/0": (
        "RE",
        "no tools; named another state university",
    ),
    "crag__direct__local_qwen2.5-0.5b__crag-kg/crag-multihop-s0-0004/0": (
        "RE",
        "no tools; Indonesia, gold Sweden",
    ),
    "scholar__direct__local_qwen2.5-0.5b__scholar/scholar-2-4-s0-0001/0": (
        "RE",
        "no tools; answered 'Ph.D.', not an institution",
    ),
    "wiki__direct__local_smollm2-135m__hotpotqa-dev-a248973a/3-1-5a85b2d95542997b5ce40028/0": (
        "RE",
        "no tools; answered the stage name itself",
    ),
    "wiki__direct__local_qwen2.5-1.5b__wiki/wiki-1-1-s0-0001/0": (
        "RE",
        "no tools; a made-up university, gold another",
    ),
    "crag__direct__local_qwen2.5-0.5b__crag-kg/crag-aggregation-s0-0002/0": (
        "RE",
        "no tools; 10 Grammys, gold 3",
    ),
    "scholar__direct__local_qwen2.5-0.5b__scholar/scholar-2-4-s0-0002/0": (
        "RE",
        "no tools; 2010, gold 1993",
    ),
    "crag__planned__local_smollm2-135m__crag-kg/crag-comparison-s0-0002/0": (
        "TE",
        "the plan held no function call; then named the wrong person",
    ),
    "scholar__planned__local_smollm2-135m__scholar/scholar-1-3-s0-0004/0": (
        "TE",
        "the plan held no function call; answer restates the question",
    ),
    "wiki__planned__local_smollm2-135m__hotpotqa-dev-a248973a/3-1-5abd94525542992ac4f382d2/0": (
        "TE",
        "the plan held no function call; answer restates the question",
    ),
    "wiki__planned__local_qwen2.5-0.5b__wiki/wiki-3-2-s0-0002/0": (
        "RE",
        "two valid searches, neither showed a doctorate year; abstained",
    ),
    "crag__planned__local_smollm2-135m__crag-kg/crag-multihop-s0-0001/0": (
        "TE",
        "two calls to a tool that does not exist; answered a date from the call's argument",
    ),
    "scholar__planned__local_qwen2.5-0.5b__scholar/scholar-1-3-s0-0003/0": (
        "RE",
        "valid publication search on the whole phrase; the count 4 never shown; abstained",
    ),
    "wiki__planned__local_qwen2.5-0.5b__hotpotqa-dev-a248973a/3-1-5a877e5d5542993e715abf7d/0": (
        "GE",
        "search failed; the gold appears in its did-you-mean list; abstained. Re-adjudicated by the codebook (issue 59): a failed search's suggestions are scratchpad, so GE (was RE)",
    ),
    "wiki__planned__local_smollm2-135m__wiki/wiki-3-3-s0-0003/0": (
        "TE",
        "the plan held no function call; wrong venue",
    ),
    "crag__planned__local_smollm2-135m__crag-kg/crag-false-premise-s0-0001/0": (
        "TE",
        "finance tools for an Oscar question, the movie's name passed as a ticker (null); answered a made-up date (debatable: RE if a name from the question counts as a ticker)",
    ),
    "scholar__planned__local_smollm2-135m__scholar/scholar-2-4-s0-0003/0": (
        "TE",
        "the plan held no function call; wrong answer",
    ),
    "crag__react__local_smollm2-135m__crag-kg/crag-postproc-s0-0003/0": (
        "TE",
        "first a finance lookup for a sports game, then the same call with an argument the tool does not take until the step budget",
    ),
    "scholar__react__local_qwen2.5-0.5b__scholar/scholar-2-4-s0-0000/0": (
        "EM",
        "profile showed position Assistant Professor; answered it",
    ),
    "wiki__react__local_smollm2-135m__hotpotqa-dev-a248973a/3-1-5a87ab905542996e4f3088c1/0": (
        "RE",
        "search showed the arena's name but never its capacity; answered the team's name",
    ),
    "wiki__react__local_qwen2.5-0.5b__wiki/wiki-3-3-s0-0004/0": (
        "GE",
        "search showed Zata Douciarez is a Ph.D Student; answered the author's name instead",
    ),
    "crag__react__local_smollm2-135m__crag-kg/crag-false-premise-s0-0002/0": (
        "AM",
        "said 'invalid question' rightly, but its only checks were an unknown tool and a finance ticker lookup (null) for a football club: nothing about the match (debatable: EM if any successful call counts as checking the premise)",
    ),
    "scholar__react__local_qwen2.5-0.5b__scholar/scholar-1-3-s0-0003/0": (
        "RE",
        "publication search on the whole phrase, the person's count never shown; answered 10",
    ),
    "wiki__react__local_qwen2.5-0.5b__hotpotqa-dev-a248973a/3-1-5a7166395542994082a3e814/0": (
        "RE",
        "search failed (suggestions only); answered the university, not its fight song",
    ),
    "wiki__react__local_qwen2.5-0.5b__wiki/wiki-2-2-s0-0000/0": (
        "GE",
        "search said thairmais are coarse; answered no",
    ),
    "crag__react__local_qwen2.5-0.5b__crag-kg/crag-postproc-s0-0001/0": (
        "TE",
        "passed the movie's name (recased) as a ticker to finance price tools (null); answered 1.00",
    ),
    "scholar__react__local_qwen2.5-1.5b__scholar/scholar-1-3-s0-0000/0": (
        "EM",
        "search showed num_citation 0; answered 0",
    ),
    "crag__function_calling__local_qwen2.5-0.5b__crag-kg/crag-false-premise-s0-0000/0": (
        "AM",
        "wrote 'invalid question' in the same turn as its calls, before any result, and the dividend check got the name, not the ticker TAS it had just been given (debatable: EM if any successful call counts as checking the premise)",
    ),
    "scholar__function_calling__local_smollm2-135m__scholar/scholar-3-5-s0-0000/0": (
        "RE",
        "answered at once without any call; a made-up title",
    ),
    "wiki__function_calling__local_qwen2.5-0.5b__hotpotqa-dev-a248973a/3-1-5a87ab905542996e4f3088c1/0": (
        "TE",
        "search failed, then Lookup with no current page (refused) until the step budget",
    ),
    "wiki__function_calling__local_smollm2-135m__wiki/wiki-3-3-s0-0000/0": (
        "RE",
        "answered at once without any call; wrong position",
    ),
    "crag__function_calling__local_qwen2.5-0.5b__crag-kg/crag-simple-s0-0000/0": (
        "RE",
        "got the ticker CORME, then passed the company name as the ticker (null) again and again, between valid lookups, until the step budget. Re-adjudicated by the codebook (issue 59): not every call from the first misuse on was invalid (the lookups were valid) and a budget ended it: RE (was TE; the strict column keeps TE)",
    ),
    "scholar__function_calling__local_smollm2-135m__scholar/scholar-1-3-s0-0000/0": (
        "GE",
        "search showed num_citation 0; answered 2 (its num_pubs)",
    ),
    "wiki__function_calling__local_qwen2.5-0.5b__hotpotqa-dev-a248973a/3-1-5adbf0a255429947ff17385a/0": (
        "TE",
        "search failed, then Lookup with no current page (refused) until the step budget",
    ),
    "wiki__function_calling__local_qwen2.5-0.5b__wiki/wiki-3-1-s0-0000/0": (
        "TE",
        "called a tool named after the paper (unknown) until the step budget",
    ),
    "crag__function_calling__local_smollm2-135m__crag-kg/crag-simple-s0-0000/0": (
        "TE",
        "got the ticker CORME, then passed the company name as the ticker (null); answered an essay on null",
    ),
    "scholar__function_calling__local_qwen2.5-0.5b__scholar/scholar-3-5-s0-0000/0": (
        "TE",
        "called a tool named after a paper title (unknown) until the step budget",
    ),
    "crag-pages__pal__local_smollm2-135m__crag-dev-f8fbbbc9/crag-1645bfaf-c829-43ba-ba37-096b7676258c/0": (
        "TE",
        "the program was prose, not Python (SyntaxError): nothing ran",
    ),
    "crag__pal__local_smollm2-135m__crag-kg/crag-comparison-s0-0003/0": (
        "TE",
        "the program was a sentence, not Python (SyntaxError)",
    ),
    "scholar__pal__local_smollm2-135m__scholar/scholar-3-5-s0-0002/0": (
        "TE",
        "the program redefined the tools' stubs and did not parse (SyntaxError)",
    ),
    "wiki__pal__local_smollm2-135m__hotpotqa-dev-a248973a/3-1-5a87ab905542996e4f3088c1/0": (
        "TE",
        "the program was a sentence, not Python (SyntaxError)",
    ),
    "wiki__pal__local_qwen2.5-0.5b__wiki/wiki-3-2-s0-0002/0": (
        "RE",
        "valid calls showed only one of the two doctorate years (1995); final_result a literal naming the wrong person",
    ),
    "crag-pages__pal__local_smollm2-135m__crag-dev-f8fbbbc9/crag-f8fc2c1a-4bcb-48be-857c-1b0dcf07034e/0": (
        "TE",
        "the program was prose, not Python (SyntaxError)",
    ),
    "crag__pal__local_qwen2.5-0.5b__crag-kg/crag-comparison-s0-0002/0": (
        "TE",
        "the program called a tool that does not exist (NameError)",
    ),
    "scholar__pal__local_qwen2.5-0.5b__scholar/scholar-3-5-s0-0004/0": (
        "TE",
        "passed a person_id no result had given, then read a key the records lack (KeyError)",
    ),
    "wiki__pal__local_smollm2-135m__hotpotqa-dev-a248973a/3-1-5a8db19d5542994ba4e3dd00/0": (
        "TE",
        "the program was a sentence, not Python (SyntaxError)",
    ),
    "wiki__pal__local_qwen2.5-0.5b__wiki/wiki-1-2-s0-0000/0": (
        "TE",
        "Lookup before any Search, refused inside the program (RuntimeError)",
    ),
    "crag__dfsdt__local_smollm2-135m__crag-kg/crag-multihop-s0-0000/0": (
        "TE",
        "no reply held a function call until the query budget",
    ),
    "scholar__dfsdt__local_smollm2-135m__scholar/scholar-2-4-s0-0000/0": (
        "TE",
        "no reply held a function call until the query budget",
    ),
    "wiki__dfsdt__local_smollm2-135m__hotpotqa-dev-a248973a/3-1-5ab3b0bf5542992ade7c6e39/0": (
        "TE",
        "no reply held a function call until the query budget",
    ),
    "wiki__dfsdt__local_qwen2.5-0.5b__wiki/wiki-3-4-s0-0000/0": (
        "RE",
        "answered 11 at once without any call; gold 55",
    ),
    "crag__dfsdt__local_smollm2-135m__crag-kg/crag-set-s0-0000/0": (
        "TE",
        "no reply held a function call until the query budget",
    ),
    "scholar__dfsdt__local_smollm2-135m__scholar/scholar-3-5-s0-0000/0": (
        "TE",
        "no reply held a function call until the query budget",
    ),
    "wiki__dfsdt__local_smollm2-135m__hotpotqa-dev-a248973a/3-1-5a8db19d5542994ba4e3dd00/0": (
        "TE",
        "no reply held a function call until the query budget",
    ),
    "wiki__dfsdt__local_qwen2.5-0.5b__wiki/wiki-1-2-s0-0000/0": (
        "GE",
        "search showed he is at Zador Institute of Technology; then looped Lookup and never answered",
    ),
    "crag__dfsdt__local_qwen2.5-0.5b__crag-kg/crag-multihop-s0-0000/0": (
        "TE",
        "company-name lookups, then music search with an argument the tool does not take; EPS never shown; gave up",
    ),
    "scholar__dfsdt__local_qwen2.5-0.5b__scholar/scholar-3-5-s0-0000/0": (
        "TE",
        "the same valid searchPerson eight times, then 52 replies ('Finish') that held no function call until the query budget (first labelled RE from a display that hid those steps; corrected after the comparison)",
    ),
    # the held-out draw, labelled after the rules the fresh set brought
    "crag__direct__local_smollm2-135m__crag-kg/crag-false-premise-s0-0003/0": (
        "RE",
        "no tools; answered a height for a place that has none (gold: invalid question)",
    ),
    "scholar__direct__local_qwen2.5-0.5b__scholar/scholar-1-3-s0-0003/0": (
        "RE",
        "no tools; answered 10, gold 4",
    ),
    "wiki__direct__local_smollm2-135m__hotpotqa-dev-a248973a/3-1-5a877e5d5542993e715abf7d/0": (
        "RE",
        "no tools; named the actor, not the screenwriter",
    ),
    "crag__planned__local_smollm2-135m__crag-kg/crag-condition-s0-0004/0": (
        "TE",
        "the plan held no function call; answer repeats the question",
    ),
    "scholar__planned__local_qwen2.5-0.5b__scholar/scholar-2-4-s0-0002/0": (
        "RE",
        "found the person but never read the profile; made-up doctorate year 2014",
    ),
    "wiki__planned__local_qwen2.5-0.5b__hotpotqa-dev-a248973a/3-1-5ab3b0bf5542992ade7c6e39/0": (
        "RE",
        "search failed (suggested titles only); abstained",
    ),
    "crag__react__local_qwen2.5-0.5b__crag-kg/crag-condition-s0-0004/0": (
        "TE",
        "ticker lookup for a river (null), then a price history for ticker NIX no result had given; answered 187",
    ),
    "scholar__react__local_qwen2.5-0.5b__scholar/scholar-3-5-s0-0004/0": (
        "RE",
        "read the papers (the top one's pub_id) but never fetched its PDF link; answered a made-up title",
    ),
    "wiki__react__local_qwen2.5-0.5b__hotpotqa-dev-a248973a/3-1-5a7bbb64554299042af8f7cc/0": (
        "EM",
        "right; Annie Morton's page was read and names the gold Terry Richardson (as her photographer). Re-adjudicated by the codebook (issue 59): containment, not attribution, so EM (was AM)",
    ),
    "crag__function_calling__local_smollm2-135m__crag-kg/crag-set-s0-0000/0": (
        "RE",
        "answered at once without any call; an essay about another company",
    ),
    "scholar__function_calling__local_smollm2-135m__scholar/scholar-2-4-s0-0000/0": (
        "RE",
        "answered at once without any call; wrong position",
    ),
    "wiki__function_calling__local_qwen2.5-0.5b__hotpotqa-dev-a248973a/3-1-5a8db19d5542994ba4e3dd00/0": (
        "TE",
        "Lookup with arguments it does not take, again and again until the step budget",
    ),
    "crag-pages__pal__local_smollm2-135m__crag-dev-f8fbbbc9/crag-6a9a6e0f-82fb-4302-806e-a49ef6b35a66/0": (
        "TE",
        "the program was prose, not Python (SyntaxError)",
    ),
    "crag__pal__local_qwen2.5-0.5b__crag-kg/crag-postproc-s0-0001/0": (
        "TE",
        "ticker lookup null, then price history for ticker VLT no result had given; the program then raised (TypeError)",
    ),
    "scholar__pal__local_qwen2.5-0.5b__scholar/scholar-3-5-s0-0002/0": (
        "TE",
        "the program was '(End of example)', not Python (SyntaxError)",
    ),
    "crag__dfsdt__local_smollm2-135m__crag-kg/crag-comparison-s0-0000/0": (
        "TE",
        "no reply held a function call until the query budget",
    ),
    "scholar__dfsdt__local_qwen2.5-0.5b__scholar/scholar-2-4-s0-0000/0": (
        "TE",
        "unknown tools, bad arguments and replies with no function call until the query budget",
    ),
    "wiki__dfsdt__local_smollm2-135m__hotpotqa-dev-a248973a/3-1-5a877e5d5542993e715abf7d/0": (
        "TE",
        "no reply held a function call until the query budget",
    ),
    # the second study's draw (issue 59), labelled blind by the codebook
    "crag__direct__local_qwen2.5-1.5b__crag-kg/crag-aggregation-s0-0011/0": (
        "RE",
        "no tools; answered 2, gold 5",
    ),
    "matched-4000__crag__direct__local_qwen2.5-0.5b__crag-kg/crag-simple-s0-0016/0": (
        "RE",
        "no tools; answered 10, gold 100",
    ),
    "matched-4000__scholar__direct__local_qwen2.5-0.5b__scholar/scholar-2-4-s0-0018/0": (
        "RE",
        "no tools; answered 2005, gold 2014",
    ),
    "matched-4000__wiki__direct__local_qwen2.5-0.5b__wiki/wiki-3-4-s0-0018/0": (
        "RE",
        "no tools; answered 10, gold 64",
    ),
    "scholar__direct__local_qwen2.5-0.5b__scholar/scholar-1-3-s0-0014/0": (
        "RE",
        "no tools; answered 10, gold 4",
    ),
    "wiki__direct__local_smollm2-135m__wiki/wiki-2-1-s0-0016/0": (
        "RE",
        "no tools; answered No, gold yes",
    ),
    "crag__direct__local_qwen2.5-1.5b__crag-kg/crag-aggregation-s0-0019/0": (
        "RE",
        "no tools; answered 3, gold 0",
    ),
    "crag__planned__local_qwen2.5-0.5b__crag-kg/crag-aggregation-s0-0009/0": (
        "RE",
        "three valid artist searches returned other names or nothing, no country shown; abstained",
    ),
    "matched-4000__crag__planned__local_qwen2.5-0.5b__crag-kg/crag-comparison-s0-0016/0": (
        "TE",
        "every call (movie info with 'title' for 'query') refused; then abstained: misuse dominated",
    ),
    "matched-4000__scholar__planned__local_qwen2.5-0.5b__scholar/scholar-3-5-s0-0019/0": (
        "RE",
        "one valid call (a paper title passed to searchPerson: no person found), count never shown; abstained",
    ),
    "matched-4000__wiki__planned__local_qwen2.5-0.5b__wiki/wiki-1-1-s0-0018/0": (
        "TE",
        "its only call, Lookup before any Search, was refused; then abstained",
    ),
    "scholar__planned__local_qwen2.5-0.5b__scholar/scholar-3-5-s0-0012/0": (
        "RE",
        "found the person (num_pubs 3), the 2010 paper never shown; abstained",
    ),
    "wiki__planned__local_qwen2.5-0.5b__wiki/wiki-2-1-s0-0005/0": (
        "RE",
        "the page shows one of the two kinds the task reads ('kind of bralzaind'); yes/no never counts as shown; abstained",
    ),
    "crag__planned__local_qwen2.5-0.5b__crag-kg/crag-aggregation-s0-0011/0": (
        "GE",
        "person info showed all five acted movies (the evidence); abstained",
    ),
    "crag__react__local_qwen2.5-1.5b__crag-kg/crag-simple-s0-0003/0": (
        "EM",
        "birth place returned Toronto, Ontario; answered it",
    ),
    "matched-4000__crag__react__local_qwen2.5-0.5b__crag-kg/crag-set-s0-0017/0": (
        "RE",
        "song search returned another title; answered that title, not the five songs",
    ),
    "matched-4000__scholar__react__local_qwen2.5-0.5b__scholar/scholar-1-3-s0-0019/0": (
        "GE",
        "search returned all six interests (the gold); answered 42 (the citation count)",
    ),
    "matched-4000__wiki__react__local_qwen2.5-0.5b__wiki/wiki-1-1-s0-0018/0": (
        "GE",
        "the page says Associate Professor; answered the academy instead",
    ),
    "sampled-t0.7__crag__react__local_qwen2.5-0.5b__crag-kg/crag-set-s0-0002/2": (
        "RE",
        "song search returned another title; answered it",
    ),
    "sampled-t0.7__scholar__react__local_qwen2.5-0.5b__scholar/scholar-2-4-s0-0008/2": (
        "EM",
        "basic info returned position Researcher; answered it",
    ),
    "sampled-t0.7__wiki__react__local_qwen2.5-0.5b__wiki/wiki-2-2-s0-0016/2": (
        "EM",
        "the page says bro paevquin is nocturnal (the evidence); answered yes",
    ),
    "crag__function_calling__local_qwen2.5-0.5b__crag-kg/crag-comparison-s0-0012/0": (
        "RE",
        "valid calls for birth places (not dates), then for 'Toronto, Ontario' and 'null' as artist names (names, not keys) until the step budget; no birth date seen",
    ),
    "matched-4000__crag__function_calling__local_qwen2.5-0.5b__crag-kg/crag-false-premise-s0-0005/0": (
        "RE",
        "one valid call to a Grammy tool, then the token budget; nothing about the Oscar",
    ),
    "matched-4000__scholar__function_calling__local_qwen2.5-0.5b__scholar/scholar-2-4-s0-0008/0": (
        "RE",
        "no calls; answered a made-up profile saying Engineer",
    ),
    "matched-4000__wiki__function_calling__local_qwen2.5-0.5b__wiki/wiki-3-4-s0-0004/0": (
        "TE",
        "every call (Lookup with extra arguments) refused until the token budget",
    ),
    "scholar__function_calling__local_qwen2.5-0.5b__scholar/scholar-1-3-s0-0003/0": (
        "TE",
        "every call (searchPublication with an object for a string) refused until the step budget",
    ),
    "wiki__function_calling__local_qwen2.5-0.5b__wiki/wiki-1-1-s0-0006/0": (
        "TE",
        "every call (Lookup with an extra argument) refused until the step budget",
    ),
    "crag__function_calling__local_qwen2.5-0.5b__crag-kg/crag-set-s0-0001/0": (
        "TE",
        "every call (movie info by id given a title) refused until the context window filled: misuse dominated",
    ),
    "crag__pal__local_qwen2.5-0.5b__crag-kg/crag-false-premise-s0-0017/0": (
        "TE",
        "ticker lookup returned null, then the program called a tool that does not exist (NameError) before any evidence",
    ),
    "matched-4000__crag__pal__local_qwen2.5-0.5b__crag-kg/crag-multihop-s0-0000/0": (
        "EM",
        "ticker CORL then EPS 2.96 returned; final_result = str(r1) reads it",
    ),
    "matched-4000__scholar__pal__local_qwen2.5-0.5b__scholar/scholar-3-5-s0-0012/0": (
        "TE",
        "the program was '(End of example)', not Python (SyntaxError)",
    ),
    "matched-4000__wiki__pal__local_qwen2.5-0.5b__wiki/wiki-3-4-s0-0004/0": (
        "TE",
        "the program's Lookup before any Search was refused and raised; nothing retrieved",
    ),
    "scholar__pal__local_qwen2.5-0.5b__scholar/scholar-1-3-s0-0019/0": (
        "GE",
        "searchPerson returned all six interests (the gold), then the program crashed reading a field that does not exist (KeyError): crash after the evidence",
    ),
    "wiki__pal__local_qwen2.5-0.5b__wiki/wiki-3-2-s0-0019/0": (
        "RE",
        "both paper pages read (authors, not their organizations); the yes/no gold never counts as shown; wrote a literal 'Tavon Framework'",
    ),
    "crag__pal__local_qwen2.5-0.5b__crag-kg/crag-simple-s0-0006/0": (
        "TE",
        "lookup returned HO, the program then passed HOLD (never shown: made up) to market cap; wrote a literal wrong value: the only call after the misuse was the misuse",
    ),
    "crag__dfsdt__local_qwen2.5-0.5b__crag-kg/crag-set-s0-0002/0": (
        "RE",
        "valid song searches returning another title, again and again; the tree exhausted without an answer",
    ),
    "matched-4000__crag__dfsdt__local_qwen2.5-0.5b__crag-kg/crag-simple-s0-0005/0": (
        "RE",
        "one valid call (birth place: null), then the token budget",
    ),
    "matched-4000__scholar__dfsdt__local_qwen2.5-0.5b__scholar/scholar-3-5-s0-0006/0": (
        "GE",
        "search returned Bouzourt Neiru's record, organization Dousheil Academy of Sciences (the gold string, containment not attribution); then a reply with no function call and the token budget",
    ),
    "matched-4000__wiki__dfsdt__local_qwen2.5-0.5b__wiki/wiki-1-1-s0-0004/0": (
        "RE",
        "answered 154 at once without a call; gold 137",
    ),
    "scholar__dfsdt__local_qwen2.5-0.5b__scholar/scholar-1-3-s0-0002/0": (
        "RE",
        "answered 10 at once without a call; gold 7",
    ),
    "wiki__dfsdt__local_qwen2.5-0.5b__wiki/wiki-2-2-s0-0006/0": (
        "AM",
        "answered yes at once without a call; right from memory",
    ),
    "crag__dfsdt__local_qwen2.5-0.5b__crag-kg/crag-condition-s0-0009/0": (
        "RE",
        "valid artist searches returned nothing; gave up, the tree exhausted, no answer",
    ),
}


def write(draw: str = "fresh") -> None:
    out = []
    for cell, task, traj in _episodes(draw):
        key = f"{cell}/{task.id}/{traj.epoch}"
        label, reason = HAND[key]
        data = traj.model_dump(mode="json")
        data["llm_calls"] = []
        for k in (
            "scores",
            "error_type",
            "error_cause",
            "stop_reason",
            "error_subcause",
            "strict_error_type",
            "strict_error_cause",
        ):
            data.pop(k, None)
        out.append(
            {
                "cell": cell,
                "task": task.model_dump(mode="json"),
                "trajectory": data,
                "label": label,
                "reason": reason,
            }
        )
    path = Path(__file__).with_name(DRAWS[draw][2])
    if draw == "second":  # a study's cell names repeat across studies: say which
        for c in out:
            c["study"] = DRAWS[draw][3]
    path.write_text("".join(json.dumps(c, sort_keys=True) + "\n" for c in out), encoding="utf-8")
    print(f"{len(out)} hand-labelled trajectories -> {path}")


if __name__ == "__main__":
    command, draw = sys.argv[1], (sys.argv[2:] or ["fresh"])[0]
    {"sample": lambda d: print(*sample(d), sep="\n"), "render": render, "write": write}[command](
        draw
    )
