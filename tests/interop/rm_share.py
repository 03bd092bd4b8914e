"""Memory sharing on a desktop GPU through the Python package (run by
scripts/interop-device-run.sh on the device machine):

1. libtegragpu with itself: Buffer.export_fd / Device.import_fd, video and host memory, in
   this process and in a child process (the fd passed over a Unix socket), data both ways.
2. torch's memory (torch must run with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True):
   tegragpu.cuda_interop.import_cuda_pointer of a tensor's data_ptr(), data both ways, and a
   tensor allocated with torch's default allocator, which is refused with the reason.

Prints PASS/FAIL/SKIP lines; the exit status is the number of FAILs (at most 100).
"""
import array
import os
import socket
import sys
import traceback

import tegragpu as tg

FAILS = 0


def result(name, ok, why=""):
    global FAILS
    print(f"{'PASS' if ok else 'FAIL'} {name}{': ' + why if why and not ok else ''}", flush=True)
    FAILS += 0 if ok else 1


def check(name, fn):
    try:
        fn()
    except Exception as e:  # report and go on
        traceback.print_exc()
        result(name, False, f"{type(e).__name__}: {e}")
    else:
        result(name, True)


def round_trip(dev, flags, size):
    a = dev.alloc(size, flags | tg.BUF_ZEROED)
    fd, osize = a.export_fd()
    try:
        b = dev.import_fd(fd)
    finally:
        os.close(fd)
    assert b.size == osize >= size, (b.size, osize, size)
    q = dev.create_queue(tg.QueueKind.COPY)
    a.write(b"through the original", 0)
    assert q.read(b, 20) == b"through the original"
    q.fill(b, 0x3C, elem_bytes=1, count=64, offset=4096)
    q.synchronize()
    assert a.read(64, 4096) == b"\x3c" * 64
    b.close()
    a.close()


def send_fd(sock, fd, payload):
    sock.sendmsg([payload], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]))])


def recv_fd(sock):
    fds = array.array("i")
    msg, anc, _, _ = sock.recvmsg(64, socket.CMSG_LEN(fds.itemsize))
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[:fds.itemsize])
    return fds[0], msg


def other_process(spec):
    """The fd in a child process: it imports our buffer, checks our bytes, writes its own."""
    parent, child = socket.socketpair()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            parent.close()
            fd, msg = recv_fd(child)
            dev = tg.Device(spec)
            b = dev.import_fd(fd)
            os.close(fd)
            q = dev.create_queue(tg.QueueKind.COPY)
            got = q.read(b, len(msg))
            q.write(b, b"child was here", 4096)
            q.synchronize()
            child.send(b"ok" if got == msg else b"bad:" + got)
            code = 0
        except Exception as e:
            try:
                child.send(f"error: {e}".encode()[:200])
            except OSError:
                pass
        finally:
            os._exit(code)
    child.close()
    dev = tg.Device(spec)
    a = dev.alloc(8 << 20, tg.BUF_DEVICE_LOCAL | tg.BUF_ZEROED)
    msg = b"from the parent process"
    a.write(msg, 0)
    fd, _ = a.export_fd()
    send_fd(parent, fd, msg)
    os.close(fd)
    reply = parent.recv(256)
    _, status = os.waitpid(pid, 0)
    assert reply == b"ok", reply
    assert status == 0, status
    q = dev.create_queue(tg.QueueKind.COPY)
    assert q.read(a, 14, 4096) == b"child was here"


def torch_checks(spec):
    try:
        import torch
    except ImportError:
        print("SKIP torch: not installed", flush=True)
        return
    if not torch.cuda.is_available():
        print("SKIP torch: no CUDA device", flush=True)
        return
    from tegragpu import cuda_interop
    dev = tg.Device(spec)
    conf = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")

    def tensor_round_trip():
        x = torch.arange(1 << 20, dtype=torch.float32, device="cuda")
        torch.cuda.synchronize()
        v = cuda_interop.import_cuda_pointer(dev, x.data_ptr(), x.numel() * 4)
        assert v is not None, "not recognised as CUDA memory"
        q = dev.create_queue(tg.QueueKind.COPY)
        got = array.array("f", q.read(v.buffer, 64, v.offset))
        assert list(got) == [float(i) for i in range(16)], list(got)
        q.fill(v.buffer, 0x3F800000, elem_bytes=4, count=8, offset=v.offset)  # 1.0f
        q.synchronize()
        assert x[:8].tolist() == [1.0] * 8 and x[8].item() == 8.0, x[:10].tolist()
        print(f"INFO torch tensor at {x.data_ptr():#x}: imported at offset {v.offset} of a "
              f"{v.buffer.size}-byte allocation", flush=True)

    if "expandable_segments:True" in conf:
        check("torch tensor (expandable segments) imported, data both ways", tensor_round_trip)
    else:
        def refused():
            x = torch.ones(1024, device="cuda")
            try:
                cuda_interop.import_cuda_pointer(dev, x.data_ptr(), 4096)
            except tg.NotSupported as e:
                assert "expandable_segments" in str(e), str(e)
                print(f"INFO refusal: {e}", flush=True)
            else:
                raise AssertionError("cudaMalloc memory was not refused")
        check("torch tensor of the default allocator is refused with the reason", refused)


def main():
    spec = os.environ.get("TEGRAGPU_DEVICE", "rm")
    dev = tg.Device(spec)
    print(f"INFO {dev.info.name} ({spec})", flush=True)
    for what, flags, size in [("video 4 MiB", tg.BUF_DEVICE_LOCAL, 4 << 20),
                              ("video 64 KiB", tg.BUF_DEVICE_LOCAL, 64 << 10),
                              ("video 16 MiB", tg.BUF_DEVICE_LOCAL, 16 << 20),
                              ("host 64 KiB", tg.BUF_CPU_CACHED, 64 << 10)]:
        check(f"round trip {what}", lambda f=flags, s=size: round_trip(dev, f, s))
    check("another process imports our export", lambda: other_process(spec))
    torch_checks(spec)
    print(f"rm_share: {FAILS} failed", flush=True)
    return min(FAILS, 100)


if __name__ == "__main__":
    sys.exit(main())
