"""Resolve a ``--tasks`` value: a task set name, a family id, or a JSON-lines file."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from raleval import registry
from raleval.families import TaskFamily, check_evidence
from raleval.records import Task
from raleval.store import read_tasks


def families_for(spec: str) -> list[TaskFamily]:
    """The families a task-set name or a single family id stands for."""
    if spec in registry.task_sets:
        return [registry.task_families.get(f) for f in registry.task_sets.get(spec)]
    if spec in registry.task_families:
        return [registry.task_families.get(spec)]
    known = registry.task_sets.names() + registry.task_families.names()
    raise registry.UnknownNameError("task set", spec, known)


def load_tasks(spec: str, env: Any, env_name: str, per_family: int, seed: int) -> list[Task]:
    """Tasks for a run, generated (and verified) over ``env`` or read from a file, each with
    its gold solution's subgoals (``raleval.tasks.subgoals``: what progress rate credits).

    A set spanning environments (``reval-12``) contributes the families that run on
    ``env_name``; naming a family of another environment is an error.
    """
    from raleval.tasks.subgoals import attach_subgoals

    tasks = _load_tasks(spec, env, env_name, per_family, seed)
    check_world_evidence(tasks, env)
    return attach_subgoals(tasks, env)


@dataclass(frozen=True)
class TaskRequest:
    """What the tasks layer needs of a run's configuration, built once from it by the plan
    (``raleval.app.plan``): the ``--tasks`` value, the environment's name, how many tasks per
    family and their seed, the selection (``--limit``, ``--sample-id``, the study's sample
    seed) and whether tasks made for another world may run (``--allow-foreign-tasks``)."""

    spec: str
    env_name: str
    per_family: int
    seed: int
    limit: int | None = None
    sample_ids: tuple[str, ...] = ()
    sample_seed: int | None = None
    allow_foreign: bool = False


# a filter the caller adds between loading and selection: (pool) -> (kept, what it left out)
PoolFilter = Callable[[list[Task]], tuple[list[Task], dict[str, Any]]]


@dataclass(frozen=True)
class PreparedTasks:
    """The tasks layer's answer to a :class:`TaskRequest`: the tasks the run takes (with
    their subgoals), what the pool filter left out, and why the tasks cannot run on the
    environment (:func:`foreign_tasks`; None when they can or ``allow_foreign``)."""

    tasks: tuple[Task, ...]
    selection: dict[str, Any]
    foreign: str | None


def prepare_tasks(request: TaskRequest, env: Any, keep: PoolFilter | None = None) -> PreparedTasks:
    """Everything the tasks layer does for a run, in one call: the set loaded or generated
    (a testbed derived from its base), ids checked unique, ``keep`` applied to the pool (the
    app's fit-to-view; not to tasks named with ``--sample-id``: they run as named), the
    selection taken (:func:`raleval.tasks.sampling.select`), the chosen tasks' subgoals
    attached (only theirs: a ``--limit 4`` of a 400-task pool runs four gold solutions, not
    400) and the environment checked against where they were made, and the chosen tasks'
    evidence against what their gold solutions return from it (an
    :class:`~raleval.families.EvidenceMismatch` when it does not)."""
    from raleval.tasks.sampling import check_unique, select
    from raleval.tasks.subgoals import attach_subgoals

    pool = _load_tasks(request.spec, env, request.env_name, request.per_family, request.seed)
    check_unique(pool, f"task set {request.spec}")
    selection: dict[str, Any] = {}
    if keep is not None and not request.sample_ids:
        pool, selection = keep(pool)
    chosen = select(pool, request.limit, list(request.sample_ids), request.sample_seed)
    chosen = attach_subgoals(chosen, env)
    foreign = None
    if chosen and not request.allow_foreign:
        foreign = foreign_tasks(chosen, env, request.env_name)
        if foreign is None:
            # evidence the world does not return would label a grounded answer RE
            check_world_evidence(chosen, env)
    return PreparedTasks(tuple(chosen), selection, foreign)


def _load_tasks(spec: str, env: Any, env_name: str, per_family: int, seed: int) -> list[Task]:
    if is_task_file(spec):
        return read_tasks(Path(spec))
    from raleval.tasks.testbeds import derive, parse_spec

    base, testbed = parse_spec(spec)
    if testbed is not None:
        return derive(_load_tasks(base, env, env_name, per_family, seed), env, testbed, seed)
    families = families_for(spec)
    mine = [f for f in families if f.env == env_name]
    if not mine:
        envs = sorted({f.env for f in families})
        raise ValueError(
            f"{spec} has no task family on env {env_name!r}; run it with --env "
            f"{' or --env '.join(envs)}"
        )
    tasks: list[Task] = []
    for family in mine:
        tasks.extend(stamp(family, family.generate(env, per_family, seed), env))
    return tasks


def check_world_evidence(tasks: list[Task], env: Any) -> None:
    """Each task's evidence checked against what its gold solution returns from ``env``, on
    the session its episode would talk to (a testbed variant's changed world included):
    :func:`raleval.families.check_evidence`. A relaying environment answers from a server's
    world, not ours to check."""
    if getattr(env, "relays", False):
        return
    from raleval.tasks.testbeds import wrap_session

    check_evidence(tasks, lambda t: wrap_session(env.session(t), t, env))


def is_task_file(spec: str) -> bool:
    """Whether a ``--tasks`` value names a file of tasks rather than a set or a family."""
    return spec.endswith(".jsonl") or Path(spec).is_file()


def world_options_of(path: Path, env_name: str) -> dict[str, Any]:
    """The ``-E`` options that rebuild the world a task file's tasks were made for, as their
    ``made_for`` records it (``crag:generator=3,seed=0,size=small,snr=0.0333333``): the
    recorded values the environment's factory takes and that differ from its defaults. Empty
    when the tasks name no world, disagree on it, or were made for another environment (the
    run then refuses them, naming the difference)."""
    import inspect

    import yaml

    worlds = {str(t.metadata.get(MADE_FOR) or "") for t in read_tasks(path)}
    if len(worlds) != 1:
        return {}
    (made_for,) = worlds
    name, _, world = made_for.partition(":")
    if name != env_name or not world:
        return {}
    params = registry.envs.get(env_name).parameters() or {}
    options: dict[str, Any] = {}
    for pair in world.split(","):
        key, _, text = pair.partition("=")
        param = params.get(key)
        if param is None or param.default is inspect.Parameter.empty:
            continue  # not a factory option (a generator version, a file's name)
        default = param.default
        if text in (str(default), f"{default:.6g}" if isinstance(default, float) else None):
            continue  # the default, as the environment writes it
        try:
            value = yaml.safe_load(text)
        except yaml.YAMLError:
            value = text
        options[key] = value if isinstance(value, (str, int, float, bool)) else text
    return options


MADE_FOR = "made_for"  # Task.metadata key: the fingerprint of the environment a task was made on


def stamp(family: TaskFamily, tasks: list[Task], env: Any = None) -> list[Task]:
    """Fill a family's primary metric into tasks that do not choose their own, and record the
    environment and world the tasks were generated over (``Environment.fingerprint``)."""
    for t in tasks:
        if "metric" not in t.model_fields_set:
            t.metric = family.metric
        if env is not None:
            t.metadata.setdefault(MADE_FOR, env.fingerprint())
    return tasks


def foreign_tasks(tasks: list[Task], env: Any, env_name: str) -> str | None:
    """Why ``tasks`` were not made for ``env`` (another environment or world), or None.

    A task says where it was made (``metadata.made_for``); a task file without that record
    is still placed by its family's environment. Loaded datasets (no family) pass.
    """
    if getattr(env, "relays", False):
        return None  # the server's environment answers; it is not ours to check
    here = env.fingerprint()
    for t in tasks:
        made_for = t.metadata.get(MADE_FOR)
        if made_for is None and t.family in registry.task_families:
            made_for = registry.task_families.get(t.family).env
        if made_for is None:
            continue
        there_env = str(made_for).split(":", 1)[0]
        if there_env != env_name:
            return (
                f"task {t.id} was made for env {there_env!r}, not {env_name!r}: run it with "
                f"--env {there_env}, or pass --allow-foreign-tasks to run it here on purpose"
            )
        if ":" in str(made_for) and made_for != here:
            return (
                f"task {t.id} was made for world {made_for}, this environment is {here}: "
                "pass the same -E options, or --allow-foreign-tasks to run it here on purpose"
            )
    return None


def season_seed(season: str) -> int:
    """A stable seed for a season label (``2026-11``)."""
    return int(hashlib.sha256(f"raleval season {season}".encode()).hexdigest()[:8], 16)


def build_catalog(
    spec: str,
    out: Path,
    season: str,
    size: int = 100,
    examples: int = 8,
    world: str = "small",
    env_options: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Sample a seeded test set (``size`` per family) and a disjoint example pool per family,
    write ``test.jsonl``, ``examples.jsonl`` and ``manifest.json`` (with content hashes)."""
    from raleval import __version__
    from raleval.store import write_tasks
    from raleval.tasks.testbeds import derive, parse_spec

    base, testbed = parse_spec(spec)
    seed = season_seed(season)
    test: list[Task] = []
    pool: list[Task] = []
    per_family: dict[str, dict[str, Any]] = {}
    envs: dict[str, Any] = {}
    for family in families_for(base):
        if family.env not in envs:
            options = {"size": world, **(env_options or {}).get(family.env, {})}
            envs[family.env] = registry.envs.get(family.env)(**options)
        started = time.perf_counter()
        # a testbed cannot vary every task (a yes/no answer has no counterfactual): draw twice
        # as many and keep the variants it can make
        wanted = (size + examples) * (1 if testbed is None else 2)
        tasks = stamp(family, family.generate(envs[family.env], wanted, seed), envs[family.env])
        if testbed is not None:
            tasks = derive(tasks, envs[family.env], testbed, seed)
        seen: set[str] = set()
        unique = [t for t in tasks if not (t.question in seen or seen.add(t.question))]
        fam_test, fam_pool = unique[:size], unique[size : size + examples]
        for t in fam_pool:
            t.id = t.id.replace(f"-s{seed}-", f"-s{seed}-ex")
        test += fam_test
        pool += fam_pool
        per_family[family.id] = {
            "level": family.level.value,
            "domain": family.domain,
            "env": family.env,
            "metric": family.metric,
            "test": len(fam_test),
            "examples": len(fam_pool),
            "seconds": round(time.perf_counter() - started, 3),
        }
    out.mkdir(parents=True, exist_ok=True)
    write_tasks(out / "test.jsonl", test)
    write_tasks(out / "examples.jsonl", pool)
    manifest = {
        "set": spec,
        "testbed": testbed.label if testbed else None,
        "season": season,
        "seed": seed,
        "world_size": world,
        "per_family": size,
        "raleval": __version__,
        "families": per_family,
        "files": {
            name: hashlib.sha256((out / name).read_bytes()).hexdigest()
            for name in ("test.jsonl", "examples.jsonl")
        },
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest
