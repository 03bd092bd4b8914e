"""Peer access (Device.can_access_peer, Device.peer_access_info, Device.enable_peer_access) on
the emulated Orin: refused with the reason; a copy with another device's buffer is refused."""
import pytest

import tegragpu as tg


def test_emulated_orin_has_no_peer_access():
    a, b = tg.Device("emu"), tg.Device("emu")
    assert a.can_access_peer(b) is False
    can, reason = a.peer_access_info(b)
    assert can is False
    assert "nvgpu" in reason and "RM backend" in reason, reason
    can, reason = a.peer_access_info(a)
    assert can is False and "same device" in reason, reason
    with pytest.raises(tg.NotSupported) as e:
        a.enable_peer_access(b)
    assert "tg_device_enable_peer_access" in str(e.value)
    with pytest.raises(tg.InvalidArgument):
        a.enable_peer_access(a)


def test_copy_with_a_buffer_of_another_device_is_refused():
    a, b = tg.Device("emu"), tg.Device("emu")
    mine, theirs = a.alloc(4096), b.alloc(4096)
    q = a.create_queue(tg.QueueKind.COPY)
    with pytest.raises(tg.NotSupported) as e:
        q.copy(mine, 0, theirs, 0, 64)
    assert "no peer access" in str(e.value)


def test_wait_on_a_signal_of_another_device_is_refused():
    a, b = tg.Device("emu"), tg.Device("emu")
    theirs, mine = b.create_signal(2), a.create_signal(2)
    for kind in (tg.QueueKind.COPY, tg.QueueKind.COMPUTE):
        q = a.create_queue(kind)
        with pytest.raises(tg.NotSupported) as e:
            q.wait(theirs, 1)
        assert str(e.value).startswith("tg_queue_wait: signal (at ") and \
            "no peer access" in str(e.value), str(e.value)
        q.wait(mine, 2)  # its own signals still wait
        q.synchronize()
