"""A smolagents ``ToolCallingAgent``, evaluated by raleval as it is.

    pip install "smolagents>=1.20,<2"
    raleval run --env scholar -E size=tiny --model scripted/oracle \
        --workflow agent:examples/agents/smolagents_tools.py:make_agent

smolagents is synchronous: the agent is returned as a plain function, which raleval runs in a
worker thread; the tools and the chat model it is handed hop back to the episode's event loop,
and record every call there. What is here is only the glue smolagents needs: its ``Tool`` and
``Model`` classes around the LangChain tools and chat model of the episode.
"""

from __future__ import annotations

import uuid
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from smolagents import Model, Tool, ToolCallingAgent
from smolagents.models import (
    ChatMessage,
    ChatMessageToolCall,
    ChatMessageToolCallFunction,
    MessageRole,
    get_tool_json_schema,
)

# JSON-schema types smolagents accepts for a tool's input
_TYPES = {"string", "boolean", "integer", "number", "array", "object"}


def smol_tool(lc_tool: Any) -> Tool:
    """A smolagents ``Tool`` that calls one of the episode's LangChain tools."""
    schema = lc_tool.args_schema  # the tool's JSON schema (raleval hands it as a dict)
    required = set(schema.get("required", []))
    inputs = {}
    for name, prop in schema.get("properties", {}).items():
        types = [o.get("type") for o in prop.get("anyOf", [prop])]
        kind = next((t for t in types if t in _TYPES), "string")
        inputs[name] = {"type": kind, "description": prop.get("description", name)}
        if name not in required:
            inputs[name]["nullable"] = True

    class EpisodeTool(Tool):
        skip_forward_signature_validation = True

        def forward(self, **kwargs: Any) -> str:
            given = {k: v for k, v in kwargs.items() if v is not None}
            return lc_tool.invoke(given)

    EpisodeTool.name = lc_tool.name
    EpisodeTool.description = lc_tool.description
    EpisodeTool.inputs = inputs
    EpisodeTool.output_type = "string"
    return EpisodeTool()


def _text(message: ChatMessage) -> str:
    content = message.content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if part.get("type") == "text")
    return content or ""


class EpisodeModel(Model):
    """smolagents' ``Model`` around the episode's LangChain chat model. A reply without a tool
    call is the final answer (as LangGraph's loop takes it)."""

    def __init__(self, chat_model: Any) -> None:
        super().__init__(model_id="raleval-episode")
        self.chat_model = chat_model
        self.issued: list[list[dict[str, Any]]] = []  # the tool calls of each reply, in order

    def _langchain_messages(self, messages: list[ChatMessage]) -> list[Any]:
        out: list[Any] = []
        calls_seen = 0
        last_ids: list[str] = []
        for m in messages:
            role, text = MessageRole(m.role), _text(m)
            if role == MessageRole.SYSTEM:
                out.append(SystemMessage(text))
            elif role == MessageRole.USER:
                out.append(HumanMessage(text))
            elif role == MessageRole.ASSISTANT:
                out.append(AIMessage(text))
            elif role == MessageRole.TOOL_CALL and calls_seen < len(self.issued):
                calls = self.issued[calls_seen]
                calls_seen += 1
                last_ids = [c["id"] for c in calls]
                content = out.pop().content if out and isinstance(out[-1], AIMessage) else ""
                out.append(AIMessage(content=content, tool_calls=calls))
            elif role == MessageRole.TOOL_RESPONSE and last_ids:
                out.append(ToolMessage(text, tool_call_id=last_ids[0]))
                for extra in last_ids[1:]:  # smolagents answers a reply's calls in one message
                    out.append(ToolMessage("(see above)", tool_call_id=extra))
                last_ids = []
            else:
                out.append(HumanMessage(text))
        return out

    def generate(
        self,
        messages: list[ChatMessage],
        stop_sequences: list[str] | None = None,
        response_format: Any = None,
        tools_to_call_from: list[Tool] | None = None,
        **kwargs: Any,
    ) -> ChatMessage:
        schemas = [get_tool_json_schema(t) for t in tools_to_call_from or []]
        schemas = [s for s in schemas if s["function"]["name"] != "final_answer"]
        model = self.chat_model.bind_tools(schemas) if schemas else self.chat_model
        reply = model.invoke(self._langchain_messages(messages), stop=stop_sequences)
        calls = [dict(c, id=c.get("id") or f"call_{uuid.uuid4().hex}") for c in reply.tool_calls]
        text = reply.content if isinstance(reply.content, str) else str(reply.content)
        if not calls:  # the answer
            calls = [{"name": "final_answer", "args": {"answer": text.strip()}, "id": "final"}]
        self.issued.append(calls)
        return ChatMessage(
            role=MessageRole.ASSISTANT,
            content=text,
            tool_calls=[
                ChatMessageToolCall(
                    function=ChatMessageToolCallFunction(name=c["name"], arguments=c["args"]),
                    id=c["id"],
                    type="function",
                )
                for c in calls
            ],
        )


def make_agent(episode: Any) -> Any:
    """smolagents' tool-calling agent over the episode's tools and model, as a function of the
    question (run in a thread by raleval)."""
    agent = ToolCallingAgent(
        tools=[smol_tool(t) for t in episode.tools],
        model=EpisodeModel(episode.model),
        max_steps=10,
        verbosity_level=0,
        instructions=episode.system_prompt,
    )
    return lambda question: str(agent.run(question))
