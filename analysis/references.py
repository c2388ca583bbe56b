"""Which tool arguments name something an earlier result returned, as each environment
declares them (``ToolSpec.references``: a person_id, a pub_id, a ticker, a game id).

The taxonomy calls an argument made up when no earlier observation or the question held its
value (docs/taxonomy.md: TE). What counts as such an argument is the tool's declaration, not
the argument's name: CRAG's ``ticker`` is one, though it does not end in ``_id``. The
declarations are read from the environment plugin by name (its tools at ``size=tiny``; the
tools are the same at every size), once per process, so a stored run re-scores without its
world; an environment that cannot be built here (a remote server) declares none.
"""

from __future__ import annotations

import functools

from raleval import registry


@functools.cache
def declared_references(env: str) -> dict[str, tuple[str, ...]]:
    """tool name -> the arguments it declares to name an earlier result, for environment
    ``env`` (empty for an environment that is not registered or cannot be built here)."""
    if env not in registry.envs:
        return {}
    try:
        instance = registry.envs.get(env)(size="tiny")
    except Exception:  # a remote or MCP environment needs its server: nothing declared
        return {}
    return {t.name: t.references for t in instance.tools if t.references}
