"""``python -m raleval`` is the ``raleval`` command."""

from raleval.cli import main

main()
