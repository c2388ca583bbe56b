"""A LangGraph prebuilt ReAct agent, evaluated by raleval as it is.

    raleval run --env scholar -E size=tiny --model scripted/oracle \
        --workflow agent:examples/agents/langgraph_react.py:make_agent

raleval hands the factory the episode's tools and a chat model bound to ``--model``; both
record every call, so nothing here mentions raleval's records.
"""

from __future__ import annotations

import warnings
from typing import Any

from langgraph.prebuilt import create_react_agent


def make_agent(episode: Any) -> Any:
    """The agent for one episode: LangGraph's prebuilt tool-calling loop, unchanged."""
    with warnings.catch_warnings():
        # LangGraph 1.x says it moved to langchain.agents.create_agent (the langchain package,
        # not installed here); the prebuilt one stays until LangGraph 2
        warnings.simplefilter("ignore", DeprecationWarning)
        return create_react_agent(episode.model, episode.tools, prompt=episode.system_prompt)
