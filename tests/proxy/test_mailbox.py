"""The gate's in-process hop (proxy.core.streams.mailbox): anyio's memory-stream behaviour, without its per-item cost."""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import pytest
from hypothesis import given, settings, strategies as st

from proxy.core.streams import mailbox
from tests.support.examples import examples

OPS = st.lists(st.one_of(
    st.tuples(st.just("send"), st.integers(0, 99)),
    st.just(("receive",)),
    st.just(("close_sender",)),
    st.just(("close_receiver",)),
), max_size=30)


def _outcome(call: Any) -> Any:
    try:
        return ("ok", call())
    except Exception as exc:
        return ("raised", type(exc).__name__)


@settings(max_examples=examples(300), deadline=None)
@given(capacity=st.integers(0, 3), ops=OPS)
def test_without_parked_tasks_a_mailbox_answers_every_operation_as_an_anyio_memory_stream_does(
        capacity: int, ops: list[tuple]) -> None:
    theirs = anyio.create_memory_object_stream[int](capacity)
    ours = mailbox(capacity)
    for op in ops:
        results = []
        for send, receive in (theirs, ours):
            if op[0] == "send":
                results.append(_outcome(lambda: send.send_nowait(op[1])))
            elif op[0] == "receive":
                results.append(_outcome(receive.receive_nowait))
            elif op[0] == "close_sender":
                results.append(_outcome(send.close))
            else:
                results.append(_outcome(receive.close))
        assert results[0] == results[1], (op, results)


async def test_a_parked_receiver_gets_its_item_without_the_sender_yielding_to_the_event_loop() -> None:
    send, receive = mailbox()
    got: list[str] = []
    turns: list[int] = []

    async def receiver() -> None:
        got.append(await receive.receive())

    async def other() -> None:
        turns.append(1)

    async with anyio.create_task_group() as tg:
        tg.start_soon(receiver)
        await anyio.wait_all_tasks_blocked()
        tg.start_soon(other)  # runs at the event loop's next turn
        await send.send("x")
        assert turns == []  # send did not yield: no other task ran
        assert got == []  # the receiver has its item, and runs at the next turn
    assert got == ["x"] and turns == [1]


async def test_with_no_room_a_send_waits_until_a_receiver_is_there() -> None:
    send, receive = mailbox()
    with anyio.move_on_after(0.1) as waited:
        await send.send("nobody is listening yet")
    assert waited.cancelled_caught
    with pytest.raises(anyio.WouldBlock):
        receive.receive_nowait()  # the cancelled send left nothing behind
    async with anyio.create_task_group() as tg:
        tg.start_soon(send.send, "later")
        assert await receive.receive() == "later"


async def test_an_item_for_a_receiver_cancelled_before_it_ran_goes_to_the_next_receive() -> None:
    send, receive = mailbox()
    task = asyncio.ensure_future(receive.receive())
    await anyio.wait_all_tasks_blocked()
    send.send_nowait("kept")  # wakes the receiver...
    task.cancel()  # ...which is cancelled before it runs (anyio would let it run and take the item)
    with pytest.raises(asyncio.CancelledError):
        await task
    assert receive.receive_nowait() == "kept"


async def test_many_concurrent_senders_each_deliver_exactly_once_in_the_order_each_sent() -> None:
    send, receive = mailbox()
    got: list[tuple[int, int]] = []

    async def sender(who: int) -> None:
        for n in range(20):
            await send.send((who, n))

    async with anyio.create_task_group() as tg:
        for who in range(10):
            tg.start_soon(sender, who)

        async def reader() -> None:
            while len(got) < 200:
                got.append(await receive.receive())
                if len(got) % 7 == 0:
                    await anyio.sleep(0)  # a slow reader: senders pile up waiting for room

        tg.start_soon(reader)
    assert sorted(got) == [(who, n) for who in range(10) for n in range(20)]
    for who in range(10):
        assert [n for w, n in got if w == who] == list(range(20))


@pytest.mark.parametrize("capacity", [0, 2])
async def test_parked_senders_deliver_in_the_order_they_parked_while_the_reader_works_between_items(
        capacity: int) -> None:
    # First come, first served: a sender woken for room it then lost to another must not go to the
    # back of the line, or under load some requests wait many turns while later ones pass (a tail).
    send, receive = mailbox(capacity)
    got: list[int] = []
    async with anyio.create_task_group() as tg:
        for who in range(capacity + 8):
            tg.start_soon(send.send, who)
            await anyio.wait_all_tasks_blocked()  # each has sent or parked before the next starts
        for _ in range(capacity + 8):
            got.append(await receive.receive())
            await anyio.sleep(0)  # the reader handles the item, and other tasks run meanwhile
    assert got == list(range(capacity + 8))


@settings(max_examples=examples(200), deadline=None)
@given(capacity=st.integers(0, 3), plan=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2)), min_size=1,
                                                  max_size=25))
def test_items_arrive_in_the_order_their_sends_began_however_sends_and_receives_interleave(
        capacity: int, plan: list[tuple[int, int]]) -> None:
    # Each step starts some senders (each one send, begun in a known order), then the reader takes an
    # item and lets the event loop run some turns; at the end the reader takes the rest.
    async def run() -> list[int]:
        send, receive = mailbox(capacity)
        begun: list[int] = []
        got: list[int] = []
        async with anyio.create_task_group() as tg:
            for new_senders, turns in plan:
                for _ in range(new_senders):
                    begun.append(len(begun))
                    tg.start_soon(send.send, begun[-1])
                    await anyio.wait_all_tasks_blocked()  # started in this order
                if len(got) < len(begun):
                    got.append(await receive.receive())
                for _ in range(turns):
                    await anyio.sleep(0)
            while len(got) < len(begun):
                got.append(await receive.receive())
        assert got == begun
        return got

    anyio.run(run)


async def test_a_sender_arriving_while_others_are_parked_queues_behind_them() -> None:
    send, receive = mailbox()
    got: list[str] = []
    async with anyio.create_task_group() as tg:
        for who in ("a", "b", "c"):
            tg.start_soon(send.send, who)
        await anyio.wait_all_tasks_blocked()
        got.append(await receive.receive())
        tg.start_soon(send.send, "late")  # arrives while b and c still wait
        await anyio.wait_all_tasks_blocked()
        for _ in range(3):
            got.append(await receive.receive())
            await anyio.sleep(0)
    assert got == ["a", "b", "c", "late"]


async def test_a_parked_sender_cancelled_before_its_turn_delivers_nothing_and_the_line_moves_on() -> None:
    send, receive = mailbox()
    async with anyio.create_task_group() as tg:
        tg.start_soon(send.send, "first")
        await anyio.wait_all_tasks_blocked()
        withdrawn = asyncio.ensure_future(send.send("withdrawn"))
        await anyio.wait_all_tasks_blocked()
        tg.start_soon(send.send, "last")
        await anyio.wait_all_tasks_blocked()
        withdrawn.cancel()
        with pytest.raises(asyncio.CancelledError):
            await withdrawn
        got = [await receive.receive() for _ in range(2)]
    assert got == ["first", "last"]
    with pytest.raises(anyio.WouldBlock):
        receive.receive_nowait()


async def test_a_parked_send_whose_item_was_taken_has_delivered_it_even_if_cancelled_before_it_resumes() -> None:
    send, receive = mailbox()
    parked = asyncio.ensure_future(send.send("taken"))
    await anyio.wait_all_tasks_blocked()
    assert receive.receive_nowait() == "taken"
    parked.cancel()  # before the sender runs again: the item is already the receiver's, nothing is sent twice
    with pytest.raises(asyncio.CancelledError):
        await parked
    with pytest.raises(anyio.WouldBlock):
        receive.receive_nowait()


async def test_closing_the_sender_fails_a_send_still_in_line_and_delivers_nothing_of_it() -> None:
    send, receive = mailbox()
    parked = asyncio.ensure_future(send.send("in line"))
    await anyio.wait_all_tasks_blocked()
    send.close()
    with pytest.raises(anyio.ClosedResourceError):
        await parked
    with pytest.raises(anyio.EndOfStream):
        receive.receive_nowait()


async def test_closing_the_sender_ends_iteration_after_the_queued_items() -> None:
    send, receive = mailbox(2)
    send.send_nowait(1)
    send.send_nowait(2)
    await send.aclose()
    assert [item async for item in receive] == [1, 2]
    with pytest.raises(anyio.EndOfStream):
        await receive.receive()
    with pytest.raises(anyio.ClosedResourceError):
        await send.send(3)


async def test_closing_the_receiver_fails_a_parked_sender_and_every_later_send() -> None:
    send, receive = mailbox()
    failures: list[str] = []

    async def sender() -> None:
        try:
            await send.send("never read")
        except anyio.BrokenResourceError:
            failures.append("broken")

    async with anyio.create_task_group() as tg:
        tg.start_soon(sender)
        await anyio.wait_all_tasks_blocked()
        await receive.aclose()
    assert failures == ["broken"]
    with pytest.raises(anyio.BrokenResourceError):
        send.send_nowait("later")
    with pytest.raises(anyio.ClosedResourceError):
        await receive.receive()


async def test_closing_the_sender_wakes_a_parked_receiver_with_the_end_of_the_stream() -> None:
    send, receive = mailbox()
    ended: list[bool] = []

    async def receiver() -> None:
        async for _ in receive:
            pass
        ended.append(True)

    async with anyio.create_task_group() as tg:
        tg.start_soon(receiver)
        await anyio.wait_all_tasks_blocked()
        send.close()
    assert ended == [True]


async def test_the_sdk_post_writer_reads_a_mailbox_as_a_stream_without_a_sender_context() -> None:
    # proxy/upstream/streamable_http.py hands its post_writer a mailbox: the SDK then handles each
    # message directly, not in a task group restoring a context the relay never set.
    _, receive = mailbox()
    assert receive.last_context is None
