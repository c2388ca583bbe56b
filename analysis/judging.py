"""Judge verdicts beside rule verdicts: what ``raleval score --judge`` stored in a run's
``scores.jsonl``, and how often the judge agrees with the rules on that run.

Reads stored files only; the judging itself happens in ``raleval score`` (the app layer).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from raleval.grading.agreement import ACCURATE, HALLUCINATED, MISSING, cohen_kappa

SCORES = "scores.jsonl"
RULE_VERDICTS = {1.0: ACCURATE, 0.0: MISSING, -1.0: HALLUCINATED}


def rule_verdict(crag_points: float | None) -> str | None:
    """The rules' three-way verdict from a stored CRAG score (+1 / 0 / -1)."""
    return None if crag_points is None else RULE_VERDICTS.get(float(crag_points))


@dataclass
class JudgedRun:
    """The judge's verdicts on one run, keyed by (task id, epoch)."""

    spec: str
    prompt_version: str
    kappa: float | None  # measured on the validation set (None: never validated)
    verdicts: dict[tuple[str, int], dict[str, str | None]] = field(default_factory=dict)

    def pairs(self) -> list[tuple[str, str]]:
        """(rule verdict, judge verdict) of every episode the judge graded."""
        return [
            (v["rule"], v["judge"])
            for v in self.verdicts.values()
            if v.get("rule") is not None and v.get("judge") is not None
        ]

    def agreement(self) -> tuple[int, float | None, float | None]:
        """Episodes compared, share where judge and rules agree, and their Cohen's kappa."""
        pairs = self.pairs()
        if not pairs:
            return 0, None, None
        same = sum(a == b for a, b in pairs) / len(pairs)
        return len(pairs), same, cohen_kappa([a for a, _ in pairs], [b for _, b in pairs])

    def confusion(self) -> Counter[tuple[str, str]]:
        return Counter(self.pairs())


def load_judged(run_dir: Path) -> JudgedRun | None:
    """The judge verdicts ``raleval score --judge`` wrote into ``run_dir``, if any."""
    path = Path(run_dir) / SCORES
    if not path.exists():
        return None
    judged: JudgedRun | None = None
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        j = row.get("judge") if isinstance(row, dict) else None
        if not isinstance(j, dict):
            continue
        if judged is None:
            judged = JudgedRun(str(j.get("spec")), str(j.get("prompt_version")), j.get("kappa"))
        key = (str(row.get("task_id")), int(row.get("epoch") or 0))
        judged.verdicts[key] = {"judge": j.get("verdict"), "rule": j.get("rule_verdict")}
    return judged


def judge_section(runs: list) -> str:
    """The report's "judge beside the rules" section: per run, the judge's spec, prompt
    version and validated kappa, how often it agrees with the rules on that run (share and
    kappa), and the verdict pairs; empty when no run was scored with a judge."""
    import html

    parts = []
    for run in runs:
        judged = load_judged(run.path)
        if judged is None:
            continue
        n, same, kappa = judged.agreement()
        head = (
            f"<h3>{html.escape(run.system)}</h3><p>judge <b>{html.escape(judged.spec)}</b> "
            f"(prompt {html.escape(judged.prompt_version)}; kappa against the truth on the "
            f"validation set: {_fmt(judged.kappa)}); agreement with the rules on this run: "
            f"{_fmt(same)} of {n} episode(s), kappa {_fmt(kappa)}</p>"
        )
        cells = judged.confusion()
        rows = "".join(
            f"<tr><td>rules: {r}</td>"
            + "".join(f"<td>{cells.get((r, j), 0)}</td>" for j in (ACCURATE, MISSING, HALLUCINATED))
            + "</tr>"
            for r in (ACCURATE, MISSING, HALLUCINATED)
        )
        table = (
            "<table><thead><tr><th></th><th>judge: accurate</th><th>judge: missing</th>"
            f"<th>judge: hallucinated</th></tr></thead><tbody>{rows}</tbody></table>"
        )
        parts.append(head + table)
    if not parts:
        return ""
    return "<h2>Judge verdicts beside the rule verdicts</h2>" + "".join(parts)


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"
