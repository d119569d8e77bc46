"""The harness's pipe reading: polled briefly, then asleep, and whole messages either way."""

from __future__ import annotations

import marshal
import os
import threading
import time

import pytest

from mrlm.envs.code import _harness

pytestmark = pytest.mark.timeout(30)  # a reader that never wakes fails here, not at the suite's limit


def _pipe() -> tuple[int, int]:
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)  # as the harness sets its read ends
    return read_fd, write_fd


def _read(read_fd: int, size: int) -> bytes:
    """What one ``_read_into`` of at most ``size`` bytes gets."""
    buffer = bytearray(size)
    return bytes(buffer[: _harness._read_into(read_fd, memoryview(buffer))])


def test_a_reader_sleeps_rather_than_spins_through_a_long_wait() -> None:
    read_fd, write_fd = _pipe()
    writer = threading.Timer(0.3, os.write, (write_fd, b"late"))
    writer.start()
    try:
        cpu_before, wall_before = time.thread_time(), time.perf_counter()
        assert _read(read_fd, 64) == b"late"
        cpu, wall = time.thread_time() - cpu_before, time.perf_counter() - wall_before
    finally:
        writer.join()
        os.close(read_fd)
        os.close(write_fd)
    assert wall >= 0.25
    assert cpu < 0.1 * wall  # a reader that kept polling would use about all of it


def test_a_sleeping_reader_wakes_with_end_of_file_when_the_other_end_goes() -> None:
    read_fd, write_fd = _pipe()
    closer = threading.Timer(0.3, os.close, (write_fd,))  # the other process dies mid-wait
    closer.start()
    try:
        started = time.perf_counter()
        assert _read(read_fd, 64) == b""
        assert time.perf_counter() - started >= 0.25  # it slept until the hang-up, then saw it
    finally:
        closer.join()
        os.close(read_fd)


def test_end_of_file_reads_as_empty_and_ends_a_message_as_the_solution_gone() -> None:
    read_fd, write_fd = _pipe()
    os.write(write_fd, b"\x00" * 5)
    os.close(write_fd)
    try:
        with pytest.raises(_harness.SolutionGone, match="ended"):
            _harness._receive(read_fd)
        assert _read(read_fd, 64) == b""
    finally:
        os.close(read_fd)


def test_a_message_larger_than_the_pipe_arrives_whole_while_the_writer_waits_for_room() -> None:
    read_fd, write_fd = _pipe()
    numbers = list(range(0, 400_000, 3))  # crosses packed: 1.07 MB of words, past a 64 KiB pipe
    out = _harness._Out(lambda *_: None, [])
    message = ["q", "call", 1, [_harness._encode(numbers, out)], {}]
    writer = threading.Thread(target=_harness._send, args=(write_fd, message, out.attachments))
    writer.start()
    try:
        time.sleep(0.05)  # the writer fills the pipe and blocks; the reader starts on a full pipe
        received, attachments = _harness._receive(read_fd)
    finally:
        writer.join()
        os.close(read_fd)
        os.close(write_fd)
    arrived = _harness._decode(received[3][0], _harness._In(lambda *_: None, attachments))
    assert arrived == numbers


@pytest.mark.parametrize(
    ("tag", "attachments"),
    [
        ({"$": "q", "v": 1}, [bytearray(8)]),
        ({"$": "q", "v": True}, [bytearray(8)]),
        ({"$": "d", "v": 0}, [bytearray(12)]),
    ],
    ids=["index-out-of-range", "index-not-an-int", "not-whole-words"],
)
def test_a_malformed_packed_list_is_a_value_error(tag: dict, attachments: list[bytearray]) -> None:
    # The judge turns ValueError into "the other side sent a malformed value"; nothing else escapes.
    with pytest.raises(ValueError, match="malformed"):
        _harness._decode(tag, _harness._In(lambda *_: None, attachments))


@pytest.mark.parametrize(
    ("values", "marshalled"),
    [
        ([2**31 - 1, -(2**31)] * 32, True),
        ([0.5, -0.0, float("inf")] * 30, True),
        ([2**31] + [1] * 63, False),  # an int of more than 32 bits: written as another type
        ([1] * 63 + [True], False),
        ([1] * 63 + [1.5], False),
        ([1.5] * 63 + [1], False),
        ([1] * 63 + [type("Int", (int,), {})(1)], False),  # marshal refuses subclasses
        ([1] * 63 + [object()], False),
    ],
    ids=["ints", "floats", "big-int", "bool", "int-then-float", "float-then-int", "subclass", "object"],
)
def test_only_lists_of_one_exact_number_type_are_marshalled(values: list, marshalled: bool) -> None:
    out = _harness._Out(lambda value, depth, out: {"$": "h", "v": 1}, [], to_trusting=True)
    encoded = _harness._encode(values, out)
    assert (type(encoded) is dict and encoded.get("$") == "marshal") is marshalled
    if marshalled:
        attached = out.attachments[0] if out.attachments else b""
        into = _harness._In(lambda *_: None, [bytearray(attached)], from_trusted=True)
        arrived = _harness._decode(encoded, into)
        assert arrived == values and [type(item) for item in arrived] == [type(item) for item in values]


def test_the_judge_reads_no_marshalled_list_from_the_solution() -> None:
    # marshal is for the judge's own data only: from the solution's process it is an unknown tag.
    def resolve(tag: str, data: object) -> object:
        raise ValueError(f"an unknown tag {tag!r}")

    attachments = [bytearray(marshal.dumps([1] * 64, 2))]
    with pytest.raises(ValueError, match="unknown tag"):
        _harness._decode({"$": "marshal", "v": 0}, _harness._In(resolve, attachments))
    out = _harness._Out(lambda *_: None, [])  # and the solution's process never writes one
    assert _harness._encode([1] * 64, out)["$"] == "q"
