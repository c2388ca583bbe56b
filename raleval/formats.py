"""What counts as output the harness could not use (issue 58's "harness's share"): shared by
the recorder, which flags each model call as it records it, and the analysis, which derives
the same flags for files written before calls carried them."""

from __future__ import annotations

from raleval.records import OutcomeKind

# PAL: a program Python could not parse (one that parsed and raised is the model's logic)
UNPARSEABLE_PROGRAM = "program_error:SyntaxError"


def is_unparseable(kind: OutcomeKind, cause: str | None) -> bool:
    """Whether a step says the model's output did not parse: a ``parse_error`` step (ReAct's
    action, DFSDT's call, planned's plan, a command's reply) or a PAL program that is not
    Python (``program_error:SyntaxError``)."""
    if kind is OutcomeKind.parse_error:
        return True
    return bool(cause) and str(cause).startswith(UNPARSEABLE_PROGRAM)
