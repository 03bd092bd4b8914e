"""Sharing memory through file descriptors (Buffer.export_fd, Device.import_fd) and signals in
a shared buffer (Buffer.signal), on the emulated Orin, where the fd is a dma-buf. The other
driver is played by the exporting buffer's own CPU view."""
import os
import struct

import numpy as np
import pytest

import tegragpu as tg


def test_export_and_import_share_the_memory():
    dev = tg.Device("emu")
    a = dev.alloc(5000, tg.BUF_ZEROED)
    fd, size = a.export_fd()
    assert fd >= 0 and size == 8192
    b = dev.import_fd(fd)
    os.close(fd)  # the import holds the memory
    assert b.size == size
    fd2, _ = a.export_fd()
    part = dev.import_fd(fd2, size=4096)
    os.close(fd2)
    assert part.size == 4096
    a.write(b"shared bytes")
    assert b.read(12) == b"shared bytes"
    assert part.read(12) == b"shared bytes"
    # A GPU fill through the import is seen through the exporter's view.
    q = dev.create_queue(tg.QueueKind.COPY)
    q.fill(b, 0x7F, elem_bytes=1, count=64)
    q.synchronize()
    assert a.read(64) == b"\x7f" * 64


def test_import_refusals():
    dev = tg.Device("emu")
    with pytest.raises(tg.InvalidArgument):
        dev.import_fd(-1)
    with pytest.raises(tg.InvalidArgument):
        dev.import_fd(2 ** 40)
    with open("/dev/null", "rb") as f:
        with pytest.raises(tg.InvalidArgument) as e:
            dev.import_fd(f.fileno())
    assert "not a dma-buf" in str(e.value)
    a = dev.alloc(4096)
    fd, size = a.export_fd()
    try:
        with pytest.raises(tg.InvalidArgument) as e:
            dev.import_fd(fd, size + 1)
        assert "exceeds" in str(e.value)
    finally:
        os.close(fd)


def test_a_signal_in_a_shared_buffer_orders_work_with_the_other_side():
    dev = tg.Device("emu")
    theirs = dev.alloc(8192, tg.BUF_ZEROED)
    fd, _ = theirs.export_fd()
    shared = dev.import_fd(fd)
    os.close(fd)
    go, done = shared.signal(4096), shared.signal(4112)
    assert (go.value, done.value) == (0, 0)
    q = dev.create_queue(tg.QueueKind.COPY)
    q.wait(go, 3)
    q.fill(shared, 0xAB, elem_bytes=1, count=128)
    q.signal(done, 4)
    q.submit()
    with pytest.raises(tg.Timeout):
        done.wait(4, timeout_ns=200_000_000)
    assert theirs.read(128) == bytes(128), "the fill waits for the other side"
    theirs.write(struct.pack("<Q", 3), 4096)  # the other side's release
    done.wait(4)
    value, stamp = struct.unpack("<QQ", theirs.read(16, 4112))
    assert value == 4 and stamp != 0 and stamp == done.timestamp
    assert theirs.read(128) == b"\xab" * 128
    arr = theirs.numpy("uint64", offset=4096, shape=(1,))
    assert arr[0] == 3 == go.value
    del arr
    with pytest.raises(tg.InvalidArgument):
        shared.signal(8)
    with pytest.raises(tg.InvalidArgument):
        shared.signal(8192)
    np.testing.assert_equal(go.value, 3)
