"""Domain environments and their tools (installed as ``raleval.envs``).

Each environment lives in its own folder (``world.py``, ``tools.py``, ``__init__.py``) and
registers a factory with :func:`raleval.registry.register_env`.
"""

from raleval.environment import Environment, ToolFault, ToolMisuse, ToolResult, ToolSpec

__all__ = ["Environment", "ToolFault", "ToolMisuse", "ToolResult", "ToolSpec"]
