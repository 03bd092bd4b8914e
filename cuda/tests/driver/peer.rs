//! Peer access: `cuDeviceCanAccessPeer`, `cuDeviceGetP2PAttribute`, `cuCtxEnablePeerAccess` /
//! `DisablePeerAccess`, `cuMemcpyPeer(Async)` and cross-device `cuMemcpyDtoD`. With one device,
//! the refusals and copies between two contexts of it; with two or more, copies between the
//! first two devices with and without peer access.

use crate::*;
use std::ffi::c_void;
use std::ptr::null_mut;

fn count() -> i32 {
    let mut n = 0;
    check(cu!(cuDeviceGetCount(&mut n): *mut i32), "count");
    n
}

fn ctx_on(dev: i32) -> *mut c_void {
    let mut c = null_mut();
    check(
        cu!(cuCtxCreate_v2(&mut c, 0, dev): *mut *mut c_void, u32, i32),
        "cuCtxCreate_v2",
    );
    c
}

#[test]
fn one_device_is_not_its_own_peer() {
    check(cu!(cuInit(0): u32), "cuInit");
    // NVIDIA's driver answers a device and itself with CUDA_SUCCESS and 0 (H100, 580.159.04).
    let mut can = -1;
    assert_eq!(
        cu!(cuDeviceCanAccessPeer(&mut can, 0, 0): *mut i32, i32, i32),
        0
    );
    assert_eq!(can, 0, "a device is not its own peer");
    let mut v = -1;
    assert_eq!(
        cu!(cuDeviceGetP2PAttribute(&mut v, 2, 0, 0): *mut i32, i32, i32, i32),
        101
    );
    let n = count();
    assert_eq!(
        cu!(cuDeviceCanAccessPeer(&mut can, 0, n): *mut i32, i32, i32),
        101
    );
    if n >= 2 {
        assert_eq!(
            cu!(cuDeviceGetP2PAttribute(&mut v, 9, 0, 1): *mut i32, i32, i32, i32),
            1,
            "not a P2P attribute"
        );
    }
}

#[test]
fn contexts_of_one_device_and_memcpy_peer() {
    let a = setup();
    let b = ctx_on(0);
    // b is current: access to a's memory; twice is refused; a context is not its own peer.
    assert_eq!(cu!(cuCtxEnablePeerAccess(a, 1): *mut c_void, u32), 1);
    assert_eq!(cu!(cuCtxEnablePeerAccess(b, 0): *mut c_void, u32), 201);
    check(cu!(cuCtxEnablePeerAccess(a, 0): *mut c_void, u32), "enable");
    assert_eq!(cu!(cuCtxEnablePeerAccess(a, 0): *mut c_void, u32), 704);
    check(cu!(cuCtxDisablePeerAccess(a): *mut c_void), "disable");
    assert_eq!(cu!(cuCtxDisablePeerAccess(a): *mut c_void), 705);
    assert_eq!(
        cu!(cuCtxEnablePeerAccess(null_mut(), 0): *mut c_void, u32),
        201
    );

    let n = 1000usize;
    let src: Vec<u32> = (0..n as u32).map(|i| i * 7 + 1).collect();
    let db = alloc(n * 4);
    htod(db, &src);
    check(cu!(cuCtxSetCurrent(a): *mut c_void), "set a");
    let da = alloc(n * 4);
    check(
        cu!(cuMemcpyPeer(da, a, db, b, n * 4): u64, *mut c_void, u64, *mut c_void, usize),
        "cuMemcpyPeer",
    );
    assert_eq!(dtoh::<u32>(da, n), src);
    check(cu!(cuMemsetD32_v2(db, 0, n): u64, u32, usize), "zero");
    let mut s = null_mut();
    check(
        cu!(cuStreamCreate(&mut s, 0): *mut *mut c_void, u32),
        "stream",
    );
    check(
        cu!(cuMemcpyPeerAsync(db + 8, b, da, a, (n - 2) * 4, s): u64, *mut c_void, u64, *mut c_void, usize, *mut c_void),
        "cuMemcpyPeerAsync",
    );
    check(cu!(cuStreamSynchronize(s): *mut c_void), "sync");
    let got = dtoh::<u32>(db, n);
    assert_eq!(&got[..2], &[0, 0]);
    assert_eq!(&got[2..], &src[..n - 2]);
    assert_eq!(
        cu!(cuMemcpyPeer(da, null_mut(), db, b, 4): u64, *mut c_void, u64, *mut c_void, usize),
        201
    );
    check(cu!(cuStreamDestroy_v2(s): *mut c_void), "destroy");
    check(cu!(cuCtxDestroy_v2(b): *mut c_void), "destroy b");
}

/// Two devices: cuMemcpyDtoD with a device pointer of the other device, cuMemcpyPeer, before
/// and (where the devices allow it) after enabling peer access; kernels on one device over the
/// other's memory once enabled. Skipped, saying why, with one device.
#[test]
fn two_devices_copy_with_and_without_peer_access() {
    check(cu!(cuInit(0): u32), "cuInit");
    if count() < 2 {
        eprintln!("NOTICE: two_devices_copy_with_and_without_peer_access skipped: one device");
        return;
    }
    let c0 = ctx_on(0);
    let c1 = ctx_on(1);
    let n = 1 << 20;
    let src: Vec<u32> = (0..n as u32).map(|i| i ^ 0x5a5a_1234).collect();
    let d1 = alloc(n * 4); // on device 1 (c1 is current)
    htod(d1, &src);
    check(cu!(cuCtxSetCurrent(c0): *mut c_void), "set c0");
    let d0 = alloc(n * 4);
    // Without peer access: through the host, in the stream's order.
    check(
        cu!(cuMemcpyDtoD_v2(d0, d1, n * 4): u64, u64, usize),
        "DtoD from device 1",
    );
    assert_eq!(dtoh::<u32>(d0, n), src);
    check(cu!(cuMemsetD32_v2(d0, 3, n): u64, u32, usize), "memset");
    check(
        cu!(cuMemcpyPeer(d1, c1, d0, c0, n * 4): u64, *mut c_void, u64, *mut c_void, usize),
        "cuMemcpyPeer to device 1",
    );
    check(cu!(cuCtxSetCurrent(c1): *mut c_void), "set c1");
    assert!(dtoh::<u32>(d1, n).iter().all(|&x| x == 3));
    check(cu!(cuCtxSetCurrent(c0): *mut c_void), "set c0");
    let mut can = -1;
    check(
        cu!(cuDeviceCanAccessPeer(&mut can, 0, 1): *mut i32, i32, i32),
        "can access",
    );
    let mut access = -1;
    check(
        cu!(cuDeviceGetP2PAttribute(&mut access, 2, 0, 1): *mut i32, i32, i32, i32),
        "P2P access attribute",
    );
    assert_eq!(access, can);
    // Arrays are reached as any device memory: array access follows peer access.
    let mut arrays = -1;
    check(
        cu!(cuDeviceGetP2PAttribute(&mut arrays, 4, 0, 1): *mut i32, i32, i32, i32),
        "P2P array access attribute",
    );
    assert_eq!(arrays, can);
    eprintln!("device 0 can access device 1: {can}");
    if can == 0 {
        assert_eq!(cu!(cuCtxEnablePeerAccess(c1, 0): *mut c_void, u32), 217);
        return;
    }
    check(
        cu!(cuCtxEnablePeerAccess(c1, 0): *mut c_void, u32),
        "enable",
    );
    // Device 0's queue copies to and from device 1's memory directly.
    htod(d0, &src);
    check(
        cu!(cuMemcpyDtoD_v2(d1, d0, n * 4): u64, u64, usize),
        "DtoD to device 1",
    );
    check(cu!(cuMemsetD32_v2(d0, 0, n): u64, u32, usize), "zero");
    check(
        cu!(cuMemcpyDtoD_v2(d0, d1, n * 4): u64, u64, usize),
        "DtoD from device 1",
    );
    assert_eq!(dtoh::<u32>(d0, n), src);
    // A kernel on device 0 writes device 1's memory.
    let m = load_fixture("kernels");
    let fill = function(m, "fill_u32");
    let (mut p, mut v, mut cnt) = (d1, 0x1d1d_1d1du32, n as u32);
    launch(
        fill,
        (n / 256) as u32,
        256,
        null_mut(),
        &mut [ptr(&mut p), ptr(&mut v), ptr(&mut cnt)],
    );
    check(cu!(cuCtxSynchronize(): ), "sync");
    check(cu!(cuCtxSetCurrent(c1): *mut c_void), "set c1");
    assert!(dtoh::<u32>(d1, n).iter().all(|&x| x == 0x1d1d_1d1d));
    for c in [c0, c1] {
        check(cu!(cuCtxDestroy_v2(c): *mut c_void), "destroy");
    }
}

/// A graph as tinygrad's multi-GPU JIT builds it: a kernel node on device 0, a memcpy node to
/// device 1's memory, a kernel node on device 1 and a memcpy node back, in a chain; launched
/// from device 0's stream and from device 1's (each device's nodes then run on its own queue,
/// in the chain's order). Every launch refills and increments, so each result is exact.
/// Skipped, saying why, with one device or without peer access.
#[test]
fn graph_across_two_devices() {
    use crate::graphs::{KernelNodeParams, Memcpy3D};
    check(cu!(cuInit(0): u32), "cuInit");
    if count() < 2 {
        eprintln!("NOTICE: graph_across_two_devices skipped: one device");
        return;
    }
    let mut can = 0;
    check(
        cu!(cuDeviceCanAccessPeer(&mut can, 0, 1): *mut i32, i32, i32),
        "can access",
    );
    if can == 0 {
        eprintln!("NOTICE: graph_across_two_devices skipped: no peer access between 0 and 1");
        return;
    }
    let c0 = ctx_on(0);
    let c1 = ctx_on(1);
    check(
        cu!(cuCtxEnablePeerAccess(c0, 0): *mut c_void, u32),
        "1 -> 0",
    );
    let n = 1usize << 16;
    let d1 = alloc(n * 4);
    let inc1 = function(load_fixture("kernels"), "increment");
    check(cu!(cuCtxSetCurrent(c0): *mut c_void), "set c0");
    check(
        cu!(cuCtxEnablePeerAccess(c1, 0): *mut c_void, u32),
        "0 -> 1",
    );
    let (d0, back) = (alloc(n * 4), alloc(n * 4));
    let fill0 = function(load_fixture("kernels"), "fill_u32");
    let mut g = null_mut();
    check(
        cu!(cuGraphCreate(&mut g, 0): *mut *mut c_void, u32),
        "graph",
    );
    let (mut fp, mut fv, mut fc) = (d0, 7u32, n as u32);
    let mut fargs = [ptr(&mut fp), ptr(&mut fv), ptr(&mut fc)];
    let mut pf = KernelNodeParams {
        func: fill0,
        grid: [(n / 256) as u32, 1, 1],
        block: [256, 1, 1],
        shared: 0,
        params: fargs.as_mut_ptr(),
        extra: null_mut(),
    };
    let (mut ip, mut by) = (d1, 5u64);
    let mut iargs = [ptr(&mut ip), ptr(&mut by)];
    let mut pi = KernelNodeParams {
        func: inc1,
        grid: [1, 1, 1],
        block: [32, 1, 1],
        shared: 0,
        params: iargs.as_mut_ptr(),
        extra: null_mut(),
    };
    let copy = |src: u64, dst: u64| Memcpy3D {
        src_type: 2,
        src_device: src,
        src_pitch: n * 4,
        src_height: 1,
        dst_type: 2,
        dst_device: dst,
        dst_pitch: n * 4,
        dst_height: 1,
        width: n * 4,
        height: 1,
        depth: 1,
        ..Default::default()
    };
    let (mut m01, mut m10) = (copy(d0, d1), copy(d1, back));
    let mut nodes = [null_mut::<c_void>(); 4];
    check(
        cu!(cuGraphAddKernelNode(&mut nodes[0], g, std::ptr::null(), 0, ptr(&mut pf)): *mut *mut c_void, *mut c_void, *const *mut c_void, usize, *mut c_void),
        "fill node (device 0)",
    );
    check(
        cu!(cuGraphAddMemcpyNode(&mut nodes[1], g, &nodes[0], 1, ptr(&mut m01), c0): *mut *mut c_void, *mut c_void, *const *mut c_void, usize, *mut c_void, *mut c_void),
        "copy node 0 -> 1",
    );
    check(
        cu!(cuGraphAddKernelNode(&mut nodes[2], g, &nodes[1], 1, ptr(&mut pi)): *mut *mut c_void, *mut c_void, *const *mut c_void, usize, *mut c_void),
        "increment node (device 1)",
    );
    check(
        cu!(cuGraphAddMemcpyNode(&mut nodes[3], g, &nodes[2], 1, ptr(&mut m10), c1): *mut *mut c_void, *mut c_void, *const *mut c_void, usize, *mut c_void, *mut c_void),
        "copy node 1 -> 0",
    );
    let mut exec = null_mut();
    check(
        cu!(cuGraphInstantiate_v2(&mut exec, g, null_mut(), null_mut(), 0): *mut *mut c_void, *mut c_void, *mut *mut c_void, *mut c_void, usize),
        "instantiate",
    );
    let mut expect = vec![7u32; n];
    let first = (7u64 | (7u64 << 32)) + 5;
    expect[0] = first as u32;
    expect[1] = (first >> 32) as u32;
    for (who, c) in [("device 0's stream", c0), ("device 1's stream", c1)] {
        check(cu!(cuCtxSetCurrent(c): *mut c_void), "set context");
        check(cu!(cuMemsetD32_v2(back, 0, n): u64, u32, usize), "clear");
        for _ in 0..3 {
            check(
                cu!(cuGraphLaunch(exec, null_mut()): *mut c_void, *mut c_void),
                "launch",
            );
        }
        // The stream's order holds the whole graph: a copy after the launches sees its result.
        check(cu!(cuCtxSynchronize(): ), "sync");
        check(cu!(cuCtxSetCurrent(c0): *mut c_void), "set c0");
        assert_eq!(dtoh::<u32>(back, n), expect, "launched from {who}");
    }
    check(cu!(cuGraphExecDestroy(exec): *mut c_void), "exec destroy");
    check(cu!(cuGraphDestroy(g): *mut c_void), "graph destroy");
    for c in [c0, c1] {
        check(cu!(cuCtxDestroy_v2(c): *mut c_void), "destroy");
    }
}
