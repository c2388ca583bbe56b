"""Tool calls written into message text (``{"name": ..., "arguments": {...}}``, possibly in a
code fence or ``<tool_call>`` tags), as Qwen models served by llama.cpp return them."""

from __future__ import annotations

import json
from typing import Any

from raleval.records import ToolCall

_DECODER = json.JSONDecoder()


MAX_ATTEMPTS = 64  # decoding attempts per text: each may read to the end of the text


def _objects(text: str) -> list[Any]:
    found = []
    attempts = 0
    i = text.find("{")
    while i != -1 and len(found) < 16 and attempts < MAX_ATTEMPTS:
        attempts += 1
        try:
            obj, end = _DECODER.raw_decode(text, i)
        except (ValueError, RecursionError):
            i = text.find("{", i + 1)
            continue
        found.append(obj)
        i = text.find("{", end)
    return found


def tool_calls_from_content(text: str) -> list[ToolCall]:
    """Every JSON object in ``text`` shaped like a function call, in order."""
    calls = []
    for obj in _objects(text):
        if not isinstance(obj, dict):
            continue
        fn = obj.get("function") if isinstance(obj.get("function"), dict) else obj
        name = fn.get("name", fn.get("tool"))
        args = fn.get("arguments", fn.get("parameters", {}))
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except (ValueError, RecursionError):
                args = {"_raw": args}
        if isinstance(name, str) and name and isinstance(args, dict):
            calls.append(ToolCall(tool=name, arguments=args))
    return calls
