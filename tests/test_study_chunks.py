"""A long study runs in chunks: ``raleval run --max-time`` starts no episode or cell after its
time, exits 3, and the same command resumes; a matrix file crosses environments and holds
several blocks (YAML documents), as ``studies/local-models.yaml`` does."""

from __future__ import annotations

import gzip
from pathlib import Path

from typer.testing import CliRunner

from raleval.app.cli import TIME_LIMIT, app
from raleval.config import load_matrix
from raleval.store import RESULTS, ResultsFile

runner = CliRunner()
STUDY = Path(__file__).resolve().parents[1] / "studies" / "local-models.yaml"


def test_matrix_crosses_envs_with_their_own_options_and_default_tasks(tmp_path):
    cfg = tmp_path / "m.yaml"
    cfg.write_text(
        "envs: [scholar, wiki, crag]\nworkflows: [react, direct]\nmodels: [scripted/oracle]\n"
        "env_options: {size: tiny, wiki: {sentences: 3}, crag: {seed: 1}}\n"
        "---\nenv: crag-pages\ntasks: real.jsonl\nworkflow: react\n"
    )
    configs = load_matrix(cfg, {})
    got = [(c.env, c.workflow, c.with_defaults().tasks, c.env_options) for c in configs]
    assert got == [
        ("scholar", "react", "scholar", {"size": "tiny"}),
        ("scholar", "direct", "scholar", {"size": "tiny"}),
        ("wiki", "react", "wiki", {"size": "tiny", "sentences": 3}),
        ("wiki", "direct", "wiki", {"size": "tiny", "sentences": 3}),
        ("crag", "react", "crag-kg", {"size": "tiny", "seed": 1}),
        ("crag", "direct", "crag-kg", {"size": "tiny", "seed": 1}),
        ("crag-pages", "react", "real.jsonl", {}),
    ]


def _episodes(run_dir: Path) -> list[tuple[str, int]]:
    return [(t.task_id, t.epoch) for t in ResultsFile(run_dir / RESULTS)]


def test_max_time_stops_starting_cells_then_the_same_command_resumes(tmp_path):
    cfg = tmp_path / "m.yaml"
    cfg.write_text(
        "env_options: {size: tiny}\nworkflows: [react, direct]\nmodels: [scripted/oracle]\n"
        "tasks: scholar-ks\ntasks_per_family: 3\nmax_connections: 1\n"
        # each episode takes 0.3 s of (scripted) model time
        "model_options: {latency_s: 0.3}\n"
    )
    command = ["run", "--config", str(cfg), "--log-dir", str(tmp_path / "runs")]
    first = runner.invoke(app, [*command, "--display", "none", "--max-time", "1"])
    assert first.exit_code == TIME_LIMIT, first.output
    assert "--max-time reached: 2 of 2 configuration(s) not finished" in first.output
    react = tmp_path / "runs" / "scholar__react__scripted_oracle__scholar-ks"
    # the first cell stopped starting episodes after 1 s (before any, on a loaded machine);
    # the second never started
    done = _episodes(react)
    assert len(done) < 3
    assert not (tmp_path / "runs" / "scholar__direct__scripted_oracle__scholar-ks").exists()
    second = runner.invoke(app, [*command, "--display", "none"])
    assert second.exit_code == 0, second.output
    assert f"{3 - len(done)} episodes run, {len(done)} already done" in second.output
    after = _episodes(react)
    assert after[: len(done)] == done and len(after) == len(set(after)) == 3


def test_max_time_needs_the_local_backend(tmp_path):
    res = runner.invoke(
        app, ["run", "--model", "scripted/oracle", "--backend", "processes", "--max-time", "5",
              "--log-dir", str(tmp_path)],
    )  # fmt: skip
    assert res.exit_code == 2 and "--max-time needs the local backend" in res.output


def test_the_study_file_expands_to_its_cells():
    configs = load_matrix(STUDY, {})
    assert len({c.run_dir for c in configs}) == len(configs)  # no cell twice
    cells = {(c.env, c.workflow, c.model) for c in configs}
    generated = {c for c in cells if c[0] in ("scholar", "wiki", "crag")}
    models = {m for _, _, m in generated}
    assert {"local/smollm2-135m", "local/qwen2.5-0.5b"} <= models
    for env in ("scholar", "wiki", "crag"):
        for wf in ("react", "function_calling", "pal", "dfsdt", "direct", "planned"):
            assert (env, wf, "local/qwen2.5-0.5b") in cells
    assert ("crag-pages", "react", "local/qwen2.5-0.5b") in cells
    assert ("wiki", "react", "local/qwen2.5-0.5b") in {
        (c.env, c.workflow, c.model) for c in configs if c.env_options.get("backend") == "offline"
    }


class _Clock:
    """``time`` for the runner: the first deadline check is at 0 s, every later one at 100 s."""

    def __init__(self) -> None:
        self.calls = 0

    def monotonic(self) -> float:
        self.calls += 1
        return 0.0 if self.calls == 1 else 100.0


def test_no_episode_starts_after_the_deadline_and_running_ones_are_saved(tmp_path, monkeypatch):
    import asyncio

    from raleval.app import local_backend, runner
    from raleval.config import RunConfig

    config = RunConfig(
        env_options={"size": "tiny"},
        model="scripted/oracle",
        tasks="scholar-ks",
        tasks_per_family=3,
        max_connections=1,
        log_dir=tmp_path,
    )
    monkeypatch.setattr(local_backend, "time", _Clock())
    summary = asyncio.run(runner.run(config, display="none", deadline=50.0))
    assert (summary.ran, summary.skipped, summary.total) == (1, 0, 3)
    assert not summary.interrupted and len(_episodes(summary.run_dir)) == 1


def test_a_resumed_matrix_keeps_the_reports_of_cells_that_did_not_change(tmp_path):
    """Each chunk of the study re-drew all 64 finished cells' reports and the matrix report
    (a 64-cell resume with nothing left to run: 55 s, now 14 s): a report is kept when
    nothing in its run changed since it was written, and drawn again when something did."""
    import os

    cfg = tmp_path / "m.yaml"
    cfg.write_text(
        "env_options: {size: tiny}\nworkflows: [react, direct]\nmodels: [scripted/oracle]\n"
        "tasks: scholar-ks\ntasks_per_family: 2\n"
    )
    runs = tmp_path / "runs"
    command = ["run", "--config", str(cfg), "--log-dir", str(runs), "--display", "none"]
    first = runner.invoke(app, command)
    assert first.exit_code == 0, first.output
    react = runs / "scholar__react__scripted_oracle__scholar-ks"
    reports = [react / "report.html", runs / "matrix-report.html"]
    assert "kept" not in first.output and all(p.exists() for p in reports)
    # an hour ago, as a report made in an earlier chunk would be
    old = [p.stat().st_mtime_ns - 3600 * 10**9 for p in reports]
    for path, when in zip(reports, old, strict=True):
        os.utime(path, ns=(when, when))
    for path in (react / RESULTS, react / "tasks.jsonl", react / "header.json"):
        os.utime(path, ns=(old[0] - 10**9, old[0] - 10**9))
    direct = runs / "scholar__direct__scripted_oracle__scholar-ks"
    for path in direct.iterdir():
        os.utime(path, ns=(old[0] - 10**9, old[0] - 10**9))

    second = runner.invoke(app, command)
    assert second.exit_code == 0, second.output
    assert second.output.count("(kept: nothing in the run changed)") == 2
    assert "matrix-report.html (kept: no cell changed since it was written)" in second.output
    assert [p.stat().st_mtime_ns for p in reports] == old

    # one cell's results rewritten since (as `raleval score` does): its report and the
    # matrix report are drawn again, the other cell's is kept
    os.utime(react / RESULTS)
    third = runner.invoke(app, command)
    assert third.exit_code == 0, third.output
    assert third.output.count("(kept: nothing in the run changed)") == 1
    assert "matrix report" in third.output and "no cell changed" not in third.output
    assert all(p.stat().st_mtime_ns > when for p, when in zip(reports, old, strict=True))


def test_a_matrix_stops_a_model_server_after_the_last_cell_that_uses_it(monkeypatch):
    """Cells run one after another: an embedded model's server is stopped once no later cell
    asks for that model (with those options), so a study of three models never holds three
    servers (their memory, and a busy-server warning when the next one starts)."""
    from types import SimpleNamespace

    import raleval.app.cli.run as run_cli
    import raleval.app.runner as runner_mod

    events: list[str] = []

    def cell(name: str, model: str, **options: str) -> SimpleNamespace:
        return SimpleNamespace(name=name, model=model, model_options=options)

    monkeypatch.setattr(
        run_cli,
        "_run_one",
        lambda cfg, display, deadline: (events.append(cfg.name), (True, True))[1],
    )
    monkeypatch.setattr(runner_mod, "stop_child_processes", lambda: events.append("stop"))
    import raleval.app.plan as plan_mod

    monkeypatch.setattr(plan_mod, "check_config", lambda cfg: None)  # the cells are stand-ins
    monkeypatch.setattr(plan_mod, "resolve_config", lambda cfg: cfg)
    run_cli._run_all(
        [
            cell("a", "local/qwen2.5-0.5b"),
            cell("b", "local/smollm2-135m"),
            cell("c", "local/qwen2.5-0.5b"),
            cell("d", "local/qwen2.5-0.5b", threads="1"),  # other options: another server
            cell("e", "local/qwen2.5-0.5b", threads="1"),
        ],
        "none",
    )
    assert events == ["a", "b", "stop", "c", "stop", "d", "e", "stop"]


def test_run_chunk_resumes_a_cell_a_session_left_unfinished_on_a_new_machine(tmp_path):
    """``studies/run_chunk.sh`` on a clone with no runs/: it restores the study's finished
    cells and, from ``studies/<study>.partial/``, the episodes of a cell an earlier chunk left
    unfinished; it runs only the missing episodes, then stores the cell with the finished ones
    and removes its unfinished copy (a cell longer than a session once lost its episodes with
    the machine)."""
    import shutil
    import subprocess

    from raleval.analysis.runs import load_run

    from .conftest import finished_and_half_cells, script_env

    root = tmp_path / "clone"
    (root / "studies").mkdir(parents=True)
    shutil.copy(STUDY.parent / "run_chunk.sh", root / "studies" / "run_chunk.sh")
    (root / "studies" / "s.yaml").write_text(
        "env_options: {size: tiny}\nworkflows: [react, direct]\nmodels: [scripted/oracle]\n"
        "tasks: scholar-ks\ntasks_per_family: 3\n"
    )
    wiki = root / "runs" / "study-data" / "hotpot-wiki.sqlite"  # the script builds it if absent
    wiki.parent.mkdir(parents=True)
    wiki.touch()
    # an earlier machine: one cell finished, one with 2 of its episodes, stored by a chunk
    done, half = finished_and_half_cells(tmp_path / "old", tmp_path / "other")
    study, apart = root / "studies" / "s", root / "studies" / "s.partial"
    result = runner.invoke(
        app,
        ["study", "store", str(tmp_path / "old"), "--into", str(study),
         "--unfinished-into", str(apart)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert [p.name for p in apart.iterdir()] == [half.run_dir.name]
    kept = (study / done.run_dir.name / "results.jsonl.gz").read_bytes()

    chunk = subprocess.run(
        ["bash", str(root / "studies" / "run_chunk.sh"), "s"],
        capture_output=True, text=True, env=script_env(), timeout=300,
    )  # fmt: skip
    assert chunk.returncode == 0, chunk.stdout + chunk.stderr
    assert "1 episodes run, 2 already done" in chunk.stdout, chunk.stdout
    assert sorted(p.name for p in study.iterdir()) == sorted([done.run_dir.name, half.run_dir.name])
    assert not apart.exists()
    assert (study / done.run_dir.name / "results.jsonl.gz").read_bytes() == kept
    stored = load_run(study / half.run_dir.name)
    assert len(stored.results) == len(stored.tasks) == 3


def test_run_chunk_carries_the_studys_response_cache_to_a_new_machine(tmp_path):
    """A study keeping a response cache (``runs/study-<study>-responses.sqlite``) exports it to
    ``studies/<study>.responses.jsonl.gz`` at a chunk's end and imports it at the next chunk's
    start: on a new machine the same requests are answered from it, not sent again."""
    import shutil
    import subprocess

    from raleval.analysis.runs import load_run

    from .conftest import script_env
    from .stub_openai import StubServer

    root = tmp_path / "clone"
    (root / "studies").mkdir(parents=True)
    shutil.copy(STUDY.parent / "run_chunk.sh", root / "studies" / "run_chunk.sh")
    stub = StubServer().__enter__()
    (root / "studies" / "s.yaml").write_text(
        f"env_options: {{size: tiny}}\nworkflow: react\n"
        f"models: ['openai-compatible/ok@{stub.base_url}']\n"
        "tasks: scholar-ks\ntasks_per_family: 2\n"
        "cache: true\ncache_path: runs/study-s-responses.sqlite\n"
    )
    wiki = root / "runs" / "study-data" / "hotpot-wiki.sqlite"  # the script builds it if absent
    wiki.parent.mkdir(parents=True)
    wiki.touch()

    def chunk() -> None:
        done = subprocess.run(
            ["bash", str(root / "studies" / "run_chunk.sh"), "s"],
            capture_output=True, text=True, env=script_env(), timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr

    def calls(study: Path) -> list[bool]:
        (cell,) = study.iterdir()
        return [c.cache_hit for t in load_run(cell).results for c in t.llm_calls]

    try:
        chunk()
        sent = stub.counts["ok"]
        exported = root / "studies" / "s.responses.jsonl.gz"
        first = calls(root / "studies" / "s")
        assert first and not any(first) and sent == len(first)  # every call went to the model
        assert len(gzip.decompress(exported.read_bytes()).splitlines()) == len(first)

        # a new machine: no runs/, and the cell itself taken away so its episodes run again
        shutil.rmtree(root / "runs" / "study-s")
        (root / "runs" / "study-s-responses.sqlite").unlink()
        shutil.rmtree(root / "studies" / "s")
        before = exported.read_bytes()
        chunk()
        again = calls(root / "studies" / "s")
        assert len(again) == len(first) and all(again)  # answered from the carried cache
        assert stub.counts["ok"] == sent  # and no request sent again
        assert exported.read_bytes() == before  # nothing new to add
    finally:
        stub.__exit__(None, None, None)


def test_no_stored_cell_is_kept_as_unfinished_too():
    """A cell finished since a chunk kept it unfinished leaves ``studies/<study>.partial/``
    (run_chunk.sh's store removes it); a stale copy left in the repository would be restored
    on a new machine beside the finished one."""
    studies = STUDY.parent
    for apart in studies.glob("*.partial"):
        finished = studies / apart.name.removesuffix(".partial")
        both = sorted(
            p.name for p in apart.iterdir() if (finished / p.name / "results.jsonl.gz").exists()
        )
        assert not both, f"{apart.name} still holds finished cells: {both}"
