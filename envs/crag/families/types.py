"""CRAG's other seven question types over the mock KG, each in all five domains.

simple_w_condition, set, comparison, aggregation, multi-hop, post-processing and false_premise
(``crag-simple`` covers simple). A builder picks core entities and returns the question, the
gold calls, an answer expression over their results (``r0, r1, ...``) and the truth read from
the world; the calls are executed in a session dated to the task's query_time and the task is
kept only if the expression reproduces the truth. False-premise questions expect
"invalid question".

This module is the table of families (question type, level, one builder per domain) and the
generator that runs them; the builders live in one module per question type.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import Any

from raleval.answers import infer_answer_type
from raleval.envs.crag.families.aggregation import (
    agg_finance,
    agg_movie,
    agg_music,
    agg_open,
    agg_sports,
)
from raleval.envs.crag.families.comparison import (
    cmp_finance,
    cmp_movie,
    cmp_music,
    cmp_open,
    cmp_sports,
)
from raleval.envs.crag.families.condition import (
    cond_finance,
    cond_movie,
    cond_music,
    cond_open,
    cond_sports,
)
from raleval.envs.crag.families.false_premise import (
    fp_finance,
    fp_movie,
    fp_music,
    fp_open,
    fp_sports,
)
from raleval.envs.crag.families.multihop import (
    hop_finance,
    hop_movie,
    hop_music,
    hop_open,
    hop_sports,
)
from raleval.envs.crag.families.pickers import Builder
from raleval.envs.crag.families.postproc import (
    post_finance,
    post_movie,
    post_music,
    post_open,
    post_sports,
)
from raleval.envs.crag.families.sets import (
    set_finance,
    set_movie,
    set_music,
    set_open,
    set_sports,
)
from raleval.families import TaskFamily, grounding_evidence, verified_results
from raleval.records import Level, Task, TaskTags
from raleval.registry import register_task_family, register_task_set

TYPES: dict[str, tuple[str, Level, list[tuple[str, str, Builder]]]] = {
    # family -> (CRAG question type, level, [(domain, dynamism, builder)])
    "crag-condition": ("simple_w_condition", Level.KS, [
        ("finance", "static", cond_finance), ("movie", "static", cond_movie),
        ("music", "slow-changing", cond_music), ("sports", "static", cond_sports),
        ("open", "static", cond_open)]),
    "crag-set": ("set", Level.KS, [
        ("finance", "slow-changing", set_finance), ("movie", "static", set_movie),
        ("music", "slow-changing", set_music), ("sports", "fast-changing", set_sports),
        ("open", "static", set_open)]),
    "crag-comparison": ("comparison", Level.KU, [
        ("finance", "real-time", cmp_finance), ("movie", "static", cmp_movie),
        ("music", "static", cmp_music), ("sports", "static", cmp_sports),
        ("open", "static", cmp_open)]),
    "crag-aggregation": ("aggregation", Level.KA, [
        ("finance", "fast-changing", agg_finance), ("movie", "slow-changing", agg_movie),
        ("music", "slow-changing", agg_music), ("sports", "fast-changing", agg_sports),
        ("open", "static", agg_open)]),
    "crag-multihop": ("multi-hop", Level.KA, [
        ("finance", "slow-changing", hop_finance), ("movie", "static", hop_movie),
        ("music", "static", hop_music), ("sports", "fast-changing", hop_sports),
        ("open", "static", hop_open)]),
    "crag-postproc": ("post-processing", Level.KA, [
        ("finance", "fast-changing", post_finance), ("movie", "static", post_movie),
        ("music", "slow-changing", post_music), ("sports", "static", post_sports),
        ("open", "static", post_open)]),
    "crag-false-premise": ("false_premise", Level.KU, [
        ("finance", "slow-changing", fp_finance), ("movie", "static", fp_movie),
        ("music", "static", fp_music), ("sports", "static", fp_sports),
        ("open", "static", fp_open)]),
}  # fmt: skip


MAX_MISSES = 400
UNCAPPED = {"count", "boolean", "invalid_premise"}


def _generator(family: str):
    qtype, level, builders = TYPES[family]

    def generate(env: Any, n: int, seed: int) -> list[Task]:
        from raleval.envs.crag.families.simple import PopularityQuota, popularity_by_name

        world = env.world
        rng = random.Random(f"{family}/{seed}")
        popularity = popularity_by_name(world)
        quota = PopularityQuota()
        tasks: list[Task] = []
        seen: set[str] = set()
        attempts = 0
        # a domain the world cannot ask (no Grammy winner in the tiny world) gives way after
        # MAX_MISSES tries in a row instead of holding the family at the items it has
        misses = skip = 0
        answered: dict[tuple[str, str], int] = {}
        cap = max(2, -(-n // (5 * len(builders))))
        while len(tasks) < n and attempts < 120 * n + 100:
            attempts += 1
            if misses >= MAX_MISSES:
                misses, skip = 0, skip + 1
            misses += 1
            domain, dynamism, build = builders[(len(tasks) + skip) % len(builders)]
            query_time = datetime(2024, 1, 1) + timedelta(days=rng.randrange(0, 300), hours=12)
            built = build(world, rng, query_time)
            if built is None:
                continue
            question, calls, expr, truth, metric, *typed = built
            task_qtype = typed[0] if typed else qtype
            if question in seen:
                continue
            answer = str(truth)
            answer_type = infer_answer_type(question, [answer], metric, task_qtype)
            # one answer fills at most a fifth of its template (two at the least): every
            # company of the tiny world pays its dividends on the same four dates, which a
            # question-only classifier learned; counts, yes/no and the invalid premise are
            # judged against their own few values instead (checked before the popularity
            # quota, so a refused answer spends none of its patience)
            answer_key = (build.__name__ + task_qtype, answer.casefold())
            if answer_type.value not in UNCAPPED and answered.get(answer_key, 0) >= cap:
                continue
            subject = next((str(v) for c in calls for v in c.arguments.values()), "")
            bucket = popularity.get(subject, "head")
            if not quota.accepts(bucket):
                continue
            results = verified_results(env.at(query_time), calls, expr, answer)
            if results is None:
                continue
            evidence = grounding_evidence(expr, results, answer)
            quota.add(bucket)
            seen.add(question)
            misses = 0
            answered[answer_key] = answered.get(answer_key, 0) + 1
            tasks.append(
                Task(
                    id=f"{family}-s{seed}-{len(tasks):04d}",
                    domain=f"crag/{domain}",
                    level=level,
                    family=family,
                    question=question,
                    answers=[answer],
                    answer_type=answer_type,
                    query_time=query_time,
                    tags=TaskTags(
                        question_type=task_qtype,
                        popularity=bucket,
                        dynamism=dynamism,
                    ),
                    solution=calls,
                    evidence=evidence,
                    metric=metric,
                    metadata={
                        "template": build.__name__.lstrip("_")
                        + ("" if task_qtype == qtype else "_true_premise"),
                        "crag_domain": domain,
                        "answer_expr": expr,
                    },
                )
            )
        return tasks

    return generate


FAMILIES = {
    fid: TaskFamily(
        id=fid,
        level=level,
        domain="crag",
        env="crag",
        metric="f1",
        description=f"CRAG {qtype} questions in finance, movie, music, sports and open",
        generate=_generator(fid),
    )
    for fid, (qtype, level, _) in TYPES.items()
}
for _fid, _family in FAMILIES.items():
    register_task_family(_fid)(_family)

register_task_set("crag-kg")(["crag-simple", *FAMILIES])
