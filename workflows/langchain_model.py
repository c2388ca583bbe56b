"""Any raleval model behind LangChain's chat-model interface (``bind_tools`` included).

Every provider (openai, openai-compatible, local, hf, vllm, scripted) is usable wherever LangChain
expects a chat model; the native function-calling workflow binds tools through it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from raleval.model import GenerateRequest, Generation, Message
from raleval.records import ToolCall
from raleval.workflows.call_ids import reply_call_ids

GenerateFn = Callable[[GenerateRequest], Awaitable[Generation | None]]


def to_raleval_messages(messages: Sequence[BaseMessage]) -> tuple[Message, ...]:
    out = []
    for m in messages:
        role = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}.get(
            m.type, "user"
        )
        content = m.content if isinstance(m.content, str) else str(m.content)
        lc_calls = getattr(m, "tool_calls", None) or []
        calls = tuple(ToolCall(tool=c["name"], arguments=c.get("args") or {}) for c in lc_calls)
        ids = tuple(str(c.get("id") or "") for c in lc_calls)
        out.append(
            Message(
                role,
                content,
                calls,
                getattr(m, "tool_call_id", None),
                ids if all(ids) else (),
            )
        )
    return tuple(out)


class RalevalChatModel(BaseChatModel):
    """Wraps an async ``generate`` (usually the episode recorder's) as a LangChain chat model.

    A failed call (``generate`` returned ``None``) comes back as an AIMessage with
    ``response_metadata["raleval_failed"] = True``; the failure itself is already recorded.
    """

    generate_fn: Any
    max_tokens: int = 128
    temperature: float = 0.0

    @property
    def _llm_type(self) -> str:
        return "raleval"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        schemas = [convert_to_openai_tool(t) for t in tools]
        return self.bind(tools=schemas, **kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        raise NotImplementedError("raleval models are async; use ainvoke")

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        request = GenerateRequest(
            messages=to_raleval_messages(messages),
            stop=tuple(stop or ()),
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            tools=tuple(kwargs.get("tools") or ()),
        )
        gen = await self.generate_fn(request)
        if gen is None:
            msg = AIMessage(content="", response_metadata={"raleval_failed": True})
        else:
            # the provider's ids where it gave usable ones, else ids of the reply's position:
            # the tool messages answer these, in this request's successors and in replays
            earlier = [m for m in messages if isinstance(m, AIMessage)]
            taken = [str(c.get("id")) for m in earlier for c in m.tool_calls if c.get("id")]
            n = len(gen.tool_calls)
            given = (list(gen.tool_call_ids) + [""] * n)[:n]  # one per call, whatever was given
            ids = reply_call_ids(given, len(earlier), taken)
            msg = AIMessage(
                content=gen.text,
                tool_calls=[
                    {"name": c.tool, "args": c.arguments, "id": call_id, "type": "tool_call"}
                    for c, call_id in zip(gen.tool_calls, ids, strict=True)
                ],
            )
        return ChatResult(generations=[ChatGeneration(message=msg)])


__all__ = ["BaseTool", "RalevalChatModel", "ToolMessage", "to_raleval_messages"]
