"""Queue fills and host transfers (``Queue.fill``, ``Queue.write``, ``Queue.read``), device
listing without opening (``tegragpu.list_devices``, ``Device.count``), attributes and free
memory, on the emulated Orin."""
import os

import numpy as np
import pytest

import tegragpu as tg

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def dev():
    with tg.Device("emu") as d:
        yield d


@pytest.mark.parametrize("kind", [tg.QueueKind.COMPUTE, tg.QueueKind.COPY])
def test_fill_write_read_round_trip(dev, kind):
    n = 100_003
    with dev.alloc(n, tg.BUF_ZEROED) as buf, dev.create_queue(kind) as q:
        buf.write(b"\xa5" * n)
        q.fill(buf, 0xBEEF, elem_bytes=2, count=20_001, offset=6)
        data = (np.arange(5001, dtype=np.uint64) * 2654435761 % 2**32).astype(np.uint32)
        q.write(buf, data, offset=50_000)
        data[:] = 0  # staged during the call: changing it now changes nothing
        back = np.empty(n, dtype=np.uint8)
        assert q.read(buf, out=back) is back
        want = np.full(n, 0xA5, dtype=np.uint8)
        want[6:6 + 40_002] = np.tile(np.array([0xEF, 0xBE], dtype=np.uint8), 20_001)
        want[50_000:50_000 + 4 * 5001] = (
            (np.arange(5001, dtype=np.uint64) * 2654435761 % 2**32).astype("<u4").view(np.uint8))
        assert np.array_equal(back, want)
        # bytes, sizes and offsets; the CPU mapping agrees (the read waited for the work).
        assert q.read(buf, size=7, offset=6) == b"\xef\xbe" * 3 + b"\xef"
        assert buf.read() == want.tobytes()


def test_views_and_fill_defaults(dev):
    with dev.alloc(4096, tg.BUF_ZEROED) as buf, dev.create_queue() as q:
        v = buf.view(1024, 64)
        q.fill(v, 0x7F)  # count: the whole view, one byte at a time
        q.write(v, b"xyz", offset=10)
        assert q.read(v) == b"\x7f" * 10 + b"xyz" + b"\x7f" * 51
        q.fill(v, 0x01020304, elem_bytes=4, count=2, offset=8)
        assert q.read(buf, size=16, offset=1024 + 4) == bytes([0x7f] * 4) + bytes(
            [4, 3, 2, 1] * 2) + b"\x7f" * 4
        # The rest of the buffer is untouched.
        assert buf.read(1024) == bytes(1024)
        assert buf.read(offset=1088) == bytes(4096 - 1088)


def test_transfer_errors_name_the_call(dev):
    with dev.alloc(4096) as buf, dev.create_queue() as q:
        with pytest.raises(tg.InvalidArgument, match="elem_bytes 3"):
            q.fill(buf, 0, elem_bytes=3, count=1)
        with pytest.raises(tg.InvalidArgument, match="tg_queue_write"):
            q.write(buf, b"x" * 100, offset=4000)
        with pytest.raises(tg.InvalidArgument, match="tg_queue_read"):
            q.read(buf, size=100, offset=4000)
        with pytest.raises(tg.InvalidArgument, match="Queue.read"):
            q.read(buf.view(0, 16), size=17)
        with pytest.raises(tg.InvalidArgument, match="Queue.fill"):
            q.fill(buf, 1, count=-1)
        with pytest.raises(tg.InvalidArgument, match="writable"):
            q.read(buf, out=b"readonly")
        with pytest.raises(tg.InvalidArgument, match="Queue.write"):
            q.write(object(), b"x")


def test_list_devices_and_count_without_opening():
    ls = tg.list_devices("emu")
    assert len(ls) == 1 and tg.device_count("emu") == 1 == tg.Device.count("emu")
    e = ls[0]
    assert (e.spec, e.name, e.backend, e.emulated) == ("emu", "ga10b", tg.Backend.NVGPU, True)
    assert e.pci_bus_id == "0000:00:00.0" and len(e.uuid) == 16
    assert e.uuid_str.startswith("GPU-") and len(e.uuid_str) == 40
    with tg.Device(e.spec) as d:
        assert d.info.name == e.name
    with pytest.raises(tg.InvalidArgument, match="gpu0"):
        tg.list_devices("gpu0")


def test_attributes_and_memory_info(dev):
    i = dev.info
    assert dev.attribute("sm_count") == i.sm_count
    assert dev.attribute(tg.DEVICE_ATTRIBUTES["compute_capability_minor"]) == i.sm_minor
    attrs = dev.attributes()
    assert attrs["warp_size"] == 32 and attrs["integrated"] == 1
    assert attrs["total_memory_bytes"] == i.memory_bytes
    assert "memory_clock_rate_khz" not in attrs  # not known for the Orin
    with pytest.raises(tg.NotSupported, match="memory_clock_rate_khz"):
        dev.attribute("memory_clock_rate_khz")
    with pytest.raises(tg.InvalidArgument, match="unknown attribute"):
        dev.attribute("no_such_attribute")
    with pytest.raises(tg.InvalidArgument, match="attr 999"):
        dev.attribute(999)
    free, total = dev.memory_info()
    assert 0 < free <= total == i.memory_bytes


@pytest.mark.parametrize("kind", [tg.QueueKind.COMPUTE, tg.QueueKind.COPY])
def test_write_and_wait_value(dev, kind):
    # Writes of 32- and 64-bit words; a queue that waits for a word the CPU then writes.
    with dev.alloc(64, tg.BUF_ZEROED) as buf, dev.create_queue(kind) as q, \
            dev.create_queue(kind) as q2:
        q.write_value(buf, 7)
        q.write_value(buf, 0x1_0000_0002, offset=8, wide=True, barrier=False)
        q.synchronize()
        assert np.frombuffer(buf.read(size=16), dtype="<u4").tolist() == [7, 0, 2, 1]
        q2.wait_value(buf, 5, cond="geq", offset=16)
        q2.wait_value(buf, 0b100, cond="and", offset=24, wide=True)
        q2.write_value(buf, 9, offset=32)
        q2.submit()
        buf.write((5).to_bytes(4, "little"), offset=16)
        buf.write((0b110).to_bytes(8, "little"), offset=24)
        q2.synchronize()
        assert buf.read(size=4, offset=32) == (9).to_bytes(4, "little")
        # Refusals name the call and the value.
        with pytest.raises(tg.InvalidArgument, match="Queue.wait_value: cond 'gt'"):
            q.wait_value(buf, 1, cond="gt")
        with pytest.raises(tg.InvalidArgument, match="wide must be True or False"):
            q.write_value(buf, 1, wide="yes")
        with pytest.raises(tg.InvalidArgument, match="tg_queue_write_value.*offset 2"):
            q.write_value(buf, 1, offset=2)
        with pytest.raises(tg.InvalidArgument, match="does not fit the 32-bit word"):
            q.write_value(buf, 1 << 32)
        with pytest.raises(tg.Error):
            q.write_value(buf, 1, offset=64)
