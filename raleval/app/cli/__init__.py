"""The ``raleval`` command line. Every flag has a ``RALEVAL_*`` environment variable twin.

One module per group of commands; each registers its commands on the one :data:`app` of
:mod:`raleval.app.cli.base`, which also holds the exit codes and the one-line error printer.
The modules are imported in the order ``raleval --help`` lists their commands.
"""
# isort: skip_file

from raleval.app.cli.base import (
    FAILED,
    INTERRUPTED,
    OK,
    TIME_LIMIT,
    USER_ERROR,
    app,
    main,
    one_line_summaries,
)
from raleval.app.cli import run  # noqa: F401  run, retry
from raleval.app.cli import grading  # noqa: F401  audit, score, grade
from raleval.app.cli import catalog  # noqa: F401  list, models, tasks
from raleval.app.cli import views  # noqa: F401  tasks fit
from raleval.app.cli import results  # noqa: F401  report, table, compare, export
from raleval.app.cli import power  # noqa: F401  power
from raleval.app.cli import serving  # noqa: F401  serve, cache, wiki
from raleval.app.cli import diagnosis  # noqa: F401  diagnose
from raleval.app.cli import judging  # noqa: F401  judge validate
from raleval.app.cli import questeval  # noqa: F401  questeval
from raleval.app.cli import study  # noqa: F401  study store

one_line_summaries(app)

__all__ = ["FAILED", "INTERRUPTED", "OK", "TIME_LIMIT", "USER_ERROR", "app", "main"]
