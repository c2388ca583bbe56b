"""Run configuration: one pydantic model shared by the CLI, YAML files and the Python API."""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)


class ConfigError(ValueError):
    """A configuration that cannot run; the message says which field and why."""


class RunConfig(BaseModel):
    """Everything that determines one run (one env x workflow x model x task set)."""

    model_config = ConfigDict(extra="forbid")

    env: str = "scholar"
    env_options: dict[str, Any] = Field(default_factory=dict)
    workflow: str = "react"
    workflow_options: dict[str, Any] = Field(default_factory=dict)
    # The embedded local model; scripted test models are never chosen by default.
    model: str = "local/qwen2.5-0.5b"
    model_options: dict[str, Any] = Field(default_factory=dict)
    tasks: str | None = None  # None: the environment's default task set
    tasks_per_family: int = Field(100, ge=1)
    # --limit N: N tasks taken round-robin across families (raleval.tasks.sampling)
    limit: int | None = Field(None, ge=1)
    sample_ids: list[str] | None = None  # --sample-id: exactly these tasks
    # a seeded random order within each family before --limit takes its round-robin (a
    # study's declared sample, shared by every cell; raleval.tasks.sampling)
    sample_seed: int | None = None
    seed: int = 0
    # the seed the demonstrations are drawn with (None: ``seed``): a second draw of the same
    # families' demonstrations, the tasks under test unchanged (issue 62)
    demonstration_seed: int | None = None
    # episodes in flight at once; "auto": found by AIMD from the endpoint's answers
    # (raleval.concurrency), within one process
    max_connections: Annotated[int, Field(ge=1)] | Literal["auto"] = 8
    max_connections_per_endpoint: int | None = Field(None, ge=1)
    log_dir: Path = Path("runs")
    run_name: str | None = None
    # a study arm's name (``matched-4000``): the run directory's name starts with it, so cells
    # of one system in two arms (other budgets, sampling) keep apart; not in the fingerprint
    arm: str | None = Field(None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    # Where episodes run: this process, `workers` local worker processes, or sharded over a Ray
    # cluster (a local one if no address).
    backend: Literal["local", "processes", "ray"] = "local"
    ray_address: str | None = None
    workers: int = Field(2, ge=1)
    epochs: int = Field(1, ge=1, le=100)  # repeat every task; reports pass@k and pass^k
    cache: bool = True
    cache_path: Path | None = None
    # Fault injection (see raleval.app.faults): seeded rates and the retries applied to them.
    tool_fault_rate: float = Field(0.0, ge=0, le=1)
    llm_fault_rate: float = Field(0.0, ge=0, le=1)
    fault_seed: int = 0
    tool_retries: int = Field(2, ge=0)
    llm_retries: int = Field(2, ge=0)
    # Tasks record the environment and world they were made for; running them on another is
    # refused unless asked for on purpose (a counterfactual check, a world migration).
    allow_foreign_tasks: bool = False
    # How this invocation treats the run directory; never part of the fingerprint.
    retry_failed: bool = False  # re-run episodes whose last attempt failed for infra reasons
    force: bool = False  # set aside a run directory holding another configuration

    @field_validator("model")
    @classmethod
    def _model_spec(cls, v: str) -> str:
        if "/" not in v:
            raise ValueError(f"model spec {v!r} must look like provider/name")
        return v

    @model_validator(mode="after")
    def _auto_is_local(self) -> RunConfig:
        if self.max_connections == "auto" and self.backend != "local":
            raise ValueError(
                "max_connections auto adapts within one process: use --backend local, or a "
                "number of connections with --backend processes or ray"
            )
        return self

    def with_defaults(self) -> RunConfig:
        """The config with omitted values that depend on a plugin filled in (the env's default
        task set), so an explicit default and an omitted one name the same run."""
        if self.tasks is not None:
            return self
        from raleval import registry

        default = registry.envs.get(self.env).default_tasks
        if not default:
            raise ConfigError(f"env {self.env!r} has no default task set: pass --tasks")
        return self.model_copy(update={"tasks": default})

    def normalised(self) -> RunConfig:
        """:meth:`with_defaults`, and options given at their default value dropped (``-W
        max_steps=10`` where 10 is the default, ``-E size=small``), so an explicit default and
        an omitted one fingerprint the same. Options a plugin does not know are kept (they are
        refused later, with the valid ones named)."""
        import inspect

        from raleval import registry

        cfg = self.with_defaults()
        wf_defaults: dict[str, Any] = {}
        try:
            fields = registry.workflows.get(cfg.workflow).Config.model_fields
            wf_defaults = {
                k: f.get_default(call_default_factory=True)
                for k, f in fields.items()
                if not f.is_required()
            }
        except (LookupError, AttributeError, ValueError):
            pass
        env_defaults: dict[str, Any] = {}
        try:
            params = registry.envs.get(cfg.env).parameters() or {}
            env_defaults = {
                k: p.default for k, p in params.items() if p.default is not inspect.Parameter.empty
            }
        except LookupError:
            pass

        def drop(options: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
            return {k: v for k, v in options.items() if k not in defaults or defaults[k] != v}

        return cfg.model_copy(
            update={
                "workflow_options": drop(cfg.workflow_options, wf_defaults),
                "env_options": drop(cfg.env_options, env_defaults),
            }
        )

    def slug(self) -> str:
        """Directory name of the run: the same command always maps to the same directory."""
        if self.run_name:
            return self.run_name
        model = self.model.replace("/", "_").replace("@", "_at_").replace(":", "_")
        if len(model) > 60:  # a model named by a path (local/<file>.gguf): its file's name
            digest = hashlib.sha256(self.model.encode()).hexdigest()[:8]
            model = f"{self.model.split('/', 1)[0]}_{Path(self.model).name[:40]}-{digest}"
        spec = self.with_defaults().tasks or ""
        tasks = task_file_identity(Path(spec)) if spec.endswith(".jsonl") else spec
        workflow = self.workflow
        if ":" in workflow:  # agent:MODULE:FACTORY, command:CMD: no path characters, and short
            digest = hashlib.sha256(workflow.encode()).hexdigest()[:8]
            kind, _, target = workflow.partition(":")
            stem = re.sub(
                r"[^A-Za-z0-9_.-]+", "_", Path(target.split()[0] if target.split() else "").name
            )
            workflow = f"{kind}-{stem[:40]}-{digest}"
        return "__".join([*([self.arm] if self.arm else []), self.env, workflow, model, tasks])

    @property
    def run_dir(self) -> Path:
        return self.log_dir / self.slug()

    def fingerprint(self) -> str:
        """Hash of the fields that change results; resuming requires it unchanged."""
        keep = self.normalised().model_dump(
            mode="json",
            exclude={
                "limit",
                "sample_ids",
                "sample_seed",
                "retry_failed",
                "force",
                "max_connections",
                "max_connections_per_endpoint",
                "log_dir",
                "run_name",
                "arm",
                "cache",
                "cache_path",
                "backend",
                "ray_address",
                "workers",
                "allow_foreign_tasks",
            },
        )
        if keep.get("demonstration_seed") is None:  # unset: as before the option existed
            keep.pop("demonstration_seed", None)
        return hashlib.sha256(json.dumps(keep, sort_keys=True).encode()).hexdigest()[:16]


def task_file_identity(path: Path) -> str:
    """A task file's name in run directory names: the set and season of a ``tasks build``
    folder (its manifest.json) or the file's stem, and a short hash of the file's bytes, so
    two seasons' ``test.jsonl`` never share a run directory and a moved file keeps its own."""
    label = path.stem
    try:
        manifest = json.loads((path.parent / "manifest.json").read_text(encoding="utf-8"))
        if isinstance(manifest, dict) and manifest.get("season") is not None:
            label = f"{manifest.get('set')}-{manifest['season']}-{path.stem}"
    except (OSError, ValueError):
        pass
    label = "".join(c if c.isalnum() or c in "-_." else "_" for c in label)
    try:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()[:8]
    except OSError:
        return label  # no file (yet): loading the tasks will say so
    return f"{label}-{digest}"


_AXES = {
    "env": ("envs", "env"),
    "workflow": ("workflows", "workflow"),
    "model": ("models", "model"),
    "tasks": ("tasks",),
}


def load_matrix(path: Path, overrides: dict[str, Any]) -> list[RunConfig]:
    """Expand a YAML file listing ``envs`` x ``workflows`` x ``models`` x ``tasks`` into run
    configs.

    Scalar keys (``limit``, ``epochs``, ...) apply to every run; list keys ``envs``,
    ``workflows``, ``models`` and ``tasks`` (or their singular forms) are crossed (without
    ``tasks``, each environment runs its default task set). ``workflow_options`` may hold a
    mapping per workflow name (``{pal: {pal_cpu_s: 5}, max_tokens: 64}``) and ``env_options``
    one per environment name (``{wiki: {size: small}}``): each gets the shared keys and its
    own, since each validates only the options it has. Several YAML documents (separated by
    ``---``) are several such blocks, run one after another: a study's generated and
    real-data arms in one file. ``budgets: [N, ...]`` makes a budget sweep: every cell of the
    block once per budget, in an arm ``budget-N`` with ``max_episode_tokens: N``.
    """
    try:
        docs = list(yaml.safe_load_all(path.read_text(encoding="utf-8")))
    except yaml.MarkedYAMLError as exc:
        raise ConfigError(yaml_error(path, exc)) from None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from None
    docs = [d for d in docs if d is not None] or [{}]
    return [cfg for doc in docs for cfg in _expand(path, doc, overrides)]


def _expand(path: Path, raw: Any, overrides: dict[str, Any]) -> list[RunConfig]:
    """The run configs of one YAML document of a matrix file."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of settings")
    raw = dict(raw)
    axes: dict[str, list[Any]] = {}
    for key, spellings in _AXES.items():
        for spelling in spellings:
            if spelling in raw:
                value = raw.pop(spelling)
                axes[key] = value if isinstance(value, list) else [value]
                break
    budgets = _budgets(path, raw.pop("budgets", None))
    base = {**raw, **{k: v for k, v in overrides.items() if v is not None}}
    keys = list(axes)
    configs = []
    for combo in itertools.product(*(axes[k] for k in keys)) if keys else [()]:
        data = {**base, **dict(zip(keys, combo, strict=True))}
        for k in keys:  # explicit command-line values win over the file's axes
            if overrides.get(k) is not None:
                data[k] = overrides[k]
        data["workflow_options"] = _options_of(data.get("workflow_options"), data.get("workflow"))
        data["env_options"] = _options_of(data.get("env_options"), data.get("env"))
        if budgets is None:
            configs.append(build_config(data, source=str(path)))
            continue
        for budget in budgets:  # one arm per budget: the cells of a budget sweep
            options = {**(data["workflow_options"] or {}), "max_episode_tokens": budget}
            arm = f"{data['arm']}-budget-{budget}" if data.get("arm") else f"budget-{budget}"
            swept = {**data, "arm": arm, "workflow_options": options}
            configs.append(build_config(swept, source=str(path)))
    return configs


def _budgets(path: Path, value: Any) -> list[int] | None:
    """A block's ``budgets`` (tokens per episode): each becomes an arm ``budget-N`` whose
    cells run with ``workflow_options.max_episode_tokens: N``."""
    if value is None:
        return None
    values = value if isinstance(value, list) else [value]
    if not values or not all(
        isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in values
    ):
        raise ConfigError(f"{path}: budgets must be positive whole numbers of tokens: {value!r}")
    if len(set(values)) != len(values):
        raise ConfigError(f"{path}: a budget is listed twice: {value!r}")
    return values


def yaml_error(path: Path, exc: yaml.MarkedYAMLError) -> str:
    """``file:line:column: problem`` (1-based) for a YAML syntax error."""
    mark = exc.problem_mark or exc.context_mark
    where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
    problem = exc.problem or "invalid YAML"
    context = f" ({exc.context})" if exc.context else ""
    return f"{where}: {problem}{context}"


def _options_of(options: Any, name: Any) -> Any:
    """The shared options plus those listed under the workflow's or environment's ``name``."""
    if not isinstance(options, dict):
        return options if options is not None else {}
    own = options.get(name) if isinstance(name, str) else None
    shared = {k: v for k, v in options.items() if not isinstance(v, dict)}
    return {**shared, **(own if isinstance(own, dict) else {})}


def build_config(data: dict[str, Any], source: str = "command line") -> RunConfig:
    try:
        return RunConfig.model_validate(data)
    except ValidationError as exc:
        problems = []
        for e in exc.errors():
            where = ".".join(str(p) for p in e["loc"]) or "config"
            if e["type"] == "extra_forbidden" and len(e["loc"]) == 1:
                valid = ", ".join(RunConfig.model_fields)
                problems.append(f"unknown setting {where!r} (valid: {valid})")
            else:
                problems.append(f"{where}: {e['msg']}")
        raise ConfigError(f"invalid configuration ({source}): {'; '.join(problems)}") from None


def parse_key_values(pairs: list[str], what: str = "-M") -> dict[str, Any]:
    """``["temperature=0.2", "stop=[a,b]"]`` -> dict, values read as YAML scalars."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{what} expects key=value, got {pair!r}")
        try:
            out[key.strip()] = yaml.safe_load(value) if value.strip() else ""
        except yaml.YAMLError:
            out[key.strip()] = value
    return out
