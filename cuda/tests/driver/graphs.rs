//! Graphs.

use crate::*;
use std::ffi::{c_char, c_void};
use std::ptr::null_mut;

#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct KernelNodeParams {
    pub(crate) func: *mut c_void,
    pub(crate) grid: [u32; 3],
    pub(crate) block: [u32; 3],
    pub(crate) shared: u32,
    pub(crate) params: *mut *mut c_void,
    pub(crate) extra: *mut *mut c_void,
}

#[repr(C)]
pub(crate) struct KernelNodeParamsV2 {
    pub(crate) v1: KernelNodeParams,
    pub(crate) kern: *mut c_void,
    pub(crate) ctx: *mut c_void,
}

#[repr(C)]
#[derive(Default)]
pub(crate) struct Memcpy3D {
    pub(crate) src_x: usize,
    pub(crate) src_y: usize,
    pub(crate) src_z: usize,
    pub(crate) src_lod: usize,
    pub(crate) src_type: u32,
    pub(crate) src_host: usize,
    pub(crate) src_device: u64,
    pub(crate) src_array: usize,
    pub(crate) reserved0: usize,
    pub(crate) src_pitch: usize,
    pub(crate) src_height: usize,
    pub(crate) dst_x: usize,
    pub(crate) dst_y: usize,
    pub(crate) dst_z: usize,
    pub(crate) dst_lod: usize,
    pub(crate) dst_type: u32,
    pub(crate) dst_host: usize,
    pub(crate) dst_device: u64,
    pub(crate) dst_array: usize,
    pub(crate) reserved1: usize,
    pub(crate) dst_pitch: usize,
    pub(crate) dst_height: usize,
    pub(crate) width: usize,
    pub(crate) height: usize,
    pub(crate) depth: usize,
}

#[test]
fn graphs_as_tinygrad_builds_them() {
    setup();
    let m = load_fixture("kernels");
    let inc = function(m, "increment");
    let fill = function(m, "fill_u32");
    let counter = alloc(8);
    let buf = alloc(64 * 4);
    let copy = alloc(64 * 4);
    check(cu!(cuMemsetD32_v2(counter, 0, 2): u64, u32, usize), "zero");
    let mut g = null_mut();
    check(
        cu!(cuGraphCreate(&mut g, 0): *mut *mut c_void, u32),
        "graph",
    );
    // Node A: fill_u32(buf, 7, 64) through `extra` (v1 params, as tinygrad).
    #[repr(C)]
    struct FillArgs {
        p: u64,
        v: u32,
        n: u32,
    }
    let mut fa = FillArgs {
        p: buf,
        v: 7,
        n: 64,
    };
    let mut fsize = std::mem::size_of::<FillArgs>();
    let mut extra = [
        std::ptr::without_provenance_mut(1),
        ptr(&mut fa),
        std::ptr::without_provenance_mut(2),
        ptr(&mut fsize),
        null_mut(),
    ];
    let mut pa = KernelNodeParams {
        func: fill,
        grid: [1, 1, 1],
        block: [64, 1, 1],
        shared: 0,
        params: null_mut(),
        extra: extra.as_mut_ptr(),
    };
    let mut a = null_mut();
    check(
        cu!(cuGraphAddKernelNode(&mut a, g, std::ptr::null(), 0, ptr(&mut pa)): *mut *mut c_void, *mut c_void, *const *mut c_void, usize, *mut c_void),
        "kernel node v1",
    );
    // Node B: increment(counter, 5) with kernelParams (v2 params), after A.
    let (mut cp, mut by) = (counter, 5u64);
    let mut args = [ptr(&mut cp), ptr(&mut by)];
    let mut pb = KernelNodeParamsV2 {
        v1: KernelNodeParams {
            func: inc,
            grid: [1, 1, 1],
            block: [32, 1, 1],
            shared: 0,
            params: args.as_mut_ptr(),
            extra: null_mut(),
        },
        kern: null_mut(),
        ctx: null_mut(),
    };
    let mut b = null_mut();
    let deps = [a];
    check(
        cu!(cuGraphAddKernelNode_v2(&mut b, g, deps.as_ptr(), 1, ptr(&mut pb)): *mut *mut c_void, *mut c_void, *const *mut c_void, usize, *mut c_void),
        "kernel node v2",
    );
    // Node C: copy buf → copy, after A.
    let mut mc = Memcpy3D {
        src_type: 2,
        src_device: buf,
        src_pitch: 256,
        src_height: 1,
        dst_type: 2,
        dst_device: copy,
        dst_pitch: 256,
        dst_height: 1,
        width: 256,
        height: 1,
        depth: 1,
        ..Default::default()
    };
    let mut c = null_mut();
    check(
        cu!(cuGraphAddMemcpyNode(&mut c, g, deps.as_ptr(), 1, ptr(&mut mc), null_mut()): *mut *mut c_void, *mut c_void, *const *mut c_void, usize, *mut c_void, *mut c_void),
        "memcpy node",
    );
    let mut nodes = 0usize;
    check(
        cu!(cuGraphGetNodes(g, null_mut(), &mut nodes): *mut c_void, *mut *mut c_void, *mut usize),
        "nodes",
    );
    assert_eq!(nodes, 3);
    // The CUDA 11 form (5 arguments), as tinygrad calls it, and the CUDA 12 form.
    let mut exec = null_mut();
    check(
        cu!(cuGraphInstantiate_v2(&mut exec, g, null_mut(), null_mut(), 0): *mut *mut c_void, *mut c_void, *mut *mut c_void, *mut c_char, usize),
        "instantiate",
    );
    let mut exec2 = null_mut();
    check(
        cu!(cuGraphInstantiateWithFlags(&mut exec2, g, 0): *mut *mut c_void, *mut c_void, u64),
        "instantiate with flags",
    );
    for _ in 0..3 {
        check(
            cu!(cuGraphLaunch(exec, null_mut()): *mut c_void, *mut c_void),
            "launch",
        );
    }
    check(
        cu!(cuGraphLaunch(exec2, null_mut()): *mut c_void, *mut c_void),
        "launch 2",
    );
    check(cu!(cuStreamSynchronize(null_mut()): *mut c_void), "sync");
    assert_eq!(dtoh::<u64>(counter, 1)[0], 20);
    assert!(dtoh::<u32>(copy, 64).iter().all(|&x| x == 7));
    // Update the executable graph: new increment and a new fill value and grid.
    let by_p: *mut u64 = &mut by;
    unsafe { by_p.write(100) };
    check(
        cu!(cuGraphExecKernelNodeSetParams_v2(exec, b, ptr(&mut pb)): *mut c_void, *mut c_void, *mut c_void),
        "exec set v2",
    );
    let big = alloc(128 * 4);
    let fa_p: *mut FillArgs = &mut fa;
    unsafe {
        fa_p.write(FillArgs {
            p: big,
            v: 9,
            n: 128,
        })
    };
    pa.grid = [2, 1, 1];
    check(
        cu!(cuGraphExecKernelNodeSetParams(exec, a, ptr(&mut pa)): *mut c_void, *mut c_void, *mut c_void),
        "exec set v1",
    );
    check(
        cu!(cuGraphLaunch(exec, null_mut()): *mut c_void, *mut c_void),
        "launch",
    );
    check(cu!(cuStreamSynchronize(null_mut()): *mut c_void), "sync");
    assert_eq!(dtoh::<u64>(counter, 1)[0], 120);
    assert!(dtoh::<u32>(big, 128).iter().all(|&x| x == 9));
    // Memcpy node update: copy from `big` instead.
    mc.src_device = big;
    check(
        cu!(cuGraphExecMemcpyNodeSetParams(exec, c, ptr(&mut mc), null_mut()): *mut c_void, *mut c_void, *mut c_void, *mut c_void),
        "exec memcpy set",
    );
    check(
        cu!(cuMemsetD32_v2(copy, 0, 64): u64, u32, usize),
        "zero copy",
    );
    check(
        cu!(cuGraphLaunch(exec, null_mut()): *mut c_void, *mut c_void),
        "launch",
    );
    check(cu!(cuCtxSynchronize(): ), "sync");
    assert!(dtoh::<u32>(copy, 64).iter().all(|&x| x == 9));
    assert_eq!(dtoh::<u64>(counter, 1)[0], 220);
    // A node of another graph is refused.
    let mut g2 = null_mut();
    check(
        cu!(cuGraphCreate(&mut g2, 0): *mut *mut c_void, u32),
        "graph 2",
    );
    let mut x = null_mut();
    assert_eq!(
        cu!(cuGraphAddEmptyNode(&mut x, g2, deps.as_ptr(), 1): *mut *mut c_void, *mut c_void, *const *mut c_void, usize),
        1
    );
    for e in [exec, exec2] {
        check(cu!(cuGraphExecDestroy(e): *mut c_void), "exec destroy");
    }
    check(cu!(cuGraphDestroy(g): *mut c_void), "destroy");
    check(cu!(cuGraphDestroy(g2): *mut c_void), "destroy");
}

/// The difftest's graph: a fill of `buf`, an increment of `buf`'s first word after it, and a
/// memcpy node of `buf` after both. The copy sees the increment, on every launch and after
/// updates of both kernel nodes (a copy that depended on the fill only would race with the
/// increment: either result is CUDA's).
#[test]
fn graph_copy_after_the_writers_it_depends_on() {
    setup();
    let m = load_fixture("kernels");
    let inc = function(m, "increment");
    let fill = function(m, "fill_u32");
    let n = 4096usize;
    let buf = alloc(n * 4);
    let copy = alloc(n * 4);
    let mut g = null_mut();
    check(
        cu!(cuGraphCreate(&mut g, 0): *mut *mut c_void, u32),
        "graph",
    );
    let (mut fp, mut fv, mut fn_) = (buf, 5u32, n as u32);
    let mut fargs = [ptr(&mut fp), ptr(&mut fv), ptr(&mut fn_)];
    let mut pf = KernelNodeParams {
        func: fill,
        grid: [(n / 128) as u32, 1, 1],
        block: [128, 1, 1],
        shared: 0,
        params: fargs.as_mut_ptr(),
        extra: null_mut(),
    };
    let mut nf = null_mut();
    check(
        cu!(cuGraphAddKernelNode(&mut nf, g, std::ptr::null(), 0, ptr(&mut pf)): *mut *mut c_void, *mut c_void, *const *mut c_void, usize, *mut c_void),
        "fill node",
    );
    let (mut ip, mut by) = (buf, 1u64);
    let mut iargs = [ptr(&mut ip), ptr(&mut by)];
    let mut pi = KernelNodeParams {
        func: inc,
        grid: [1, 1, 1],
        block: [32, 1, 1],
        shared: 0,
        params: iargs.as_mut_ptr(),
        extra: null_mut(),
    };
    let mut ni = null_mut();
    check(
        cu!(cuGraphAddKernelNode(&mut ni, g, &nf, 1, ptr(&mut pi)): *mut *mut c_void, *mut c_void, *const *mut c_void, usize, *mut c_void),
        "increment node",
    );
    let mut mc = Memcpy3D {
        src_type: 2,
        src_device: buf,
        src_pitch: n * 4,
        src_height: 1,
        dst_type: 2,
        dst_device: copy,
        dst_pitch: n * 4,
        dst_height: 1,
        width: n * 4,
        height: 1,
        depth: 1,
        ..Default::default()
    };
    let deps = [nf, ni];
    let mut nc = null_mut();
    check(
        cu!(cuGraphAddMemcpyNode(&mut nc, g, deps.as_ptr(), 2, ptr(&mut mc), null_mut()): *mut *mut c_void, *mut c_void, *const *mut c_void, usize, *mut c_void, *mut c_void),
        "memcpy node",
    );
    let mut exec = null_mut();
    check(
        cu!(cuGraphInstantiateWithFlags(&mut exec, g, 0): *mut *mut c_void, *mut c_void, u64),
        "instantiate",
    );
    let expect = |fill_value: u32, add: u64| -> Vec<u32> {
        let mut v = vec![fill_value; n];
        let first = (u64::from(fill_value) | (u64::from(fill_value) << 32)) + add;
        v[0] = first as u32;
        v[1] = (first >> 32) as u32;
        v
    };
    for _ in 0..3 {
        check(
            cu!(cuGraphLaunch(exec, null_mut()): *mut c_void, *mut c_void),
            "launch",
        );
    }
    check(cu!(cuCtxSynchronize(): ), "sync");
    assert_eq!(dtoh::<u32>(copy, n), expect(5, 1));
    // New parameters for both kernels: the copy still follows them.
    let (fv_p, by_p): (*mut u32, *mut u64) = (&mut fv, &mut by);
    unsafe {
        fv_p.write(9);
        by_p.write(77);
    }
    pf.grid = [(n / 256) as u32, 1, 1];
    pf.block = [256, 1, 1];
    check(
        cu!(cuGraphExecKernelNodeSetParams(exec, nf, ptr(&mut pf)): *mut c_void, *mut c_void, *mut c_void),
        "update fill",
    );
    check(
        cu!(cuGraphExecKernelNodeSetParams(exec, ni, ptr(&mut pi)): *mut c_void, *mut c_void, *mut c_void),
        "update increment",
    );
    check(
        cu!(cuGraphLaunch(exec, null_mut()): *mut c_void, *mut c_void),
        "launch updated",
    );
    check(cu!(cuCtxSynchronize(): ), "sync");
    assert_eq!(dtoh::<u32>(copy, n), expect(9, 77));
    check(cu!(cuGraphExecDestroy(exec): *mut c_void), "exec destroy");
    check(cu!(cuGraphDestroy(g): *mut c_void), "destroy");
}

/// A one-row copy of `bytes` bytes between two (memory type, address) ends: host addresses
/// for `CU_MEMORYTYPE_HOST` (1), device (or unified) addresses otherwise.
fn row_copy(src: (u32, u64), dst: (u32, u64), bytes: usize) -> Memcpy3D {
    let mut m = Memcpy3D {
        src_type: src.0,
        dst_type: dst.0,
        width: bytes,
        height: 1,
        depth: 1,
        ..Default::default()
    };
    if src.0 == 1 {
        m.src_host = src.1 as usize;
    } else {
        m.src_device = src.1;
    }
    if dst.0 == 1 {
        m.dst_host = dst.1 as usize;
    } else {
        m.dst_device = dst.1;
    }
    m
}

/// A graph of copy `up` followed by copy `down`, and its executable graph.
fn round_trip_graph(mut up: Memcpy3D, mut down: Memcpy3D) -> (*mut c_void, *mut c_void) {
    let mut g = null_mut();
    check(
        cu!(cuGraphCreate(&mut g, 0): *mut *mut c_void, u32),
        "cuGraphCreate",
    );
    let (mut nu, mut nd) = (null_mut(), null_mut());
    check(
        cu!(cuGraphAddMemcpyNode(&mut nu, g, std::ptr::null(), 0, ptr(&mut up), null_mut()): *mut *mut c_void, *mut c_void, *const *mut c_void, usize, *mut c_void, *mut c_void),
        "upload node",
    );
    check(
        cu!(cuGraphAddMemcpyNode(&mut nd, g, &nu, 1, ptr(&mut down), null_mut()): *mut *mut c_void, *mut c_void, *const *mut c_void, usize, *mut c_void, *mut c_void),
        "download node",
    );
    let mut exec = null_mut();
    check(
        cu!(cuGraphInstantiateWithFlags(&mut exec, g, 0): *mut *mut c_void, *mut c_void, u64),
        "instantiate",
    );
    (g, exec)
}

/// Memcpy nodes between pinned host memory and device memory (the CUDA runtime's
/// `cudaGraphAddMemcpyNode` with `cudaMemcpyHostToDevice`, as the samples simpleCudaGraphs and
/// jacobiCudaGraphs build them): host → device → host in one graph, replayed with new host data;
/// then the same from and to pageable host memory.
#[test]
fn memcpy_nodes_copy_pinned_and_pageable_host_memory() {
    setup();
    let n = 300usize;
    let bytes = n * 4;
    let (mut hin, mut hout): (*mut c_void, *mut c_void) = (null_mut(), null_mut());
    check(
        cu!(cuMemAllocHost_v2(&mut hin, bytes): *mut *mut c_void, usize),
        "cuMemAllocHost (in)",
    );
    check(
        cu!(cuMemAllocHost_v2(&mut hout, bytes): *mut *mut c_void, usize),
        "cuMemAllocHost (out)",
    );
    let dev = alloc(bytes);
    // Host memory type for the upload; the download names the host pointer as a unified one.
    let (g, exec) = round_trip_graph(
        row_copy((1, hin as u64), (2, dev), bytes),
        row_copy((2, dev), (4, hout as u64), bytes),
    );
    for round in 0..3u32 {
        // SAFETY: both are pinned allocations of `bytes` bytes, not in use by the GPU now.
        let (src, dst) = unsafe {
            (
                std::slice::from_raw_parts_mut(hin as *mut u32, n),
                std::slice::from_raw_parts_mut(hout as *mut u32, n),
            )
        };
        for (i, v) in src.iter_mut().enumerate() {
            *v = i as u32 * 7 + round * 1000;
        }
        dst.fill(0);
        check(
            cu!(cuGraphLaunch(exec, null_mut()): *mut c_void, *mut c_void),
            "launch",
        );
        check(cu!(cuCtxSynchronize(): ), "sync");
        assert_eq!(dst, src, "round {round}");
    }
    check(cu!(cuGraphExecDestroy(exec): *mut c_void), "exec destroy");
    check(cu!(cuGraphDestroy(g): *mut c_void), "graph destroy");

    // Pageable host memory (the samples simpleCudaGraphs and jacobiCudaGraphs copy from and to
    // it): read when each launch starts, written once it has run.
    let mut pin = vec![0u32; n];
    let mut pout = vec![0u32; n];
    let (g, exec) = round_trip_graph(
        row_copy((1, pin.as_ptr() as u64), (2, dev), bytes),
        row_copy((2, dev), (1, pout.as_mut_ptr() as u64), bytes),
    );
    for round in 0..3u32 {
        for (i, v) in pin.iter_mut().enumerate() {
            *v = i as u32 * 3 + round * 500 + 1;
        }
        pout.fill(0);
        check(
            cu!(cuGraphLaunch(exec, null_mut()): *mut c_void, *mut c_void),
            "launch",
        );
        check(cu!(cuStreamSynchronize(null_mut()): *mut c_void), "sync");
        assert_eq!(pout, pin, "pageable round {round}");
    }
    // Both ends pageable is refused.
    let mut both = Memcpy3D {
        src_type: 1,
        src_host: pin.as_ptr() as usize,
        dst_type: 1,
        dst_host: pout.as_mut_ptr() as usize,
        width: bytes,
        height: 1,
        depth: 1,
        ..Default::default()
    };
    let mut nb = null_mut();
    assert_eq!(
        cu!(cuGraphAddMemcpyNode(&mut nb, g, std::ptr::null(), 0, ptr(&mut both), null_mut()): *mut *mut c_void, *mut c_void, *const *mut c_void, usize, *mut c_void, *mut c_void),
        801,
        "a memcpy node between two pageable addresses"
    );
    check(cu!(cuGraphExecDestroy(exec): *mut c_void), "exec destroy");
    check(cu!(cuGraphDestroy(g): *mut c_void), "graph destroy");
    check(cu!(cuMemFreeHost(hin): *mut c_void), "free in");
    check(cu!(cuMemFreeHost(hout): *mut c_void), "free out");
}

static HOST_SEEN: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
static HOST_CALLS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// A host node: records the first word of the pinned buffer it is given, then adds 1 to each of
/// its 64 words.
unsafe extern "C" fn add_one(data: *mut c_void) {
    let w = std::slice::from_raw_parts_mut(data as *mut u32, 64);
    HOST_SEEN.store(w[0], std::sync::atomic::Ordering::SeqCst);
    for v in w {
        *v += 1;
    }
    HOST_CALLS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
}

/// Host nodes (the sample simpleCudaGraphs): a kernel fills device memory, a copy brings it to
/// pinned memory, the host node reads and changes it, a copy takes it back to the device. The
/// host node sees the copy's result and the copy after it sees the host node's; a clone of the
/// graph does the same; `cuLaunchHostFunc` on a capturing stream becomes a host node.
#[test]
fn host_nodes_run_between_the_nodes_around_them() {
    use std::sync::atomic::Ordering::SeqCst;
    setup();
    let m = load_fixture("kernels");
    let fill = function(m, "fill_u32");
    let n = 64usize;
    let (d, d2) = (alloc(n * 4), alloc(n * 4));
    let mut pinned: *mut c_void = null_mut();
    check(
        cu!(cuMemAllocHost_v2(&mut pinned, n * 4): *mut *mut c_void, usize),
        "cuMemAllocHost",
    );
    let mut g = null_mut();
    check(
        cu!(cuGraphCreate(&mut g, 0): *mut *mut c_void, u32),
        "cuGraphCreate",
    );
    let (mut p, mut v, mut nn) = (d, 40u32, n as u32);
    let mut args = [ptr(&mut p), ptr(&mut v), ptr(&mut nn)];
    let mut pk = KernelNodeParams {
        func: fill,
        grid: [1, 1, 1],
        block: [64, 1, 1],
        shared: 0,
        params: args.as_mut_ptr(),
        extra: null_mut(),
    };
    let mut a = null_mut();
    check(
        cu!(cuGraphAddKernelNode(&mut a, g, std::ptr::null(), 0, ptr(&mut pk)): *mut *mut c_void, *mut c_void, *const *mut c_void, usize, *mut c_void),
        "fill node",
    );
    let mut down = Memcpy3D {
        src_type: 2,
        src_device: d,
        dst_type: 1,
        dst_host: pinned as usize,
        width: n * 4,
        height: 1,
        depth: 1,
        ..Default::default()
    };
    let mut c1 = null_mut();
    check(
        cu!(cuGraphAddMemcpyNode(&mut c1, g, &a, 1, ptr(&mut down), null_mut()): *mut *mut c_void, *mut c_void, *const *mut c_void, usize, *mut c_void, *mut c_void),
        "copy to pinned",
    );
    #[repr(C)]
    struct HostParams {
        f: unsafe extern "C" fn(*mut c_void),
        data: *mut c_void,
    }
    let mut hp = HostParams {
        f: add_one,
        data: pinned,
    };
    let mut hn = null_mut();
    check(
        cu!(cuGraphAddHostNode(&mut hn, g, &c1, 1, ptr(&mut hp)): *mut *mut c_void, *mut c_void, *const *mut c_void, usize, *mut c_void),
        "cuGraphAddHostNode",
    );
    let mut ty = 99u32;
    check(
        cu!(cuGraphNodeGetType(hn, &mut ty): *mut c_void, *mut u32),
        "cuGraphNodeGetType",
    );
    assert_eq!(ty, 3, "CU_GRAPH_NODE_TYPE_HOST");
    let mut up = Memcpy3D {
        src_type: 1,
        src_host: pinned as usize,
        dst_type: 2,
        dst_device: d2,
        width: n * 4,
        height: 1,
        depth: 1,
        ..Default::default()
    };
    let mut c2 = null_mut();
    check(
        cu!(cuGraphAddMemcpyNode(&mut c2, g, &hn, 1, ptr(&mut up), null_mut()): *mut *mut c_void, *mut c_void, *const *mut c_void, usize, *mut c_void, *mut c_void),
        "copy back",
    );
    let mut clone = null_mut();
    check(
        cu!(cuGraphClone(&mut clone, g): *mut *mut c_void, *mut c_void),
        "cuGraphClone",
    );
    for (which, graph) in [("graph", g), ("clone", clone)] {
        let mut exec = null_mut();
        check(
            cu!(cuGraphInstantiateWithFlags(&mut exec, graph, 0): *mut *mut c_void, *mut c_void, u64),
            "instantiate",
        );
        HOST_CALLS.store(0, SeqCst);
        for _ in 0..3 {
            check(
                cu!(cuGraphLaunch(exec, null_mut()): *mut c_void, *mut c_void),
                "launch",
            );
        }
        check(cu!(cuCtxSynchronize(): ), "sync");
        assert_eq!(HOST_CALLS.load(SeqCst), 3, "{which}: host node calls");
        assert_eq!(
            HOST_SEEN.load(SeqCst),
            40,
            "{which}: the host node saw the copy's result"
        );
        assert_eq!(
            dtoh::<u32>(d2, n),
            vec![41; n],
            "{which}: the copy after saw the host node's"
        );
        check(cu!(cuGraphExecDestroy(exec): *mut c_void), "exec destroy");
    }
    check(cu!(cuGraphDestroy(clone): *mut c_void), "clone destroy");
    check(cu!(cuGraphDestroy(g): *mut c_void), "graph destroy");

    // cuLaunchHostFunc while capturing: a host node of the captured graph, after the kernel.
    let mut s = null_mut();
    check(
        cu!(cuStreamCreate(&mut s, 1): *mut *mut c_void, u32),
        "stream",
    );
    check(
        cu!(cuStreamBeginCapture_v2(s, 2): *mut c_void, u32),
        "begin capture",
    );
    let l: Launch = f("cuLaunchKernel");
    let (mut p2, mut v2, mut n2) = (d, 9u32, n as u32);
    let mut a2 = [ptr(&mut p2), ptr(&mut v2), ptr(&mut n2)];
    check(
        unsafe { l(fill, 1, 1, 1, 64, 1, 1, 0, s, a2.as_mut_ptr(), null_mut()) },
        "captured fill",
    );
    check(
        cu!(cuLaunchHostFunc(s, add_one, pinned): *mut c_void, unsafe extern "C" fn(*mut c_void), *mut c_void),
        "captured cuLaunchHostFunc",
    );
    let mut cg = null_mut();
    check(
        cu!(cuStreamEndCapture(s, &mut cg): *mut c_void, *mut *mut c_void),
        "end capture",
    );
    let mut exec = null_mut();
    check(
        cu!(cuGraphInstantiateWithFlags(&mut exec, cg, 0): *mut *mut c_void, *mut c_void, u64),
        "instantiate captured",
    );
    HOST_CALLS.store(0, SeqCst);
    // SAFETY: pinned memory of 64 words, not in use by the GPU now.
    unsafe { std::slice::from_raw_parts_mut(pinned as *mut u32, n).fill(100) };
    check(
        cu!(cuGraphLaunch(exec, s): *mut c_void, *mut c_void),
        "launch captured",
    );
    check(cu!(cuStreamSynchronize(s): *mut c_void), "sync");
    assert_eq!(HOST_CALLS.load(SeqCst), 1, "captured host function calls");
    assert_eq!(HOST_SEEN.load(SeqCst), 100);
    assert_eq!(dtoh::<u32>(d, n), vec![9; n], "the captured kernel ran");
    check(cu!(cuGraphExecDestroy(exec): *mut c_void), "exec destroy");
    check(cu!(cuGraphDestroy(cg): *mut c_void), "graph destroy");
    check(cu!(cuStreamDestroy_v2(s): *mut c_void), "stream destroy");
    check(cu!(cuMemFreeHost(pinned): *mut c_void), "free pinned");
}

/// An allocation node of `bytes` bytes of device 0 in graph `g` (no dependencies): the node,
/// its address and its `CUDA_MEM_ALLOC_NODE_PARAMS` (poolProps: allocType PINNED, location
/// DEVICE 0; no access descriptors; bytesize at 104, dptr at 112).
fn alloc_node(g: *mut c_void, bytes: usize) -> (*mut c_void, u64, [u8; 120]) {
    let mut params = [0u8; 120];
    params[0..4].copy_from_slice(&1i32.to_ne_bytes());
    params[8..12].copy_from_slice(&1i32.to_ne_bytes());
    params[104..112].copy_from_slice(&(bytes as u64).to_ne_bytes());
    let mut an = null_mut();
    check(
        cu!(cuGraphAddMemAllocNode(&mut an, g, std::ptr::null(), 0, params.as_mut_ptr()): *mut *mut c_void, *mut c_void, *const *mut c_void, usize, *mut u8),
        "cuGraphAddMemAllocNode",
    );
    let dptr = u64::from_ne_bytes(params[112..120].try_into().unwrap());
    assert_ne!(dptr, 0);
    (an, dptr, params)
}

/// Graph memory nodes (the samples graphMemoryNodes and conjugateGradientCudaGraphs): an
/// allocation node's memory is used by the nodes after it and freed by a free node; the same
/// through `cuMemAllocAsync` and `cuMemFreeAsync` on a capturing stream.
#[test]
fn memory_nodes_allocate_for_the_nodes_after_them() {
    setup();
    let m = load_fixture("kernels");
    let fill = function(m, "fill_u32");
    let n = 256usize;
    let out = alloc(n * 4);
    let mut g = null_mut();
    check(
        cu!(cuGraphCreate(&mut g, 0): *mut *mut c_void, u32),
        "cuGraphCreate",
    );
    let (an, dptr, params) = alloc_node(g, n * 4);
    let mut back = [0u8; 120];
    check(
        cu!(cuGraphMemAllocNodeGetParams(an, back.as_mut_ptr()): *mut c_void, *mut u8),
        "cuGraphMemAllocNodeGetParams",
    );
    assert_eq!(back[104..120], params[104..120], "bytesize and dptr");
    let (mut p, mut v, mut nn) = (dptr, 0x5au32, n as u32);
    let mut args = [ptr(&mut p), ptr(&mut v), ptr(&mut nn)];
    let mut pk = KernelNodeParams {
        func: fill,
        grid: [1, 1, 1],
        block: [256, 1, 1],
        shared: 0,
        params: args.as_mut_ptr(),
        extra: null_mut(),
    };
    let mut kn = null_mut();
    check(
        cu!(cuGraphAddKernelNode(&mut kn, g, &an, 1, ptr(&mut pk)): *mut *mut c_void, *mut c_void, *const *mut c_void, usize, *mut c_void),
        "fill node",
    );
    let mut mc = Memcpy3D {
        src_type: 2,
        src_device: dptr,
        dst_type: 2,
        dst_device: out,
        width: n * 4,
        height: 1,
        depth: 1,
        ..Default::default()
    };
    let mut cn = null_mut();
    check(
        cu!(cuGraphAddMemcpyNode(&mut cn, g, &kn, 1, ptr(&mut mc), null_mut()): *mut *mut c_void, *mut c_void, *const *mut c_void, usize, *mut c_void, *mut c_void),
        "copy node",
    );
    let mut fnode = null_mut();
    check(
        cu!(cuGraphAddMemFreeNode(&mut fnode, g, &cn, 1, dptr): *mut *mut c_void, *mut c_void, *const *mut c_void, usize, u64),
        "cuGraphAddMemFreeNode",
    );
    let (mut t1, mut t2, mut freed) = (0u32, 0u32, 0u64);
    check(
        cu!(cuGraphNodeGetType(an, &mut t1): *mut c_void, *mut u32),
        "type",
    );
    check(
        cu!(cuGraphNodeGetType(fnode, &mut t2): *mut c_void, *mut u32),
        "type",
    );
    assert_eq!((t1, t2), (10, 11), "MEM_ALLOC, MEM_FREE");
    check(
        cu!(cuGraphMemFreeNodeGetParams(fnode, &mut freed): *mut c_void, *mut u64),
        "cuGraphMemFreeNodeGetParams",
    );
    assert_eq!(freed, dptr);
    // A second free of the same memory, and a free of what no allocation node made.
    let mut bad = null_mut();
    assert_eq!(
        cu!(cuGraphAddMemFreeNode(&mut bad, g, &cn, 1, dptr): *mut *mut c_void, *mut c_void, *const *mut c_void, usize, u64),
        1
    );
    assert_eq!(
        cu!(cuGraphAddMemFreeNode(&mut bad, g, &cn, 1, out): *mut *mut c_void, *mut c_void, *const *mut c_void, usize, u64),
        1
    );
    let mut exec = null_mut();
    check(
        cu!(cuGraphInstantiateWithFlags(&mut exec, g, 0): *mut *mut c_void, *mut c_void, u64),
        "instantiate",
    );
    check(
        cu!(cuGraphLaunch(exec, null_mut()): *mut c_void, *mut c_void),
        "launch",
    );
    check(cu!(cuCtxSynchronize(): ), "sync");
    assert_eq!(dtoh::<u32>(out, n), vec![0x5a; n]);
    check(cu!(cuGraphExecDestroy(exec): *mut c_void), "exec destroy");
    check(cu!(cuGraphDestroy(g): *mut c_void), "graph destroy");

    // Captured cuMemAllocAsync / cuMemFreeAsync.
    let mut s = null_mut();
    check(
        cu!(cuStreamCreate(&mut s, 1): *mut *mut c_void, u32),
        "stream",
    );
    check(
        cu!(cuStreamBeginCapture_v2(s, 2): *mut c_void, u32),
        "begin capture",
    );
    let mut tmp = 0u64;
    check(
        cu!(cuMemAllocAsync(&mut tmp, n * 4, s): *mut u64, usize, *mut c_void),
        "captured cuMemAllocAsync",
    );
    assert_ne!(tmp, 0);
    let l: Launch = f("cuLaunchKernel");
    let (mut p2, mut v2, mut n2) = (tmp, 0x77u32, n as u32);
    let mut a2 = [ptr(&mut p2), ptr(&mut v2), ptr(&mut n2)];
    check(
        unsafe { l(fill, 1, 1, 1, 256, 1, 1, 0, s, a2.as_mut_ptr(), null_mut()) },
        "captured fill",
    );
    check(
        cu!(cuMemcpyDtoDAsync_v2(out, tmp, n * 4, s): u64, u64, usize, *mut c_void),
        "captured copy",
    );
    check(
        cu!(cuMemFreeAsync(tmp, s): u64, *mut c_void),
        "captured cuMemFreeAsync",
    );
    let mut cg = null_mut();
    check(
        cu!(cuStreamEndCapture(s, &mut cg): *mut c_void, *mut *mut c_void),
        "end capture",
    );
    let mut exec = null_mut();
    check(
        cu!(cuGraphInstantiateWithFlags(&mut exec, cg, 0): *mut *mut c_void, *mut c_void, u64),
        "instantiate captured",
    );
    check(
        cu!(cuGraphLaunch(exec, s): *mut c_void, *mut c_void),
        "launch captured",
    );
    check(cu!(cuStreamSynchronize(s): *mut c_void), "sync");
    assert_eq!(dtoh::<u32>(out, n), vec![0x77; n]);
    check(cu!(cuGraphExecDestroy(exec): *mut c_void), "exec destroy");
    check(cu!(cuGraphDestroy(cg): *mut c_void), "graph destroy");
    check(cu!(cuStreamDestroy_v2(s): *mut c_void), "stream destroy");
}

/// Graph memory without a free node, freed by the program (the sample graphMemoryNodes): each
/// launch of the graph allocates it again, so `cuMemFree` / `cuMemFreeAsync` between launches
/// succeed and later launches still have it; a free node in another graph may follow; the
/// memory is released once no graph holds its allocation node.
#[test]
fn graph_memory_freed_by_the_program_between_launches() {
    setup();
    let m = load_fixture("kernels");
    let fill = function(m, "fill_u32");
    let n = 64usize;
    let out = alloc(n * 4);
    let mut g = null_mut();
    check(
        cu!(cuGraphCreate(&mut g, 0): *mut *mut c_void, u32),
        "graph",
    );
    let (an, dptr, _) = alloc_node(g, n * 4);
    let mut v = 0u32;
    let (mut p, mut nn) = (dptr, n as u32);
    let mut args = [ptr(&mut p), ptr(&mut v), ptr(&mut nn)];
    let mut pk = KernelNodeParams {
        func: fill,
        grid: [1, 1, 1],
        block: [64, 1, 1],
        shared: 0,
        params: args.as_mut_ptr(),
        extra: null_mut(),
    };
    let mut kn = null_mut();
    check(
        cu!(cuGraphAddKernelNode(&mut kn, g, &an, 1, ptr(&mut pk)): *mut *mut c_void, *mut c_void, *const *mut c_void, usize, *mut c_void),
        "fill node",
    );
    let mut mc = Memcpy3D {
        src_type: 2,
        src_device: dptr,
        dst_type: 2,
        dst_device: out,
        width: n * 4,
        height: 1,
        depth: 1,
        ..Default::default()
    };
    let mut cn = null_mut();
    check(
        cu!(cuGraphAddMemcpyNode(&mut cn, g, &kn, 1, ptr(&mut mc), null_mut()): *mut *mut c_void, *mut c_void, *const *mut c_void, usize, *mut c_void, *mut c_void),
        "copy node",
    );
    let mut exec = null_mut();
    check(
        cu!(cuGraphInstantiateWithFlags(&mut exec, g, 0): *mut *mut c_void, *mut c_void, u64),
        "instantiate",
    );
    let s = null_mut::<c_void>();
    let set_value = |exec: *mut c_void, value: u32| {
        let mut v = value;
        let (mut p, mut nn) = (dptr, n as u32);
        let mut args = [ptr(&mut p), ptr(&mut v), ptr(&mut nn)];
        let mut pk = KernelNodeParams {
            func: fill,
            grid: [1, 1, 1],
            block: [64, 1, 1],
            shared: 0,
            params: args.as_mut_ptr(),
            extra: null_mut(),
        };
        check(
            cu!(cuGraphExecKernelNodeSetParams(exec, kn, ptr(&mut pk)): *mut c_void, *mut c_void, *mut c_void),
            "cuGraphExecKernelNodeSetParams",
        );
    };
    for (round, value) in [(0, 11u32), (1, 22), (2, 33)] {
        set_value(exec, value);
        check(
            cu!(cuGraphLaunch(exec, s): *mut c_void, *mut c_void),
            "launch",
        );
        check(cu!(cuCtxSynchronize(): ), "sync");
        assert_eq!(dtoh::<u32>(out, n), vec![value; n], "round {round}");
        match round {
            0 => check(cu!(cuMemFree_v2(dptr): u64), "cuMemFree of graph memory"),
            1 => check(
                cu!(cuMemFreeAsync(dptr, s): u64, *mut c_void),
                "cuMemFreeAsync of graph memory",
            ),
            _ => {}
        }
    }
    // A free node of the same memory in another graph.
    let mut g2 = null_mut();
    check(
        cu!(cuGraphCreate(&mut g2, 0): *mut *mut c_void, u32),
        "graph 2",
    );
    let mut fnode = null_mut();
    check(
        cu!(cuGraphAddMemFreeNode(&mut fnode, g2, std::ptr::null(), 0, dptr): *mut *mut c_void, *mut c_void, *const *mut c_void, usize, u64),
        "a free node in another graph",
    );
    check(cu!(cuGraphExecDestroy(exec): *mut c_void), "exec destroy");
    check(cu!(cuGraphDestroy(g): *mut c_void), "graph destroy");
    // The free node's graph still holds the memory.
    let mut ctx: *mut c_void = null_mut();
    check(
        cu!(cuPointerGetAttribute(ptr(&mut ctx), 1, dptr): *mut c_void, u32, u64),
        "the memory is there while a graph holds it",
    );
    check(cu!(cuGraphDestroy(g2): *mut c_void), "graph 2 destroy");
    check(cu!(cuCtxSynchronize(): ), "sync");
    assert_eq!(
        cu!(cuMemFree_v2(dptr): u64),
        1,
        "the memory was released with the last graph holding it"
    );
}

/// Memcpy nodes of pitched blocks: a 3-D block between device memory with offsets and
/// different pitches and rows per slice, the result to pageable host memory (only the rows are
/// written: the bytes between them keep their value), a 2-D block from pageable host memory,
/// and `cuMemcpy2DAsync` on a capturing stream. A pitch below the width is invalid.
#[test]
fn memcpy_nodes_copy_pitched_blocks() {
    setup();
    let (w, h, d) = (12usize, 5usize, 2usize);
    // Source: pitch 16, 6 rows per slice, the block 4 bytes into each row.
    let src_bytes: Vec<u8> = (0..16 * 6 * 2).map(|i| (i % 251) as u8).collect();
    let src = alloc(src_bytes.len());
    htod(src, &src_bytes);
    // Destination: pitch 20, 5 rows per slice.
    let dst = alloc(20 * 5 * 2);
    check(cu!(cuMemsetD8_v2(dst, 0, 200): u64, u8, usize), "zero dst");
    let mut g = null_mut();
    check(
        cu!(cuGraphCreate(&mut g, 0): *mut *mut c_void, u32),
        "graph",
    );
    let add = |deps: &[*mut c_void], m: &mut Memcpy3D| -> (u32, *mut c_void) {
        let mut n = null_mut();
        let r = cu!(cuGraphAddMemcpyNode(&mut n, g, deps.as_ptr(), deps.len(), ptr(m), null_mut()): *mut *mut c_void, *mut c_void, *const *mut c_void, usize, *mut c_void, *mut c_void);
        (r, n)
    };
    let mut block = Memcpy3D {
        src_x: 4,
        src_type: 2,
        src_device: src,
        src_pitch: 16,
        src_height: 6,
        dst_type: 2,
        dst_device: dst,
        dst_pitch: 20,
        dst_height: 5,
        width: w,
        height: h,
        depth: d,
        ..Default::default()
    };
    let (r, n1) = add(&[], &mut block);
    check(r, "a 3-D device block");
    // To pageable memory: pitch 24, 5 rows per slice, filled with 0xee first.
    let mut out = vec![0xeeu8; 24 * 5 * 2];
    let mut down = Memcpy3D {
        src_type: 2,
        src_device: dst,
        src_pitch: 20,
        src_height: 5,
        dst_type: 1,
        dst_host: out.as_mut_ptr() as usize,
        dst_pitch: 24,
        dst_height: 5,
        width: w,
        height: h,
        depth: d,
        ..Default::default()
    };
    let (r, n2) = add(&[n1], &mut down);
    check(r, "a 3-D block to pageable memory");
    // From pageable memory: a 2-D block of pitch 13 into contiguous rows.
    let inp: Vec<u8> = (0..13 * 5).map(|i| (200 - i) as u8).collect();
    let up_dst = alloc(w * h);
    let mut up = Memcpy3D {
        src_type: 1,
        src_host: inp.as_ptr() as usize,
        src_pitch: 13,
        dst_type: 2,
        dst_device: up_dst,
        dst_pitch: w,
        width: w,
        height: h,
        depth: 1,
        ..Default::default()
    };
    let (r, _) = add(&[n2], &mut up);
    check(r, "a 2-D block from pageable memory");
    let mut narrow = Memcpy3D {
        src_pitch: 8,
        ..block
    };
    assert_eq!(
        add(&[], &mut narrow).0,
        1,
        "srcPitch 8 below WidthInBytes 12"
    );
    let mut exec = null_mut();
    check(
        cu!(cuGraphInstantiateWithFlags(&mut exec, g, 0): *mut *mut c_void, *mut c_void, u64),
        "instantiate",
    );
    check(
        cu!(cuGraphLaunch(exec, null_mut()): *mut c_void, *mut c_void),
        "launch",
    );
    check(cu!(cuCtxSynchronize(): ), "sync");
    let got = dtoh::<u8>(dst, 200);
    for z in 0..d {
        for y in 0..h {
            for x in 0..20 {
                let want = if x < w {
                    src_bytes[z * 96 + y * 16 + 4 + x]
                } else {
                    0
                };
                assert_eq!(got[z * 100 + y * 20 + x], want, "dst z {z} y {y} x {x}");
                if x < w {
                    assert_eq!(out[z * 120 + y * 24 + x], want, "out z {z} y {y} x {x}");
                }
            }
            for x in w..24 {
                assert_eq!(out[z * 120 + y * 24 + x], 0xee, "out gap z {z} y {y} x {x}");
            }
        }
    }
    let got = dtoh::<u8>(up_dst, w * h);
    for y in 0..h {
        assert_eq!(
            got[y * w..(y + 1) * w],
            inp[y * 13..y * 13 + w],
            "row {y} from pageable memory"
        );
    }
    check(cu!(cuGraphExecDestroy(exec): *mut c_void), "exec destroy");
    check(cu!(cuGraphDestroy(g): *mut c_void), "graph destroy");

    // cuMemcpy2DAsync captured: pageable rows of pitch 16 into device rows of pitch 12.
    let mut s = null_mut();
    check(
        cu!(cuStreamCreate(&mut s, 1): *mut *mut c_void, u32),
        "stream",
    );
    check(
        cu!(cuStreamBeginCapture_v2(s, 2): *mut c_void, u32),
        "begin capture",
    );
    let mut rows: Vec<u8> = vec![0; 16 * h];
    let c2 = crate::arrays::Memcpy2D {
        src_type: 1,
        src_host: rows.as_ptr() as *const c_void,
        src_pitch: 16,
        dst_type: 2,
        dst_device: up_dst,
        dst_pitch: w,
        width: w,
        height: h,
        ..Default::default()
    };
    check(
        cu!(cuMemcpy2DAsync_v2(&c2, s): *const crate::arrays::Memcpy2D, *mut c_void),
        "captured cuMemcpy2DAsync_v2",
    );
    let mut cg = null_mut();
    check(
        cu!(cuStreamEndCapture(s, &mut cg): *mut c_void, *mut *mut c_void),
        "end capture",
    );
    let mut ce = null_mut();
    check(
        cu!(cuGraphInstantiateWithFlags(&mut ce, cg, 0): *mut *mut c_void, *mut c_void, u64),
        "instantiate captured",
    );
    // The rows are read when the graph runs, not when the copy was captured.
    for (i, b) in rows.iter_mut().enumerate() {
        *b = (i % 16 + 7 * (i / 16)) as u8;
    }
    check(
        cu!(cuGraphLaunch(ce, s): *mut c_void, *mut c_void),
        "launch captured",
    );
    check(cu!(cuStreamSynchronize(s): *mut c_void), "sync");
    let got = dtoh::<u8>(up_dst, w * h);
    for y in 0..h {
        assert_eq!(
            got[y * w..(y + 1) * w],
            rows[y * 16..y * 16 + w],
            "captured row {y}"
        );
    }
    check(cu!(cuGraphExecDestroy(ce): *mut c_void), "exec destroy");
    check(cu!(cuGraphDestroy(cg): *mut c_void), "graph destroy");
    check(cu!(cuStreamDestroy_v2(s): *mut c_void), "stream destroy");
}
