"""The error an optional dependency's absence raises: its message names the extra to install."""

from __future__ import annotations


class MissingExtraError(ImportError):
    """An optional dependency is not installed; the message names the extra that installs it."""
