"""A LangChain agent (``langchain.agents.create_agent``, LangChain 1.x), evaluated by raleval
as it is.

    pip install langchain
    raleval run --env scholar -E size=tiny --model scripted/oracle \
        --workflow agent:examples/agents/langchain_agent.py:make_agent

raleval hands the factory the episode's tools and a chat model bound to ``--model``; both
record every call, so nothing here mentions raleval's records.
"""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent


def make_agent(episode: Any) -> Any:
    """The agent for one episode: LangChain's tool-calling agent, unchanged."""
    return create_agent(episode.model, episode.tools, system_prompt=episode.system_prompt)
