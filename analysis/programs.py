"""Whether a program's answer reads what its tools returned: data flow in a model-written
program (PAL), from the stored program text alone.

R-Eval counts an answer as Exact Match when "the scratchpad contributes to the final
response". In a ReAct episode the model reads every observation before it answers; a PAL
program is written before any tool has returned, and its tool results reach the answer only
through the program's variables. ``final_result = 'yes'`` written as a literal takes nothing
from the results, whatever they say. :func:`answer_reads_tools` follows the assignments
(and the branches and loops that decide them) from the tool calls to ``final_result``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

from raleval.records import Trajectory

ANSWER_VARIABLE = "final_result"  # what a PAL program must set (workflows/pal.py)


def answer_program(trajectory: Trajectory) -> str | None:
    """The program that computed the episode's answer: the text of a step's thought that
    parses as Python and assigns ``final_result``, or None for an episode of any other kind."""
    for step in reversed(trajectory.steps):
        if step.thought and ANSWER_VARIABLE in step.thought and _assigns_answer(step.thought):
            return step.thought
    return None


# what parsing a hostile program (nested ten thousand deep, NUL bytes) raises
_UNREADABLE = (SyntaxError, ValueError, RecursionError, MemoryError)


def _assigns_answer(program: str) -> bool:
    try:
        tree = ast.parse(program)
    except _UNREADABLE:
        return False
    return any(ANSWER_VARIABLE in _targets(node) for node in ast.walk(tree))


def _targets(node: ast.AST) -> set[str]:
    """The variable names a statement binds (the base name of ``d['k'] = ...`` too)."""
    if isinstance(node, ast.Assign):
        targets: Iterable[ast.AST] = node.targets
    elif isinstance(
        node,
        (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.comprehension, ast.NamedExpr),
    ):
        targets = [node.target]
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        targets = [i.optional_vars for i in node.items if i.optional_vars is not None]
    else:
        return set()
    names: set[str] = set()
    for target in targets:
        while isinstance(target, (ast.Subscript, ast.Attribute, ast.Starred)):
            target = target.value
        names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
    return names


def _names(node: ast.AST | None) -> set[str]:
    """Every name an expression (or statement) reads or calls."""
    if node is None:
        return set()
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def answer_reads_tools(program: str, tools: Iterable[str]) -> bool:
    """Whether ``final_result`` depends on a call of one of ``tools``: assigned from an
    expression that calls one or reads a variable that does, or assigned inside a branch, loop
    or ``try`` whose test, iterable or body does (``if r0: final_result = 'yes'``). A function
    the program defines is a source when its body calls a tool. A program that does not parse
    is taken to read them (nothing to show otherwise)."""
    try:
        return _reads(ast.parse(program), set(tools))
    except _UNREADABLE:
        return True


def _reads(tree: ast.Module, tainted: set[str]) -> bool:
    # a function defined in the program is a source when its body reaches a source
    for _ in range(8):  # to a fixed point: functions calling functions
        grown = {
            node.name
            for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _names(node) & tainted
        }
        assigned = _flow(tree.body, tainted | grown, frozenset())
        if assigned <= tainted:
            break
        tainted |= assigned
    return ANSWER_VARIABLE in tainted


def _flow(body: list[ast.stmt], tainted: set[str], context: frozenset[str]) -> set[str]:
    """The names ``body`` binds from a tainted value, directly or under a tainted condition
    (``context`` holds the names the enclosing tests read). Runs in program order and grows
    ``tainted`` as it goes; the caller iterates to a fixed point for loops."""
    out: set[str] = set()
    current = set(tainted)
    for stmt in body:
        implicit = bool(context & current)
        if isinstance(stmt, (ast.If, ast.While)):
            inner = context | _names(stmt.test)
            out |= _flow(stmt.body + stmt.orelse, current, frozenset(inner))
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            inner = context | _names(stmt.iter)
            if implicit or _names(stmt.iter) & current:
                out |= _targets(stmt)
            out |= _flow(stmt.body + stmt.orelse, current | out, frozenset(inner))
        elif isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
            # a handler runs because the body raised: what it sets depends on the body's calls
            body_reads = set().union(*(_names(s) for s in stmt.body)) if stmt.body else set()
            out |= _flow(stmt.body, current, context)
            handlers = [s for h in stmt.handlers for s in h.body]
            out |= _flow(handlers + stmt.orelse, current | out, frozenset(context | body_reads))
            out |= _flow(stmt.finalbody, current | out, context)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            if implicit or any(_names(i.context_expr) & current for i in stmt.items):
                out |= _targets(stmt)
            out |= _flow(stmt.body, current | out, context)
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            pass  # a definition binds a callable; whether it is a source is decided above
        else:
            bound = _targets(stmt)
            walrus = [n for n in ast.walk(stmt) if isinstance(n, ast.NamedExpr)]
            for n in walrus:
                if implicit or _names(n.value) & current:
                    out |= _targets(n)
            value = getattr(stmt, "value", None)
            reads = _names(value) if value is not None else set()
            if isinstance(stmt, ast.AugAssign):
                reads |= _targets(stmt) & current
            if bound and (implicit or reads & current):
                out |= bound
            elif isinstance(stmt, ast.Expr) and _names(stmt) & current:
                # d.append(r0), d.update(...): a method call on a variable with a tainted value
                call = stmt.value
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute):
                    out |= _names(call.func.value)
        current |= out
    return out
