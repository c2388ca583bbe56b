"""Parse ReAct action text into a tool call, safely (``ast.literal_eval``, never ``eval``).

Arguments are read by the tool's signature. A tool with one parameter takes the whole bracket
content: ``Search[Paris, Texas]`` searches "Paris, Texas" (ReAct's own parser keeps everything
between the brackets; splitting at the comma searched "Paris"). Quotes around the content, a
``name=`` prefix naming the parameter, or a one-key JSON object naming it are unwrapped. A tool with
several parameters takes a JSON object (``{"name": "A", "organization": "B"}``), key=value pairs,
quoted or not (``searchPerson(name=Ada Lin, organization=MIT)``), or positional Python literals.

Also accepted, as ReAct implementations tolerate them: the wrong bracket style (``Search(entity)``,
``getCoauthors[abc]``), case differences in the tool name, prose or an ``Action 3:`` prefix around
the call, code fences, and several actions (the first one counts). Text holding no action raises
:class:`ActionParseError`; the ReAct workflow records it as a ``parse_error`` step (TE).
"""

from __future__ import annotations

import ast
import json
import re
import types
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Union, get_args, get_origin

from raleval.environment import ToolSpec

FINISH = "Finish"
# A name starts only where a word starts: without the look-behind every suffix of a long word
# is tried again, which is quadratic in the word's length.
_CALL_START = re.compile(r"(?<![A-Za-z0-9_])([A-Za-z_][A-Za-z0-9_]*)\s*([\[(])")
_PREFIX = re.compile(r"^\s*(?:action\s*\d*\s*:\s*)", re.IGNORECASE)
_KWARG = re.compile(r"(?:^|,)\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*")
_CLOSE = {"[": "]", "(": ")"}
# Bounds that keep parsing linear in the reply's length whatever it holds: a call's arguments
# are searched for their closing bracket over at most MAX_ARGUMENT_CHARS, and at most
# MAX_CANDIDATES call-shaped spans are examined ("a(a(a(..." has one per two characters).
MAX_ARGUMENT_CHARS = 20_000
MAX_CANDIDATES = 256


@dataclass(frozen=True)
class ParsedAction:
    """A parsed action: a tool call, or ``Finish`` with ``answer``."""

    tool: str
    arguments: dict[str, Any]
    raw: str

    @property
    def is_finish(self) -> bool:
        return self.tool == FINISH

    @property
    def answer(self) -> str:
        return str(self.arguments.get("answer", ""))


class ActionParseError(ValueError):
    """The text holds no recognisable action."""


def _balanced_end(text: str, open_at: int, quotes: bool = True) -> int:
    """Index of the bracket closing ``text[open_at]``; the end of the text (or of the
    ``MAX_ARGUMENT_CHARS`` searched) if it never closes.

    Quoted strings hide brackets inside ``(...)``; an apostrophe that never closes
    (``searchPublication(Arthur's Magazine)``) is prose, so the scan is repeated without quotes.
    """
    opener = text[open_at]
    closer = _CLOSE[opener]
    depth = 0
    quote: str | None = None
    escaped = False
    stop = min(len(text), open_at + MAX_ARGUMENT_CHARS)
    for i in range(open_at, stop):
        ch = text[i]
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = None
            continue
        if quotes and ch in "\"'" and opener == "(":
            quote = ch
        elif ch == opener:
            depth += 1
        elif ch == closer:
            depth -= 1
            if depth == 0:
                return i
    if quote is not None and quotes:  # at most one rescan: the cost stays linear
        return _balanced_end(text, open_at, quotes=False)
    return stop


def _strip_quotes(value: str) -> str:
    value = value.strip().rstrip(",").strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def _plain(value: Any) -> bool:
    """Whether a literal is plain JSON data: ``...``, bytes, complex numbers and sets are
    Python literals too, but no tool takes them and a trajectory could not record them."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return True
    if isinstance(value, (list, tuple)):
        return all(_plain(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    return False


def _literal(node: ast.AST) -> Any:
    try:
        value = ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return ast.unparse(node)
    return value if _plain(value) else ast.unparse(node)


def _is_literal(node: ast.AST) -> bool:
    try:
        return _plain(ast.literal_eval(node))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False


def _object(text: str) -> dict[str, Any] | None:
    """``text`` read as a JSON (or Python) object with string keys and plain values, else None."""
    if not (text.startswith("{") and text.endswith("}")) or len(text) >= 2000:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return None
    if isinstance(value, dict) and _plain(value):
        return value
    return None


def _takes_text(annotation: Any) -> bool:
    """Whether a parameter annotated ``annotation`` is plain text (``str`` or ``str | None``)."""
    if annotation is str:
        return True
    args = [a for a in get_args(annotation) if a is not type(None)]
    return get_origin(annotation) in (Union, types.UnionType) and args == [str]


def _string_literal(text: str) -> str | None:
    if len(text) >= 2 and text[0] in "\"'" and len(text) < 2000:
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return None
        return value if isinstance(value, str) else None
    return None


_KEYWORD = re.compile(r"([A-Za-z_]\w*)\s*=\s*")


def parse_single_argument(inner: str, name: str, annotation: Any = str) -> dict[str, Any]:
    """The whole bracket content as the one argument ``name`` of a one-parameter tool."""
    text = inner.strip()
    if not text:
        return {}
    obj = _object(text)
    if obj is not None and len(obj) == 1 and next(iter(obj)).lower() == name.lower():
        value = next(iter(obj.values()))
        if _takes_text(annotation) and not isinstance(value, str):
            value = json.dumps(value, ensure_ascii=False)
        return {name: value}
    prefix = re.match(rf"{re.escape(name)}\s*[=:]\s*", text, re.IGNORECASE)
    if prefix:
        text = text[prefix.end() :].strip()
    else:
        other = _KEYWORD.match(text)
        written = _string_literal(text[other.end() :].strip()) if other else None
        if other and written is not None:
            # another parameter's name (a misspelling): passed on as written, for the tool
            # to refuse, rather than searched for as text
            return {other.group(1): written}
    quoted = _string_literal(text)
    if quoted is not None:
        return {name: [quoted] if get_origin(annotation) is list else quoted}
    if not _takes_text(annotation) and len(text) < 2000:
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            value = None
        if value is not None and _plain(value):
            if isinstance(value, tuple):
                value = list(value)
            if get_origin(annotation) is list and not isinstance(value, list):
                value = [value]
            return {name: value}
    return {name: _strip_quotes(text)}


def parse_arguments(inner: str, param_names: Sequence[str]) -> dict[str, Any]:
    """Turn the text between brackets into keyword arguments for a tool with several
    parameters (or an unknown tool)."""
    inner = inner.strip()
    if not inner:
        return {}
    obj = _object(inner)
    if obj is not None:
        return obj
    if len(inner) < 2000:  # bound the parser's work on adversarial input
        try:
            tree = ast.parse(f"_f({inner})", mode="eval")
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            tree = None
        if tree is not None and isinstance(tree.body, ast.Call):
            call = tree.body
            if len(call.args) == 1 and not call.keywords and not _is_literal(call.args[0]):
                # One bare expression, e.g. Search[Paris (mythology)]: text, not code.
                first = param_names[0] if param_names else "arg0"
                return {first: _strip_quotes(inner)}
            args: dict[str, Any] = {}
            for i, node in enumerate(call.args):
                if isinstance(node, ast.Starred):
                    break
                key = param_names[i] if i < len(param_names) else f"arg{i}"
                args[key] = _literal(node)
            else:
                for kw in call.keywords:
                    if kw.arg is None:
                        break
                    args[kw.arg] = _literal(kw.value)
                else:
                    return args
    # Unquoted values: split on "key=" markers (name=Ada Lin, organization=MIT).
    marks = list(_KWARG.finditer(inner))
    if marks and marks[0].start() == 0:
        out: dict[str, Any] = {}
        for j, m in enumerate(marks):
            end = marks[j + 1].start() if j + 1 < len(marks) else len(inner)
            out[m.group(1)] = _strip_quotes(inner[m.end() : end])
        return out
    first = param_names[0] if param_names else "arg0"
    return {first: _strip_quotes(inner)}


def tool_arguments(inner: str, spec: ToolSpec) -> dict[str, Any]:
    """The arguments of a call to ``spec``, read by its signature."""
    fields = spec.params.model_fields
    if len(fields) == 1:
        ((name, field),) = fields.items()
        return parse_single_argument(inner, name, field.annotation)
    return parse_arguments(inner, spec.param_names)


def parse_action(text: str, tools: Sequence[ToolSpec]) -> ParsedAction:
    """Find the first action in ``text``; raise :class:`ActionParseError` if there is none.

    A call-shaped action naming an unknown tool is returned as is, so that the environment
    reports it as misuse (``unknown_tool``) rather than as a format error.
    """
    by_lower = {t.name.lower(): t for t in tools}
    cleaned = text.replace("```python", "").replace("```", "").replace("`", "")
    unknown: ParsedAction | None = None
    candidates = 0
    for line in cleaned.splitlines():
        line = _PREFIX.sub("", line)
        for m in _CALL_START.finditer(line):
            candidates += 1
            if candidates > MAX_CANDIDATES:
                break
            name = m.group(1)
            open_at = m.end() - 1
            end = _balanced_end(line, open_at)
            inner = line[open_at + 1 : end]
            raw = line[m.start() : end + 1].strip()
            if name.lower() == "finish":
                answer = inner.strip()
                if answer.lower().startswith("answer="):
                    answer = answer[len("answer=") :]
                return ParsedAction(FINISH, {"answer": _strip_quotes(answer)}, raw)
            spec = by_lower.get(name.lower())
            if spec is not None:
                return ParsedAction(spec.name, tool_arguments(inner, spec), raw)
            if unknown is None and inner.strip() and name[0].isalpha() and m.start() == 0:
                unknown = ParsedAction(name, parse_arguments(inner, ["arg0"]), raw)
        if candidates > MAX_CANDIDATES:
            break
    if unknown is not None:
        return unknown
    raise ActionParseError(f"no action found in {text[:200]!r}")
