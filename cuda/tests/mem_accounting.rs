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
