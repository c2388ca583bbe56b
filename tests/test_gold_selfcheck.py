"""The gold is always right (issue 59): every task's gold, given as the answer to its own
question, is graded correct, on every loader's real samples and every generated family.

The loaded samples are the benchmarks' own files (tests/data/README.md says where each comes
from); the full HotpotQA dev run is ``benchmarks/gold_selfcheck.py``.
"""

from pathlib import Path

import pytest

from raleval import registry
from raleval.grading.rules import grade, grade_task
from raleval.tasks.collection_loaders import load_collection
from raleval.tasks.loaders import load_file

HERE = Path(__file__).parent
DATA, FIX = HERE / "data", HERE / "fixtures"

LOADED = {
    "hotpotqa": [
        DATA / "hotpot_dev_distractor_v1_head.json",
        FIX / "tasks" / "hotpot.json",
        FIX / "wiki" / "hotpot.json",
    ],
    "2wiki": [FIX / "tasks" / "2wiki.json", FIX / "wiki" / "2wiki.json"],
    "musique": [FIX / "tasks" / "musique.jsonl", FIX / "wiki" / "musique.jsonl"],
    "kqapro": [FIX / "tasks" / "kqapro.json"],
    "crag": [DATA / "crag_dev_data_head.jsonl", FIX / "tasks" / "crag.jsonl"],
    "soay": sorted((DATA / "soaybench_v1-2").glob("*.jsonl")),
}
COLLECTIONS = {
    "crud": [DATA / "seeds" / "crud_real" / "split_merged.json"],
    "rageval": [DATA / "seeds" / "dragonball_real" / "dragonball_queries.jsonl"],
    "rgb": sorted((DATA / "seeds" / "rgb_real").glob("*.json")),
    "rgb-negative": [DATA / "seeds" / "rgb_real" / "zh_refine.json"],
}


def _not_correct(tasks) -> list[tuple[str, str, list[str]]]:
    """The tasks whose own gold is not graded correct, with the rule's last word on each."""
    out = []
    for task in tasks:
        verdict = grade_task(task, task.answers[0] if task.answers else None)
        if not verdict.correct:
            out.append((task.id, task.answers[0][:80], verdict.explanation[-1:]))
    return out


@pytest.mark.parametrize("kind", sorted(LOADED))
def test_every_loaded_gold_is_correct_for_its_own_question(kind):
    tasks = [t for path in LOADED[kind] for t in load_file(kind, path)]
    assert tasks, kind
    assert _not_correct(tasks) == []


@pytest.mark.parametrize("kind", sorted(COLLECTIONS))
def test_every_collection_gold_is_correct_for_its_own_question(kind):
    tasks = [t for path in COLLECTIONS[kind] for t in load_collection(kind, path).tasks]
    assert tasks, kind
    assert _not_correct(tasks) == []


def test_the_samples_hold_the_cases_that_broke():
    # what the rules once got wrong on these files: a list gold naming an element twice
    # (SoAy's collaborators of collaborators) and a false premise whose gold corrects it
    soay = [t for t in load_file("soay", DATA / "soaybench_v1-2" / "37.jsonl")]
    assert any(len(t.elements) > len({tuple(e) for e in t.elements}) for t in soay)
    crag = load_file("crag", DATA / "crag_dev_data_head.jsonl")
    assert any(
        t.answer_type.value == "invalid_premise" and "invalid" not in t.answers[0] for t in crag
    )


@pytest.fixture(scope="module")
def generated():
    envs = {name: registry.envs.get(name)(size="tiny") for name in ("scholar", "wiki", "crag")}
    families = registry.task_families.load_all()
    assert {f.env for f in families.values()} <= set(envs)
    return {
        fid: [t for seed in (0, 1) for t in family.generate(envs[family.env], 6, seed)]
        for fid, family in families.items()
    }


def test_every_generated_gold_is_correct_for_its_own_question(generated):
    assert all(generated.values()), [f for f, ts in generated.items() if not ts]
    wrong = {fid: bad for fid, tasks in generated.items() if (bad := _not_correct(tasks))}
    assert wrong == {}


# HotpotQA dev questions (ReAct's simplified file) the either-or rule once graded "ungraded"
# when given their own gold: each option the question names is part of the gold or holds it
OWN_OPTION = [
    ("Who was born first, Arthur Conan Doyle or Penelope Lively?", "Arthur Ignatius Conan Doyle"),
    (
        "Which performance act has a higher instrument to person ratio, Badly Drawn Boy or "
        "Wolf Alice? ",
        "Badly Drawn Boy",
    ),
    ("which is traditionally drunk before retiring to bed, Hot toddy or Kir?", "Hot toddy"),
    (
        "Which dog is considered a giant dog breed, the  Leonberger or the Basset Hound?",
        "The Leonberger is a giant dog breed.",
    ),
    (" Who was born first Doug Liman or Saul Metzstein?", 'Douglas Eric "Doug" Liman'),
    (
        "Was the famous opera comique that was based on a Prosper Merimee novella a comedy or "
        "a tragedy? ",
        '"Carmen", perhaps the most famous "opéra comique", is a tragedy',
    ),
    # the default CRAG world's comparison tasks (crag-comparison-s0-0031 and -0041), which
    # kept the scripted oracle at 398 of 400 at 8k tokens
    (
        "Which movie had the bigger budget, The Road of Vamelmelva or Lotorjunzor Machine?",
        "The Road of Vamelmelva",
    ),
    (
        "Which movie had the bigger budget, The Hearts of Melholmel or Fentasarta Empire?",
        "The Hearts of Melholmel",
    ),
    (
        "Which band included more previously-known figures when it was formed, !!! or Puddle "
        "of Mudd?",
        "!!!",
    ),
]


@pytest.mark.parametrize("question,gold", OWN_OPTION)
def test_an_option_that_is_part_of_the_gold_is_the_gold(question, gold):
    verdict = grade(gold, [gold], "entity", question=question)
    assert verdict.correct and not verdict.ungraded, verdict.explanation


def test_the_other_option_still_makes_an_answer_ungraded_or_wrong():
    q = "Who was born first, Arthur Conan Doyle or Penelope Lively?"
    gold = ["Arthur Ignatius Conan Doyle"]
    both = grade("Arthur Ignatius Conan Doyle and Penelope Lively", gold, "entity", question=q)
    assert not both.correct
    hedged = grade("Arthur Ignatius Conan Doyle was born before Penelope Lively", gold, question=q)
    assert hedged.ungraded and not hedged.correct
    reversed_ = grade(
        "Penelope Lively was born earlier than Arthur Ignatius Conan Doyle", gold, question=q
    )
    assert not reversed_.correct and not reversed_.ungraded
    # a gold that is part of the other option ("Ferdinand Porsche" inside the longer name)
    # is still not answered by naming the longer one
    q2 = "Who died more recently, Ferdinand Anton Ernst Porsche or Ferdinand Porsche"
    assert not grade("Ferdinand Anton Ernst Porsche", ["Ferdinand Porsche"], question=q2).correct


def test_punctuation_that_is_not_the_gold_still_abstains():
    q = "Which band formed first, !!! or Puddle of Mudd?"
    assert grade("!!!", ["Puddle of Mudd"], question=q).abstained
    assert grade("...", ["!!!"], question=q).abstained
