"""``python -m raleval`` is the ``raleval`` command."""

from raleval.app.cli import main

main()
