"""A comm target's open comms: kept with their channel while open, each message handed on, dropped once closed;
and the data of a browser message read without trusting its shape."""
from __future__ import annotations

from fake_comm import FakeComm
from kernelcore_widgets.kernel_targets import hold_open, message_data


def test_a_comm_is_held_with_its_channel_until_it_closes():
    comm, channel, open_comms, seen, closed = FakeComm(), object(), [], [], []
    hold_open(comm, channel, open_comms, on_msg=seen.append, on_closed=lambda: closed.append(len(open_comms)))
    assert open_comms == [(comm, channel)]
    comm.handlers["msg"]({"content": {"data": 1}})
    assert seen == [{"content": {"data": 1}}]
    comm.handlers["close"]({})
    assert closed == [1] and open_comms == []  # told before it is let go
    comm.handlers["close"]({})  # a second close changes nothing
    assert closed == [1, 0] and open_comms == []


def test_message_data_reads_only_the_shape_of_a_comm_message():
    assert message_data({"content": {"data": {"req": 1}}}) == {"req": 1}
    for bad in (None, "text", [], {"content": "not a dict"}, {"content": None}, {}):
        assert message_data(bad) is None
