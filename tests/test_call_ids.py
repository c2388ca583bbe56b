"""Tool-call ids (raleval.workflows.call_ids): the provider's kept, positions where it gave none,
never random, never a hostile server's id echoed back."""

from __future__ import annotations

from raleval.agents.openai_compat import to_openai_messages
from raleval.model import Message
from raleval.records import ToolCall
from raleval.workflows.call_ids import position_id, reply_call_ids


def test_the_providers_ids_are_kept() -> None:
    assert reply_call_ids(["call_abc", "chatcmpl-tool-9"], 3) == ["call_abc", "chatcmpl-tool-9"]


def test_missing_ids_are_the_calls_positions() -> None:
    assert reply_call_ids(["", None], 2) == ["call_2_0", "call_2_1"]
    assert reply_call_ids(["", ""], 2) == reply_call_ids(["", ""], 2)  # never random
    assert position_id(0, 0) == "call_0_0"


def test_unusable_and_repeated_ids_are_replaced() -> None:
    hostile = "x" * 100_000
    assert reply_call_ids([hostile, "a b", "call_1"], 4, taken=["call_1"]) == [
        "call_4_0",
        "call_4_1",
        "call_4_2",
    ]
    assert reply_call_ids(["same", "same"], 0) == ["same", "call_0_1"]
    # a provider that used the derived form already: still unique in the episode
    assert reply_call_ids([""], 1, taken=["call_1_0"]) == ["call_1_0_1"]


def test_a_message_without_ids_takes_those_its_tool_messages_answer() -> None:
    call = ToolCall(tool="searchPerson", arguments={"name": "Ada"})
    sent = to_openai_messages(
        (
            Message("user", "q"),
            Message("assistant", "", (call, call)),
            Message("tool", "r1", tool_call_id="c7"),
            Message("tool", "r2", tool_call_id="c8"),
        )
    )
    assert [c["id"] for c in sent[1]["tool_calls"]] == ["c7", "c8"]
    assert sent[1]["tool_calls"][0]["function"]["arguments"] == '{"name": "Ada"}'
