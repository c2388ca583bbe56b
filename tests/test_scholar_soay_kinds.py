"""Scholar families cover SoAy's AMiner question kinds, each with an executed gold solution."""

from __future__ import annotations

from raleval import registry
from raleval.answers import AnswerType
from raleval.envs.scholar import families as scholar
from raleval.families import answer_of, execute_solution

# SoAy kinds the issue lists as missing, by a template's wording
KINDS = {
    "email": "What is the e-mail address of {name}, who works on {interest}?",
    "multi-constraint search": (
        "How many citations does {name} of {org}, who works on {interest}, have?"
    ),
    "all coauthors": "Who are all the coauthors of {name} of {org}?",
    "coauthor of coauthor": (
        "Who is the most frequent coauthor of the most frequent coauthor of {name} of {org}?"
    ),
    "abstract": "What is the abstract of the paper '{title}'?",
    "h-index": (
        "What is the h-index of {name} of {org}, counted over the citations of their papers?"
    ),
    "papers of a year": "List the titles of all papers {name} of {org} published in {year}.",
}


def _tasks():
    env = registry.envs.get("scholar")(size="small")
    out = []
    for fid in ("1-3", "2-4", "3-5"):
        out += scholar.FAMILIES[fid].generate(env, 160, 3)
    return env, out


def test_every_listed_kind_is_generated_and_its_solution_reproduces_the_answer():
    env, tasks = _tasks()
    by_template = {t.metadata["template"]: t for t in tasks}
    for kind, template in KINDS.items():
        task = by_template.get(template)
        assert task is not None, kind
        results = execute_solution(env, task.solution)
        assert answer_of(task.metadata["answer_expr"], results) == task.answers[0], kind


def test_list_answers_are_typed_as_lists_with_one_element_per_item():
    env, tasks = _tasks()
    coauthors = [t for t in tasks if t.metadata["template"] == KINDS["all coauthors"]]
    assert coauthors
    for t in coauthors:
        assert t.answer_type is AnswerType.list
        person = env.store.person(t.metadata["person_id"])
        names = [n for _, n, _ in env.store.coauthors(person["rowid"])]
        assert [e[0] for e in t.elements] == names


def test_h_index_counts_papers_with_at_least_that_many_citations():
    env, tasks = _tasks()
    t = next(t for t in tasks if t.metadata["template"] == KINDS["h-index"])
    cits = sorted((p["num_citation"] for p in execute_solution(env, t.solution)[1]), reverse=True)
    h = int(t.answers[0])
    assert all(c >= h for c in cits[:h])
    assert h == len(cits) or cits[h] < h + 1


def test_at_least_forty_templates():
    assert scholar.TEMPLATE_COUNT >= 40
    assert len(scholar.KS) + len(scholar.KU) + len(scholar.KA) == scholar.TEMPLATE_COUNT
