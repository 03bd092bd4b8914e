//! `cuMemGetInfo` accounts for allocations as CUDA programs expect (cudarc's
//! `test_post_alloc_memory`): the free figure taken right after the context is created does not
//! drop later for memory the library reserves on its own (kernel stacks: libcuda reserves them
//! with the context), a small allocation lowers it, and after that allocation is freed and the
//! context synchronized it is back where it was, also after a kernel ran.
//!
//! Virtual memory management gives back what an allocation holds: its file descriptor (Jetson:
//! the nvmap dma-buf; desktop GPUs: host memory's memfd) and its device memory.
//!
//! Its own test binary (one process): the figures are process- and device-wide, and the tests
//! of the `driver` binary allocate concurrently; the two tests here take turns.

#![allow(non_snake_case)]

#[macro_use]
#[path = "common/mod.rs"]
mod common;
use common::*;

use std::ffi::c_void;
use std::ptr::null_mut;

fn free_now() -> usize {
    let (mut free, mut total) = (0usize, 0usize);
    check(
        cu!(cuMemGetInfo_v2(&mut free, &mut total): *mut usize, *mut usize),
        "cuMemGetInfo_v2",
    );
    assert!(free <= total, "free {free} > total {total}");
    free
}

/// Device 0's primary context, current on the calling thread.
fn primary_current() {
    check(cu!(cuInit(0): u32), "cuInit");
    let mut ctx = null_mut();
    check(
        cu!(cuDevicePrimaryCtxRetain(&mut ctx, 0): *mut *mut c_void, i32),
        "cuDevicePrimaryCtxRetain",
    );
    check(cu!(cuCtxSetCurrent(ctx): *mut c_void), "cuCtxSetCurrent");
}

/// The tests of this binary run one at a time.
static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn free_memory_comes_back_after_free_and_synchronize() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    primary_current();
    // cudarc's test_post_alloc_memory: a copy into a small allocation, freed before a sync.
    let before = free_now();
    let data = [1.5f32, 2.5, 3.5, 4.5, 5.5];
    let d = alloc(std::mem::size_of_val(&data));
    check(
        cu!(cuMemcpyHtoDAsync_v2(d, data.as_ptr() as *const c_void, 20, null_mut()):
            u64, *const c_void, usize, *mut c_void),
        "cuMemcpyHtoDAsync_v2",
    );
    let allocated = free_now();
    assert!(
        allocated < before,
        "free memory {allocated} after a 20-byte allocation, {before} before"
    );
    check(cu!(cuMemFree_v2(d): u64), "cuMemFree_v2");
    check(cu!(cuCtxSynchronize(): ), "cuCtxSynchronize");
    let after = free_now();
    // The emulated Orin keeps the pages of a buffer unmapped while channels run for a grace
    // period of its own (so that its GPU model never touches freed host memory), and returns
    // them at a later unmap: there, only the freed buffer's own pages may still be out. RM
    // (and nvgpu once its job clean-up has run) return them at once.
    let after = if emulated() && after == allocated {
        before
    } else {
        after
    };
    assert_eq!(
        after, before,
        "free memory after the copy's allocation was freed and the context synchronized \
         ({after}) is not what it was before it ({before}); allocated: {allocated}"
    );

    // The same around a kernel launch (its module's code is memory that stays, as under CUDA).
    let m = load_fixture("kernels");
    let fill = function(m, "fill_u32");
    let before = free_now();
    let d = alloc(20);
    let allocated = free_now();
    let (mut ptr, mut val, mut n) = (d, 7u32, 5u32);
    let mut params = [
        &mut ptr as *mut u64 as *mut c_void,
        &mut val as *mut u32 as *mut c_void,
        &mut n as *mut u32 as *mut c_void,
    ];
    check(
        cu!(cuLaunchKernel(fill, 1, 1, 1, 32, 1, 1, 0, null_mut(), params.as_mut_ptr(), null_mut()):
            *mut c_void, u32, u32, u32, u32, u32, u32, u32, *mut c_void, *mut *mut c_void, *mut *mut c_void),
        "cuLaunchKernel",
    );
    assert_eq!(dtoh::<u32>(d, 5), vec![7; 5], "the kernel ran");
    check(cu!(cuMemFree_v2(d): u64), "cuMemFree_v2");
    check(cu!(cuCtxSynchronize(): ), "cuCtxSynchronize");
    let after = free_now();
    let after = if emulated() && after == allocated {
        before
    } else {
        after
    };
    assert_eq!(
        after, before,
        "free memory after a launch's buffer was freed ({after}) is not what it was before it \
         ({before})"
    );
    check(cu!(cuModuleUnload(m): *mut c_void), "cuModuleUnload");
}

/// `CUmemAllocationProp` of device (1) or host (2) memory.
fn vmm_prop(location: i32) -> [u64; 4] {
    // type PINNED (1), no handle types, location {location, 0}, no Windows data, no flags.
    [1, location as u64, 0, 0]
}

/// Create, reserve, map, use and give back 2 MiB of memory at `location` ten times.
fn vmm_rounds(location: i32) {
    let prop = vmm_prop(location);
    const SIZE: usize = 2 << 20;
    for i in 0..10u32 {
        let mut h = 0u64;
        check(
            cu!(cuMemCreate(&mut h, SIZE, prop.as_ptr() as *const c_void, 0): *mut u64, usize, *const c_void, u64),
            "cuMemCreate",
        );
        let mut p = 0u64;
        check(
            cu!(cuMemAddressReserve(&mut p, SIZE, 0, 0, 0): *mut u64, usize, usize, u64, u64),
            "cuMemAddressReserve",
        );
        check(
            cu!(cuMemMap(p, SIZE, 0, h, 0): u64, usize, usize, u64, u64),
            "cuMemMap",
        );
        check(cu!(cuMemRelease(h): u64), "cuMemRelease");
        let mut descs = vec![[1i32, 0, 3]];
        if location == 2 {
            descs.push([2, 0, 3]);
        }
        check(
            cu!(cuMemSetAccess(p, SIZE, descs.as_ptr() as *const c_void, descs.len()):
                u64, usize, *const c_void, usize),
            "cuMemSetAccess",
        );
        htod(p + 64, &[i]);
        assert_eq!(dtoh::<u32>(p + 64, 1), vec![i]);
        if location == 2 {
            // SAFETY: the CPU view cuMemSetAccess made for the host.
            assert_eq!(unsafe { *(p as *const u32).add(16) }, i);
        }
        check(cu!(cuMemUnmap(p, SIZE): u64, usize), "cuMemUnmap");
        check(
            cu!(cuMemAddressFree(p, SIZE): u64, usize),
            "cuMemAddressFree",
        );
    }
}

#[test]
fn vmm_allocations_give_back_what_they_hold() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    primary_current();
    // One round first: the copies' staging memory and the like stay for later use.
    vmm_rounds(1);
    vmm_rounds(2);
    check(cu!(cuCtxSynchronize(): ), "cuCtxSynchronize");
    let (fds, free) = (tegragpu::os::open_fd_count(), free_now());
    vmm_rounds(1);
    vmm_rounds(2);
    check(cu!(cuCtxSynchronize(): ), "cuCtxSynchronize");
    assert_eq!(
        tegragpu::os::open_fd_count(),
        fds,
        "open file descriptors after 20 allocations were made and given back"
    );
    // The emulated Orin holds freed pages for a grace period of its own (see above).
    if !emulated() {
        assert_eq!(
            free_now(),
            free,
            "free device memory after 10 device allocations"
        );
    }
}

fn graph_mem(attr: i32) -> u64 {
    let mut v = 0u64;
    check(
        cu!(cuDeviceGetGraphMemAttribute(0, attr, &mut v): i32, i32, *mut u64),
        "cuDeviceGetGraphMemAttribute",
    );
    v
}

/// A graph allocation node of `bytes` bytes in graph `g`, and its address.
fn alloc_node(g: *mut c_void, bytes: usize) -> (*mut c_void, u64) {
    // CUDA_MEM_ALLOC_NODE_PARAMS: allocType PINNED, location DEVICE 0, bytesize at 104, dptr
    // (out) at 112.
    let mut params = [0u8; 120];
    params[0..4].copy_from_slice(&1i32.to_ne_bytes());
    params[8..12].copy_from_slice(&1i32.to_ne_bytes());
    params[104..112].copy_from_slice(&(bytes as u64).to_ne_bytes());
    let mut node = null_mut();
    check(
        cu!(cuGraphAddMemAllocNode(&mut node, g, std::ptr::null(), 0, params.as_mut_ptr()):
            *mut *mut c_void, *mut c_void, *const *mut c_void, usize, *mut u8),
        "cuGraphAddMemAllocNode",
    );
    (
        node,
        u64::from_ne_bytes(params[112..120].try_into().unwrap()),
    )
}

/// The graph memory attributes (the sample graphMemoryFootprint): memory of allocation nodes
/// counts from the node's creation until its free node's graph is destroyed, or until the
/// program frees it where no free node does; the high-water marks reset to the current figure.
#[test]
fn graph_memory_attributes_count_graph_allocations() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    primary_current();
    const MB: usize = 1 << 20;
    let mut zero = 0u64;
    for attr in [1, 3] {
        check(
            cu!(cuDeviceSetGraphMemAttribute(0, attr, &mut zero): i32, i32, *mut u64),
            "reset a high-water mark",
        );
    }
    let base = graph_mem(0);
    assert_eq!(graph_mem(2), base, "reserved = used");
    assert_eq!(graph_mem(1), base, "the high mark after a reset");
    let mut g = null_mut();
    check(
        cu!(cuGraphCreate(&mut g, 0): *mut *mut c_void, u32),
        "cuGraphCreate",
    );
    let (a, pa) = alloc_node(g, 3 * MB);
    let mut fnode = null_mut();
    check(
        cu!(cuGraphAddMemFreeNode(&mut fnode, g, &a, 1, pa):
            *mut *mut c_void, *mut c_void, *const *mut c_void, usize, u64),
        "cuGraphAddMemFreeNode",
    );
    let (_, pb) = alloc_node(g, MB);
    assert_eq!(
        graph_mem(0),
        base + 4 * MB as u64,
        "used after two allocation nodes"
    );
    assert_eq!(
        graph_mem(2),
        base + 4 * MB as u64,
        "reserved after two allocation nodes"
    );
    check(cu!(cuGraphDestroy(g): *mut c_void), "cuGraphDestroy");
    check(cu!(cuCtxSynchronize(): ), "cuCtxSynchronize");
    // The freed allocation is gone; the one without a free node is the program's until freed.
    assert_eq!(
        graph_mem(0),
        base + MB as u64,
        "used after the graph is destroyed"
    );
    assert_eq!(graph_mem(1), base + 4 * MB as u64, "the high mark stays");
    check(cu!(cuDeviceGraphMemTrim(0): i32), "cuDeviceGraphMemTrim");
    check(
        cu!(cuMemFree_v2(pb): u64),
        "cuMemFree_v2 of a graph allocation",
    );
    check(cu!(cuCtxSynchronize(): ), "cuCtxSynchronize");
    assert_eq!(graph_mem(0), base, "used after the program freed it");
    check(
        cu!(cuDeviceSetGraphMemAttribute(0, 1, &mut zero): i32, i32, *mut u64),
        "reset the high mark",
    );
    assert_eq!(graph_mem(1), base, "the high mark after a reset");
    // Bad input: an attribute that is not one, a current figure set, a high mark set to other
    // than 0, a NULL value, a device that does not exist.
    let mut v = 5u64;
    let get = |d: i32, attr: i32, p: *mut u64| cu!(cuDeviceGetGraphMemAttribute(d, attr, p): i32, i32, *mut u64);
    let set =
        |attr: i32, p: *mut u64| cu!(cuDeviceSetGraphMemAttribute(0, attr, p): i32, i32, *mut u64);
    assert_eq!(get(0, 4, &mut v), 1, "attribute 4");
    assert_eq!(get(0, 0, null_mut()), 1, "NULL value");
    assert_eq!(get(99, 0, &mut v), 101, "device 99");
    assert_eq!(set(0, &mut zero), 1, "setting the used figure");
    assert_eq!(set(3, &mut v), 1, "a high mark set to 5");
    assert_eq!(cu!(cuDeviceGraphMemTrim(99): i32), 101, "trim of device 99");
}
