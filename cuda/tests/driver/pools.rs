//! Memory pools and stream-ordered allocation.

use crate::*;
use std::ffi::c_void;
use std::ptr::null_mut;

/// `CUmemPoolProps`.
#[repr(C)]
pub(crate) struct Props {
    alloc_type: i32,
    pub handle_types: i32,
    loc_type: i32,
    loc_id: i32,
    win32: *mut c_void,
    max_size: usize,
    usage: u16,
    reserved: [u8; 54],
}

/// A device-0 pool of pinned memory of at most `max_size` bytes (0: no limit).
pub(crate) fn props(max_size: usize) -> Props {
    Props {
        alloc_type: 1,
        handle_types: 0,
        loc_type: 1,
        loc_id: 0,
        win32: null_mut(),
        max_size,
        usage: 0,
        reserved: [0; 54],
    }
}

pub(crate) fn create(p: &Props) -> (u32, *mut c_void) {
    let mut pool = null_mut();
    let r = cu!(cuMemPoolCreate(&mut pool, p): *mut *mut c_void, *const Props);
    (r, pool)
}

fn attr_u64(pool: *mut c_void, a: i32) -> u64 {
    let mut v = u64::MAX;
    check(
        cu!(cuMemPoolGetAttribute(pool, a, ptr(&mut v)): *mut c_void, i32, *mut c_void),
        "cuMemPoolGetAttribute",
    );
    v
}

fn set_u64(pool: *mut c_void, a: i32, v: u64) -> u32 {
    let mut v = v;
    cu!(cuMemPoolSetAttribute(pool, a, ptr(&mut v)): *mut c_void, i32, *mut c_void)
}

fn alloc_from(pool: *mut c_void, n: usize, s: *mut c_void) -> u64 {
    let mut d = 0u64;
    check(
        cu!(cuMemAllocFromPoolAsync(&mut d, n, pool, s): *mut u64, usize, *mut c_void, *mut c_void),
        "cuMemAllocFromPoolAsync",
    );
    d
}

fn free_async(d: u64, s: *mut c_void) {
    check(
        cu!(cuMemFreeAsync(d, s): u64, *mut c_void),
        "cuMemFreeAsync",
    );
}

#[test]
fn stream_ordered_allocation_from_pools() {
    setup();
    let mut v = -1;
    check(
        cu!(cuDeviceGetAttribute(&mut v, 115, 0): *mut i32, i32, i32),
        "MEMORY_POOLS_SUPPORTED",
    );
    assert_eq!(v, 1);
    let m = load_fixture("kernels");
    let fill = function(m, "fill_u32");
    let spin = function(m, "spin_until");
    let (mut s, mut s2) = (null_mut(), null_mut());
    check(
        cu!(cuStreamCreate(&mut s, 1): *mut *mut c_void, u32),
        "stream",
    );
    check(
        cu!(cuStreamCreate(&mut s2, 1): *mut *mut c_void, u32),
        "stream",
    );

    // The default pool is the device's current pool; cuMemAllocAsync allocates from it.
    let (mut def, mut cur) = (null_mut(), null_mut());
    check(
        cu!(cuDeviceGetDefaultMemPool(&mut def, 0): *mut *mut c_void, i32),
        "default pool",
    );
    check(
        cu!(cuDeviceGetMemPool(&mut cur, 0): *mut *mut c_void, i32),
        "current pool",
    );
    assert!(!def.is_null());
    assert_eq!(def, cur);
    let n = 5000usize;
    let mut d = 0u64;
    check(
        cu!(cuMemAllocAsync(&mut d, n * 4, s): *mut u64, usize, *mut c_void),
        "cuMemAllocAsync",
    );
    let (mut p, mut val, mut cnt) = (d, 0x600du32, n as u32);
    launch(
        fill,
        n.div_ceil(128) as u32,
        128,
        s,
        &mut [ptr(&mut p), ptr(&mut val), ptr(&mut cnt)],
    );
    check(cu!(cuStreamSynchronize(s): *mut c_void), "sync");
    assert!(dtoh::<u32>(d, n).iter().all(|&x| x == 0x600d));
    let mut owner = null_mut::<c_void>();
    check(
        cu!(cuPointerGetAttribute(ptr(&mut owner), 17, d + 8): *mut c_void, i32, u64),
        "MEMPOOL_HANDLE",
    );
    assert_eq!(owner, def);
    free_async(d, s);
    assert_eq!(
        cu!(cuMemFreeAsync(d, s): u64, *mut c_void),
        1,
        "freed twice"
    );
    // Zero bytes: a NULL pointer, freed as nothing.
    let mut z = 1u64;
    check(
        cu!(cuMemAllocAsync(&mut z, 0, s): *mut u64, usize, *mut c_void),
        "zero bytes",
    );
    assert_eq!(z, 0);
    free_async(0, s);

    // A pool of its own, keeping what is freed (release threshold: everything).
    let (r, pool) = create(&props(0));
    assert_eq!(r, 0);
    assert_eq!(set_u64(pool, 4, u64::MAX), 0);
    assert_eq!(attr_u64(pool, 4), u64::MAX);
    let a = alloc_from(pool, 10_000, s);
    assert!(attr_u64(pool, 7) >= 10_000, "USED_MEM_CURRENT");
    free_async(a, s);
    assert_eq!(attr_u64(pool, 7), 0);
    assert!(attr_u64(pool, 5) >= 10_000, "kept: RESERVED_MEM_CURRENT");
    // The same stream takes it back at once.
    let b = alloc_from(pool, 9_000, s);
    assert_eq!(b, a, "reused in stream order");
    // Another stream does not while the freeing stream's work may still use it.
    let (flag, flag_dev) = host_flag();
    let (mut fp, mut max_ns) = (flag_dev, 60_000_000_000u64);
    launch(spin, 1, 32, s, &mut [ptr(&mut fp), ptr(&mut max_ns)]);
    free_async(b, s);
    let c = alloc_from(pool, 9_000, s2);
    assert_ne!(c, b, "the freeing stream's work is still running");
    unsafe { (flag as *mut u32).write_volatile(1) };
    check(cu!(cuStreamSynchronize(s): *mut c_void), "sync");
    // Once it is done, the other stream takes it.
    let e = alloc_from(pool, 9_000, s2);
    assert_eq!(e, b, "reused after the freeing stream's work completed");
    free_async(c, s2);
    free_async(e, s2);
    check(cu!(cuStreamSynchronize(s2): *mut c_void), "sync");
    assert!(attr_u64(pool, 5) > 0, "the threshold keeps it");
    check(cu!(cuMemPoolTrimTo(pool, 0): *mut c_void, usize), "trim");
    assert_eq!(attr_u64(pool, 5), 0);
    assert!(attr_u64(pool, 6) >= 2 * 9_000, "RESERVED_MEM_HIGH");
    assert_eq!(set_u64(pool, 6, 5), 1, "high marks reset to 0 only");
    assert_eq!(set_u64(pool, 6, 0), 0);
    assert_eq!(attr_u64(pool, 6), 0);
    assert_eq!(set_u64(pool, 5, 0), 1, "RESERVED_MEM_CURRENT is read-only");

    // Threshold 0: kept until the next synchronization.
    assert_eq!(set_u64(pool, 4, 0), 0);
    let f = alloc_from(pool, 4096, s);
    free_async(f, s);
    check(cu!(cuStreamSynchronize(s): *mut c_void), "sync");
    assert_eq!(attr_u64(pool, 5), 0, "released at the synchronization");

    // The current pool.
    check(
        cu!(cuDeviceSetMemPool(0, pool): i32, *mut c_void),
        "set pool",
    );
    let g = {
        let mut g = 0u64;
        check(
            cu!(cuMemAllocAsync(&mut g, 100, s): *mut u64, usize, *mut c_void),
            "from the current pool",
        );
        g
    };
    check(
        cu!(cuPointerGetAttribute(ptr(&mut owner), 17, g): *mut c_void, i32, u64),
        "MEMPOOL_HANDLE",
    );
    assert_eq!(owner, pool);
    // cuMemFree frees pool memory too.
    check(cu!(cuMemFree_v2(g): u64), "cuMemFree of pool memory");
    assert_eq!(attr_u64(pool, 7), 0);

    // Access: the pool's own device reads and writes.
    let mut acc = -1i32;
    let mut loc = [1i32, 0];
    check(
        cu!(cuMemPoolGetAccess(&mut acc, pool, loc.as_mut_ptr() as *mut c_void): *mut i32, *mut c_void, *mut c_void),
        "get access",
    );
    assert_eq!(acc, 3);
    let desc = [1i32, 0, 3];
    check(
        cu!(cuMemPoolSetAccess(pool, desc.as_ptr() as *const c_void, 1): *mut c_void, *const c_void, usize),
        "set access",
    );
    let none = [1i32, 0, 0];
    assert_eq!(
        cu!(cuMemPoolSetAccess(pool, none.as_ptr() as *const c_void, 1): *mut c_void, *const c_void, usize),
        101,
        "the pool's own device keeps its access (CUDA_ERROR_INVALID_DEVICE)"
    );

    // Destroying the current pool puts the default pool back; the default one stays.
    check(cu!(cuMemPoolDestroy(pool): *mut c_void), "destroy");
    assert_eq!(cu!(cuMemPoolDestroy(pool): *mut c_void), 1, "twice");
    check(
        cu!(cuDeviceGetMemPool(&mut cur, 0): *mut *mut c_void, i32),
        "current pool",
    );
    assert_eq!(cur, def);
    assert_eq!(cu!(cuMemPoolDestroy(def): *mut c_void), 1);
    assert_eq!(set_u64(pool, 4, 0), 1, "a destroyed pool");

    // maxSize bounds what a pool holds, in steps of 32 MiB: 4 MiB holds 6 MiB.
    let (r, small) = create(&props(4 << 20));
    assert_eq!(r, 0);
    let h = alloc_from(small, 3 << 20, s);
    let h2 = alloc_from(small, 3 << 20, s);
    let mut x = 0u64;
    assert_eq!(
        cu!(cuMemAllocFromPoolAsync(&mut x, 30 << 20, small, s): *mut u64, usize, *mut c_void, *mut c_void),
        2,
        "CUDA_ERROR_OUT_OF_MEMORY beyond maxSize"
    );
    free_async(h, s);
    free_async(h2, s);
    check(cu!(cuStreamSynchronize(s): *mut c_void), "sync");
    check(cu!(cuMemPoolDestroy(small): *mut c_void), "destroy");

    // Pools this library does not make.
    let mut bad = props(0);
    bad.handle_types = 8;
    assert_eq!(create(&bad).0, 801, "fabric handles");
    let mut bad = props(0);
    bad.handle_types = 1;
    bad.loc_type = 2;
    assert_eq!(create(&bad).0, 801, "a host pool with shareable handles");
    let mut bad = props(0);
    bad.alloc_type = 2;
    assert_eq!(create(&bad).0, 801, "a managed pool");
    let mut bad = props(0);
    bad.alloc_type = 0;
    assert_eq!(create(&bad).0, 1, "allocation type 0");
    let mut bad = props(0);
    bad.loc_id = 99;
    assert_eq!(create(&bad).0, 1, "no device 99: CUDA_ERROR_INVALID_VALUE");
    let mut p0 = null_mut();
    assert_eq!(
        cu!(cuMemPoolCreate(&mut p0, std::ptr::null::<Props>()): *mut *mut c_void, *const Props),
        1
    );

    check(cu!(cuStreamDestroy_v2(s): *mut c_void), "destroy");
    check(cu!(cuStreamDestroy_v2(s2): *mut c_void), "destroy");
    check(cu!(cuMemFreeHost(flag): *mut c_void), "free flag");
}

/// Host pools: memory the CPU and the kernels reach at one address, from a pool of host
/// memory (any node, or one NUMA node).
#[test]
fn host_memory_pools() {
    setup();
    for attr in [142, 144] {
        let mut v = -1;
        check(
            cu!(cuDeviceGetAttribute(&mut v, attr, 0): *mut i32, i32, i32),
            "attribute",
        );
        assert_eq!(v, 1, "attribute {attr}");
    }
    let m = load_fixture("kernels");
    let fill = function(m, "fill_u32");
    let mut s = null_mut();
    check(
        cu!(cuStreamCreate(&mut s, 1): *mut *mut c_void, u32),
        "stream",
    );
    for (loc_type, loc_id) in [(2, 0), (3, 0)] {
        let mut p = props(0);
        (p.loc_type, p.loc_id) = (loc_type, loc_id);
        let (r, pool) = create(&p);
        assert_eq!(r, 0, "location type {loc_type}");
        let mut acc = -1i32;
        let mut loc = [1i32, 0];
        check(
            cu!(cuMemPoolGetAccess(&mut acc, pool, loc.as_mut_ptr() as *mut c_void): *mut i32, *mut c_void, *mut c_void),
            "get access",
        );
        assert_eq!(acc, 0, "no device has access yet");
        let desc = [1i32, 0, 3];
        check(
            cu!(cuMemPoolSetAccess(pool, desc.as_ptr() as *const c_void, 1): *mut c_void, *const c_void, usize),
            "set access",
        );
        check(
            cu!(cuMemPoolGetAccess(&mut acc, pool, loc.as_mut_ptr() as *mut c_void): *mut i32, *mut c_void, *mut c_void),
            "get access",
        );
        assert_eq!(acc, 3);
        let n = 3000usize;
        let d = alloc_from(pool, n * 4, s);
        let host = unsafe { std::slice::from_raw_parts_mut(d as *mut u32, n) };
        for (i, x) in host.iter_mut().enumerate() {
            *x = i as u32;
        }
        let (mut pp, mut v, mut k) = (d + 40, 9u32, 100u32);
        launch(
            fill,
            1,
            128,
            s,
            &mut [ptr(&mut pp), ptr(&mut v), ptr(&mut k)],
        );
        check(cu!(cuStreamSynchronize(s): *mut c_void), "sync");
        for (i, &x) in host.iter().enumerate() {
            let want = if (10..110).contains(&i) { 9 } else { i as u32 };
            assert_eq!(x, want, "element {i}");
        }
        let mut t = 0u32;
        check(
            cu!(cuPointerGetAttribute(ptr(&mut t), 2, d): *mut c_void, i32, u64),
            "memory type",
        );
        assert_eq!(t, 1, "host memory");
        let mut owner = null_mut::<c_void>();
        check(
            cu!(cuPointerGetAttribute(ptr(&mut owner), 17, d): *mut c_void, i32, u64),
            "MEMPOOL_HANDLE",
        );
        assert_eq!(owner, pool);
        free_async(d, s);
        check(cu!(cuStreamSynchronize(s): *mut c_void), "sync");
        check(cu!(cuMemPoolDestroy(pool): *mut c_void), "destroy");
    }
    let mut p = props(0);
    (p.loc_type, p.loc_id) = (3, 999);
    assert_eq!(create(&p).0, 1, "no NUMA node 999");
    // The host's default and current pools (CUDA 13's location forms).
    let host = [2i32, 0];
    let (mut def, mut cur) = (null_mut(), null_mut());
    check(
        cu!(cuMemGetDefaultMemPool(&mut def, host.as_ptr() as *const c_void, 1): *mut *mut c_void, *const c_void, i32),
        "default host pool",
    );
    check(
        cu!(cuMemGetMemPool(&mut cur, host.as_ptr() as *const c_void, 1): *mut *mut c_void, *const c_void, i32),
        "current host pool",
    );
    assert!(!def.is_null());
    assert_eq!(cur, def);
    let mut hp = props(0);
    hp.loc_type = 2;
    let (r, mine) = create(&hp);
    assert_eq!(r, 0);
    check(
        cu!(cuMemSetMemPool(host.as_ptr() as *const c_void, 1, mine): *const c_void, i32, *mut c_void),
        "set the host pool",
    );
    check(
        cu!(cuMemGetMemPool(&mut cur, host.as_ptr() as *const c_void, 1): *mut *mut c_void, *const c_void, i32),
        "current host pool",
    );
    assert_eq!(cur, mine);
    let (mut dev_default, mut x) = (null_mut(), null_mut());
    check(
        cu!(cuDeviceGetDefaultMemPool(&mut dev_default, 0): *mut *mut c_void, i32),
        "device pool",
    );
    assert_eq!(
        cu!(cuMemSetMemPool(host.as_ptr() as *const c_void, 1, dev_default): *const c_void, i32, *mut c_void),
        1,
        "a device pool as the host's"
    );
    check(cu!(cuMemPoolDestroy(mine): *mut c_void), "destroy");
    check(
        cu!(cuMemGetMemPool(&mut x, host.as_ptr() as *const c_void, 1): *mut *mut c_void, *const c_void, i32),
        "current host pool",
    );
    assert_eq!(x, def, "back to the default");
    assert_eq!(cu!(cuMemPoolDestroy(def): *mut c_void), 1);
    let d = alloc_from(def, 4096, s);
    unsafe { *(d as *mut u32) = 5 };
    assert_eq!(dtoh::<u32>(d, 1), vec![5]);
    free_async(d, s);
    check(cu!(cuStreamSynchronize(s): *mut c_void), "sync");
    check(cu!(cuStreamDestroy_v2(s): *mut c_void), "destroy");
}
