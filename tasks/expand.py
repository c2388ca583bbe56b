"""LLM-assisted paraphrases of a family's surface templates, written to a file for review.

A model proposes new wordings of each question template; a proposal is kept only if it uses
exactly the template's placeholders, is a question and is new. The output is a YAML file a
person reads and copies from by hand: nothing here feeds a task generator or a benchmark.
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from raleval.model import GenerateRequest, Message

PLACEHOLDER = re.compile(r"\{(\w+)\}")
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)]|paraphrases?\s*:)\s*", re.IGNORECASE)

PROMPT = """Paraphrase a question template {k} times. Keep every placeholder in curly braces \
exactly as written ({placeholders}) and keep the meaning; use different words. Write one \
paraphrase per line and nothing else.

Template: What is the capital of {{country}}?
Paraphrases:
Which city is the capital of {{country}}?
Name the capital city of {{country}}?
Where is the seat of government of {{country}}?

Template: {template}
Paraphrases:"""


def surface_templates(family: Any, env: Any, n: int = 60, seed: int = 0) -> list[str]:
    """The family's question templates that have placeholders, in first-use order."""
    found: list[str] = []
    for task in family.generate(env, n, seed):
        template = task.metadata.get("template")
        if isinstance(template, str) and PLACEHOLDER.search(template) and template not in found:
            found.append(template)
    return found


def check_candidate(line: str, template: str) -> str | None:
    """Why a proposed template is rejected, or None if it is kept."""
    if Counter(PLACEHOLDER.findall(line)) != Counter(PLACEHOLDER.findall(template)):
        return "placeholders differ"
    if not line.rstrip().endswith("?"):
        return "not a question"
    if " ".join(line.lower().split()) == " ".join(template.lower().split()):
        return "same as the template"
    return None


def parse_candidates(text: str, template: str) -> tuple[list[str], list[dict[str, str]]]:
    """Kept and rejected proposals from a model reply (one per line; bullets and quotes go)."""
    kept: list[str] = []
    rejected: list[dict[str, str]] = []
    for raw in text.splitlines():
        line = _BULLET.sub("", raw).strip().strip("\"'` ")
        if not line or line.lower().startswith("template"):
            continue
        why = check_candidate(line, template)
        if why is None and line in kept:
            why = "duplicate"
        if why is None:
            kept.append(line)
        else:
            rejected.append({"text": line, "why": why})
    return kept, rejected


async def expand_templates(templates: list[str], model: Any, k: int = 3) -> list[dict[str, Any]]:
    out = []
    for template in templates:
        placeholders = ", ".join(f"{{{p}}}" for p in dict.fromkeys(PLACEHOLDER.findall(template)))
        prompt = PROMPT.format(k=k, placeholders=placeholders, template=template)
        request = GenerateRequest(messages=(Message("user", prompt),), max_tokens=96 * k)
        reply = await model.generate(request)
        kept, rejected = parse_candidates(reply.text, template)
        out.append({"template": template, "candidates": kept[:k], "rejected": rejected})
    return out


def write_review_file(
    path: Path, family: str, model_name: str, entries: list[dict[str, Any]]
) -> dict[str, Any]:
    document = {
        "family": family,
        "model": model_name,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "status": "proposals for review; no generator reads this file",
        "templates": entries,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=100))
    return document
