"""Turns at the harness's work (raleval.scheduling): arrival order, waits outside the turn,
cancellation, and the places that wait outside it (the model, asynchronous tools, faults)."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import BaseModel

from raleval.environment import Environment, ToolSpec
from raleval.model import Generation, ModelBase
from raleval.scheduling import TurnModel, Turns, outside_turn, within


class NoParams(BaseModel):
    pass


async def _episodes(n: int, turns: Turns | None) -> list[str]:
    """``n`` episodes whose replies arrive together; each then does three steps of harness
    work with a loop pass between them (as LangGraph's tasks do). Returns the steps' order."""
    replies = asyncio.Event()
    order: list[str] = []

    async def episode(name: str) -> None:
        await outside_turn(replies.wait())
        for step in range(3):
            order.append(f"{name}{step}")
            await asyncio.sleep(0)

    async def in_turn(name: str) -> None:
        if turns is None:
            await episode(name)
            return
        async with turns.turn():
            await episode(name)

    running = [asyncio.ensure_future(in_turn(c)) for c in "abcd"[:n]]
    await asyncio.sleep(0.01)  # every episode waits for its reply
    replies.set()
    await asyncio.gather(*running)
    return order


def test_turns_finish_a_burst_in_arrival_order_not_round_robin():
    round_robin = asyncio.run(_episodes(4, None))
    in_turns = asyncio.run(_episodes(4, Turns(at_once=1)))
    # the loop alone advances every episode a step per pass: the first finishes last but three
    assert round_robin[:4] == ["a0", "b0", "c0", "d0"]
    assert round_robin.index("a2") > round_robin.index("d1")
    # in turns the first reply's work is done first, whole
    assert in_turns == [f"{c}{s}" for c in "abcd" for s in range(3)]


def test_no_more_than_at_once_episodes_hold_the_turn():
    async def main() -> int:
        turns, inside, most = Turns(at_once=3), 0, 0

        async def work() -> None:  # harness work with a loop pass in it
            nonlocal inside, most
            inside += 1
            most = max(most, inside)
            await asyncio.sleep(0)
            inside -= 1

        async def episode() -> None:
            async with turns.turn():
                await work()
                await outside_turn(asyncio.sleep(0.001))  # a model call
                await work()

        await asyncio.gather(*(episode() for _ in range(12)))
        return most

    assert asyncio.run(within(main(), 5)) == 3


def test_waiting_outside_the_turn_lets_the_others_run():
    async def main() -> list[str]:
        turns, said, order = Turns(at_once=1), asyncio.Event(), []

        async def waits() -> None:
            async with turns.turn():
                order.append("a waits")
                await outside_turn(said.wait())  # held inside the turn, this would deadlock
                order.append("a resumes")

        async def says() -> None:
            await asyncio.sleep(0.01)
            async with turns.turn():
                order.append("b says")
                said.set()

        await within(asyncio.gather(waits(), says()), 5)
        return order

    assert asyncio.run(main()) == ["a waits", "b says", "a resumes"]


def test_an_episode_cancelled_while_queueing_for_its_turn_leaves_the_turn_free():
    async def main() -> list[str]:
        turns, reply, order = Turns(at_once=1), asyncio.Event(), []

        async def long_turn() -> None:
            async with turns.turn():
                reply.set()  # b's reply is in while a still holds the turn
                await asyncio.sleep(0.05)
                order.append("a")

        async def cancelled() -> None:
            async with turns.turn():
                await outside_turn(reply.wait())
                order.append("b never")  # cancelled while queueing to take the turn back

        b = asyncio.ensure_future(cancelled())
        await asyncio.sleep(0.01)
        a = asyncio.ensure_future(long_turn())
        await asyncio.sleep(0.02)
        b.cancel()
        await asyncio.gather(a, b, return_exceptions=True)
        async with turns.turn():  # the turn is free again: neither leaked nor released twice
            order.append("c")
        return order

    assert asyncio.run(within(main(), 5)) == ["a", "c"]


class _SlowModel(ModelBase):
    name = "slow"

    def __init__(self, gate: asyncio.Event) -> None:
        self.gate = gate

    async def generate(self, request):
        await self.gate.wait()
        return Generation(text="ok")


@pytest.mark.parametrize("where", ["model", "async tool"])
def test_model_replies_and_asynchronous_tools_are_awaited_outside_the_turn(where):
    async def main() -> str:
        turns, gate = Turns(at_once=1), asyncio.Event()

        async def tool() -> str:
            await gate.wait()
            return "ok"

        env = Environment([ToolSpec("wait", "waits for the gate", NoParams, "str", tool)])
        model = TurnModel(_SlowModel(gate))

        async def waiting() -> str:
            async with turns.turn():
                if where == "model":
                    return (await model.generate(None)).text
                return (await env.call("wait", {})).observation

        async def opener() -> None:
            await asyncio.sleep(0.01)
            async with turns.turn():
                gate.set()

        got, _ = await within(asyncio.gather(waiting(), opener()), 5)
        return got

    assert "ok" in asyncio.run(main())
