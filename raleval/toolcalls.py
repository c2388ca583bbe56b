"""Tool calls written into message text (``{"name": ..., "arguments": {...}}``, possibly in a
code fence or ``<tool_call>`` tags), as Qwen models served by llama.cpp return them, or as
the tool's name applied to its JSON arguments (``Search({"entity": "X"})``)."""

from __future__ import annotations

import json
import re
from typing import Any

from raleval.records import ToolCall

_DECODER = json.JSONDecoder()


MAX_ATTEMPTS = 64  # decoding attempts per text: each may read to the end of the text


def _objects(text: str) -> list[tuple[int, Any]]:
    """(start, value) of every JSON value that opens with ``{`` in ``text``, in order."""
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
        found.append((i, obj))
        i = text.find("{", end)
    return found


# A call written as the tool's name applied to its JSON arguments, ``Search({"entity": "X"})``:
# how raleval itself shows calls to a model (a planned workflow's "Information found" lines,
# a transcript's "-> Search({...})"), so models write them back that way.
_CALL_KEYS = {"arguments", "parameters", "function"}  # an object that is a whole call, not args
# A call object carries its arguments (Qwen's ``{"name", "arguments"}``, raleval's plans'
# ``{"tool", "arguments"}``) or its function (OpenAI's ``{"id", "type", "function"}``); other
# keys may ride along (models add the ``"function_output"`` they imagine). An object with a
# ``name`` and none of those is data, not a call: a model that writes a tool's result after its
# call (``searchPerson({...}): [{"person_id": ..., "name": "X", ...}]``) writes such records.
_NAME_BEFORE = re.compile(r"([A-Za-z_][A-Za-z0-9_.]{0,63})\(\s*$")


def tool_calls_from_content(text: str) -> list[ToolCall]:
    """Every JSON object in ``text`` shaped like a function call, in order."""
    calls = []
    for start, obj in _objects(text):
        if not isinstance(obj, dict):
            continue
        if not _CALL_KEYS & obj.keys():
            applied = _NAME_BEFORE.search(text, max(0, start - 80), start)
            if applied is not None:  # Search({"entity": "X"}): the object is the arguments
                calls.append(ToolCall(tool=applied.group(1), arguments=obj))
            continue  # else a record (a person, a page), not a call
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


def is_calls_only(text: str) -> bool:
    """Whether ``text`` is nothing but JSON holding calls (one value, as decoding constrained
    to the tools' schemas writes it): a reply whose text is its calls, which a server's native
    tool calls would return as the calls alone, with no text."""
    stripped = text.strip()
    if not stripped.startswith(("{", "[")):
        return False
    try:
        json.loads(stripped)
    except (ValueError, RecursionError):
        return False
    return bool(tool_calls_from_content(stripped))
