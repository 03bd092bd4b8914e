//! Managed memory: one address for the CPU and the GPU, advice, prefetches, attachment.

use crate::*;
use std::ffi::c_void;
use std::ptr::null_mut;

#[repr(C)]
#[derive(Clone, Copy)]
struct Loc {
    type_: i32,
    id: i32,
}
const HOST: Loc = Loc { type_: 2, id: 0 };

fn range_int(attr: i32, d: u64, n: usize) -> i32 {
    let mut v = 12345i32;
    check(
        cu!(cuMemRangeGetAttribute(ptr(&mut v), 4, attr, d, n): *mut c_void, usize, i32, u64, usize),
        "cuMemRangeGetAttribute",
    );
    v
}

#[test]
fn managed_memory_is_one_address_for_cpu_and_gpu() {
    setup();
    let attr = |a: i32| {
        let mut v = -1;
        check(
            cu!(cuDeviceGetAttribute(&mut v, a, 0): *mut i32, i32, i32),
            "attribute",
        );
        v
    };
    assert_eq!(attr(83), 1, "CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY");
    let concurrent = attr(89);
    assert_eq!(concurrent, !emulated() as i32, "CONCURRENT_MANAGED_ACCESS");

    let n = 3000usize;
    let mut d = 0u64;
    // Bad arguments: CUDA_ERROR_INVALID_VALUE, nothing allocated.
    for (size, flags) in [(0usize, 1u32), (64, 0), (64, 3), (64, 4)] {
        assert_eq!(
            cu!(cuMemAllocManaged(&mut d, size, flags): *mut u64, usize, u32),
            1,
            "size {size} flags {flags}"
        );
        assert_eq!(d, 0);
    }
    assert_eq!(
        cu!(cuMemAllocManaged(null_mut(), 64, 1): *mut u64, usize, u32),
        1
    );
    check(
        cu!(cuMemAllocManaged(&mut d, n * 4, 1): *mut u64, usize, u32),
        "cuMemAllocManaged",
    );
    assert_ne!(d, 0);
    // The CPU writes through the pointer itself.
    let floats = unsafe { std::slice::from_raw_parts_mut(d as *mut f32, n) };
    for (i, x) in floats.iter_mut().enumerate() {
        *x = i as f32;
    }
    let host = unsafe { std::slice::from_raw_parts_mut(d as *mut u32, n) };
    // A kernel reads it (c = a + a) and writes into it (fill).
    let m = load_fixture("kernels");
    let add = function(m, "vector_add");
    let fill = function(m, "fill_u32");
    let c = alloc(n * 4);
    let (mut a, mut b, mut cc, mut nn) = (d, d, c, n as u32);
    launch(
        add,
        n.div_ceil(128) as u32,
        128,
        null_mut(),
        &mut [ptr(&mut a), ptr(&mut b), ptr(&mut cc), ptr(&mut nn)],
    );
    let (mut p, mut v, mut k) = (d + 40, 7u32, 20u32);
    launch(
        fill,
        1,
        128,
        null_mut(),
        &mut [ptr(&mut p), ptr(&mut v), ptr(&mut k)],
    );
    check(cu!(cuCtxSynchronize(): ), "sync");
    let sums = dtoh::<f32>(c, n);
    for (i, s) in sums.iter().enumerate() {
        assert_eq!(*s, 2.0 * i as f32, "element {i}");
    }
    for (i, &x) in host.iter().enumerate() {
        let want = if (10..30).contains(&i) {
            7
        } else {
            (i as f32).to_bits()
        };
        assert_eq!(x, want, "element {i} as the CPU sees it");
    }
    // Copies and memsets take it as device memory and as host memory.
    check(cu!(cuMemsetD32_v2(d, 0x55, 4): u64, u32, usize), "memset");
    let four = 4f32.to_bits();
    assert_eq!(&host[..5], &[0x55, 0x55, 0x55, 0x55, four]);
    assert_eq!(dtoh::<u32>(d + 8, 3), vec![0x55, 0x55, four]);
    let c2 = alloc(16);
    check(
        cu!(cuMemcpyHtoD_v2(c2, (d + 12) as *const c_void, 16): u64, *const c_void, usize),
        "HtoD from managed memory",
    );
    assert_eq!(
        dtoh::<u32>(c2, 4),
        vec![0x55, four, 5f32.to_bits(), 6f32.to_bits()]
    );

    // Pointer attributes.
    let pattr = |attr: i32, at: u64| {
        let mut v = 0u64;
        let r = cu!(cuPointerGetAttribute(ptr(&mut v), attr, at): *mut c_void, i32, u64);
        (r, v)
    };
    assert_eq!(pattr(8, d + 100), (0, 1), "IS_MANAGED");
    assert_eq!(pattr(8, c), (0, 0), "IS_MANAGED of device memory");
    assert_eq!(pattr(2, d).1 as u32, 2, "MEMORY_TYPE");
    assert_eq!(pattr(3, d + 4), (0, d + 4), "DEVICE_POINTER");
    assert_eq!(pattr(4, d + 4), (0, d + 4), "HOST_POINTER");
    assert_eq!(pattr(11, d + 4), (0, d), "RANGE_START_ADDR");
    // Not pinned host memory.
    let mut dp = 0u64;
    assert_eq!(
        cu!(cuMemHostGetDevicePointer_v2(&mut dp, d as *mut c_void, 0): *mut u64, *mut c_void, u32),
        1
    );
    assert_eq!(cu!(cuMemFreeHost(d as *mut c_void): *mut c_void), 1);
    let mut hf = 0u32;
    check(
        cu!(cuMemHostGetFlags(&mut hf, d as *mut c_void): *mut u32, *mut c_void),
        "host flags",
    );
    assert_eq!(hf, 2, "CU_MEMHOSTALLOC_DEVICEMAP");

    // Advice, per byte range.
    let half = n * 2;
    check(
        cu!(cuMemAdvise(d, half, 1, 0): u64, usize, i32, i32),
        "SET_READ_MOSTLY",
    );
    assert_eq!(range_int(1, d, half), 1);
    assert_eq!(range_int(1, d, n * 4), 0, "half of it is not read-mostly");
    assert_eq!(range_int(2, d, n * 4), -2, "no preferred location");
    check(
        cu!(cuMemAdvise_v2(d + 4096, 4096, 3, HOST): u64, usize, i32, Loc),
        "SET_PREFERRED_LOCATION host",
    );
    assert_eq!(range_int(2, d + 4096, 4096), -1);
    assert_eq!(range_int(5, d + 4096, 100), 2, "PREFERRED_LOCATION_TYPE");
    assert_eq!(range_int(2, d, 8192), -2, "differs across the range");
    check(
        cu!(cuMemAdvise(d, n * 4, 5, 0): u64, usize, i32, i32),
        "SET_ACCESSED_BY 0",
    );
    let mut by = [7i32; 3];
    check(
        cu!(cuMemRangeGetAttribute(by.as_mut_ptr() as *mut c_void, 12, 3, d, n * 4): *mut c_void, usize, i32, u64, usize),
        "ACCESSED_BY",
    );
    assert_eq!(by, [0, -2, -2]);
    check(
        cu!(cuMemAdvise(d, n * 4, 6, 0): u64, usize, i32, i32),
        "UNSET_ACCESSED_BY 0",
    );
    check(
        cu!(cuMemRangeGetAttribute(by.as_mut_ptr() as *mut c_void, 12, 3, d, n * 4): *mut c_void, usize, i32, u64, usize),
        "ACCESSED_BY",
    );
    assert_eq!(by, [-2, -2, -2]);
    for (at, len, advice) in [
        (c, 16, 1),
        (d, 0, 1),
        (d, n * 4 + 1, 1),
        (d, 16, 7),
        (d, 16, 0),
    ] {
        assert_eq!(
            cu!(cuMemAdvise(at, len, advice, 0): u64, usize, i32, i32),
            1,
            "advise {at:#x} {len} {advice}"
        );
    }
    let mut v = 0i32;
    assert_eq!(
        cu!(cuMemRangeGetAttribute(ptr(&mut v), 8, 1, d, 16): *mut c_void, usize, i32, u64, usize),
        1,
        "dataSize 8"
    );

    // Prefetches: to the host always; to the device where access is concurrent.
    assert_eq!(range_int(4, d, 64), -2, "never prefetched");
    check(
        cu!(cuMemPrefetchAsync(d, 64, -1, null_mut()): u64, usize, i32, *mut c_void),
        "prefetch to the CPU",
    );
    assert_eq!(range_int(4, d, 64), -1);
    check(
        cu!(cuMemPrefetchAsync_v2(d, n * 4, HOST, 0, null_mut()): u64, usize, Loc, u32, *mut c_void),
        "prefetch to the host",
    );
    assert_eq!(range_int(7, d, n * 4), 2, "LAST_PREFETCH_LOCATION_TYPE");
    let r = cu!(cuMemPrefetchAsync(d, n * 4, 0, null_mut()): u64, usize, i32, *mut c_void);
    if concurrent == 1 {
        assert_eq!(r, 0);
        assert_eq!(range_int(4, d, n * 4), 0);
    } else {
        assert_eq!(
            r, 101,
            "CUDA_ERROR_INVALID_DEVICE without concurrent access"
        );
    }
    assert_eq!(
        cu!(cuMemPrefetchAsync(c, 64, -1, null_mut()): u64, usize, i32, *mut c_void),
        1,
        "device memory"
    );
    assert_eq!(
        cu!(cuMemPrefetchAsync(d, 64, 99, null_mut()): u64, usize, i32, *mut c_void),
        101,
        "no device 99"
    );
    assert_eq!(
        cu!(cuMemPrefetchAsync_v2(d, 64, HOST, 1, null_mut()): u64, usize, Loc, u32, *mut c_void),
        1,
        "flags"
    );

    // Stream attachment: whole allocations only; SINGLE not on the legacy stream.
    let mut s = null_mut();
    check(
        cu!(cuStreamCreate(&mut s, 0): *mut *mut c_void, u32),
        "stream",
    );
    check(
        cu!(cuStreamAttachMemAsync(s, d, 0, 4): *mut c_void, u64, usize, u32),
        "attach single",
    );
    check(
        cu!(cuStreamAttachMemAsync(s, d, n * 4, 2): *mut c_void, u64, usize, u32),
        "attach host",
    );
    for (st, at, len, flags) in [
        (null_mut(), d, 0, 4),
        (s, d + 4, 0, 1),
        (s, d, 8, 1),
        (s, d, 0, 8),
        (s, c, 0, 1),
    ] {
        assert_eq!(
            cu!(cuStreamAttachMemAsync(st, at, len, flags): *mut c_void, u64, usize, u32),
            1,
            "attach {st:?} {at:#x} {len} {flags}"
        );
    }
    // Still reachable from a stream after being attached to the host.
    let (mut p, mut v, mut k) = (d, 9u32, 1u32);
    launch(fill, 1, 32, s, &mut [ptr(&mut p), ptr(&mut v), ptr(&mut k)]);
    check(cu!(cuStreamSynchronize(s): *mut c_void), "sync");
    assert_eq!(host[0], 9);
    check(cu!(cuStreamDestroy_v2(s): *mut c_void), "stream destroy");

    // Freed with cuMemFree, once.
    assert_eq!(cu!(cuMemFree_v2(d + 4): u64), 1);
    check(cu!(cuMemFree_v2(d): u64), "free");
    assert_eq!(cu!(cuMemFree_v2(d): u64), 1, "double free");
    assert_eq!(pattr(8, d).0, 1, "freed memory has no attributes");
    // Allocations after a free work again, many times (nothing leaks a mapping), also while
    // another stream's kernel keeps the device busy: freed memory stays mapped for the GPU
    // until that work is done, and its addresses are not handed out again before.
    let spin = function(m, "spin_until");
    let (flag, flag_dev) = host_flag();
    let mut busy = null_mut();
    check(
        cu!(cuStreamCreate(&mut busy, 1): *mut *mut c_void, u32),
        "stream",
    );
    let (mut fp, mut max_ns) = (flag_dev, 60_000_000_000u64);
    launch(spin, 1, 32, busy, &mut [ptr(&mut fp), ptr(&mut max_ns)]);
    for i in 0..20u32 {
        let mut e = 0u64;
        check(
            cu!(cuMemAllocManaged(&mut e, 100_000, 1): *mut u64, usize, u32),
            "while busy",
        );
        unsafe { *(e as *mut u32).add(7) = i };
        assert_eq!(unsafe { *(e as *const u32).add(7) }, i);
        check(cu!(cuMemFree_v2(e): u64), "free while busy");
    }
    unsafe { (flag as *mut u32).write_volatile(1) };
    check(cu!(cuStreamSynchronize(busy): *mut c_void), "sync");
    check(cu!(cuStreamDestroy_v2(busy): *mut c_void), "destroy");
    check(cu!(cuMemFreeHost(flag): *mut c_void), "free flag");
    // Allocations after a free work again, many times (nothing leaks a mapping).
    for i in 0..20 {
        let mut e = 0u64;
        check(
            cu!(cuMemAllocManaged(&mut e, 100_000, 2): *mut u64, usize, u32),
            "again",
        );
        unsafe { *(e as *mut u32).add(1000) = i };
        assert_eq!(dtoh::<u32>(e + 4000, 1), vec![i]);
        check(cu!(cuMemFree_v2(e): u64), "free again");
    }
    check(cu!(cuMemFree_v2(c): u64), "free");
    check(cu!(cuMemFree_v2(c2): u64), "free");
}

/// The `__managed__` variables of a module (tests/fixtures/managed) are managed memory of
/// their own, holding their initial values, at one address for the CPU, copies and the module's
/// code (on a GPU: the kernel updates them); `cuLibraryGetManaged` names them; unloading frees
/// them.
#[test]
fn managed_variables_of_modules_are_managed_memory() {
    setup();
    let (a, b) = sm();
    let path = repo().join(format!("tests/fixtures/managed/managed.sm_{a}{b}.cubin"));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut m = null_mut();
    check(
        cu!(cuModuleLoadData(&mut m, bytes.as_ptr() as *const c_void): *mut *mut c_void, *const c_void),
        "cuModuleLoadData",
    );
    let global = |name: &str| {
        let n = std::ffi::CString::new(name).unwrap();
        let (mut d, mut size) = (0u64, 0usize);
        check(
            cu!(cuModuleGetGlobal_v2(&mut d, &mut size, m, n.as_ptr()): *mut u64, *mut usize, *mut c_void, *const std::ffi::c_char),
            name,
        );
        (d, size)
    };
    let pattr = |attr: i32, at: u64| {
        let mut v = 0u64;
        let r = cu!(cuPointerGetAttribute(ptr(&mut v), attr, at): *mut c_void, i32, u64);
        (r, v)
    };
    let (c, t, z, p) = (
        global("m_counter"),
        global("m_table"),
        global("m_zero"),
        global("d_plain"),
    );
    assert_eq!((c.1, t.1, z.1, p.1), (4, 16, 4, 4), "sizes");
    for (what, (d, size)) in [("m_counter", c), ("m_table", t), ("m_zero", z)] {
        assert_eq!(pattr(8, d), (0, 1), "{what}: IS_MANAGED");
        assert_eq!(pattr(4, d), (0, d), "{what}: HOST_POINTER");
        assert_eq!(pattr(11, d), (0, d), "{what}: RANGE_START_ADDR");
        assert_eq!(pattr(12, d), (0, size as u64), "{what}: RANGE_SIZE");
    }
    let (r, v) = pattr(8, p.0);
    assert!(r != 0 || v == 0, "d_plain is not managed memory ({r}, {v})");
    // Initial values, read by the CPU through the variables' addresses and by copies.
    let cpu = |d: u64, i: usize| unsafe { (d as *const u32).add(i).read_volatile() };
    assert_eq!(cpu(c.0, 0), 10);
    assert_eq!(
        (0..4).map(|i| cpu(t.0, i)).collect::<Vec<_>>(),
        [1, 2, 3, 4]
    );
    assert_eq!(cpu(z.0, 0), 0);
    assert_eq!(dtoh::<u32>(t.0, 4), [1, 2, 3, 4]);
    assert_eq!(dtoh::<u32>(p.0, 1), [7]);
    // The CPU's write is what a copy reads.
    unsafe { (c.0 as *mut u32).write_volatile(11) };
    assert_eq!(dtoh::<u32>(c.0, 1), [11]);
    if !emulated() {
        // The kernel reaches the variables through its address table.
        let mut q = 0u64;
        check(
            cu!(cuMemAllocManaged(&mut q, 4, 1): *mut u64, usize, u32),
            "cuMemAllocManaged",
        );
        unsafe { (q as *mut u32).write_volatile(5) };
        let bump = function(m, "bump_managed");
        let mut k = 1u32;
        launch(bump, 1, 1, null_mut(), &mut [ptr(&mut q), ptr(&mut k)]);
        check(cu!(cuCtxSynchronize(): ), "cuCtxSynchronize");
        assert_eq!(cpu(q, 0), 25, "*p += 20");
        assert_eq!(cpu(c.0, 0), 41, "m_counter += 30");
        assert_eq!(
            (0..4).map(|i| cpu(t.0, i)).collect::<Vec<_>>(),
            [1, 102, 3, 4]
        );
        assert_eq!(cpu(z.0, 0), 1, "m_zero += 1");
        assert_eq!(dtoh::<u32>(p.0, 1), [8], "d_plain += 1");
        check(cu!(cuMemFree_v2(q): u64), "cuMemFree");
    }
    // cuLibraryGetManaged: the managed variables, and nothing else.
    let mut l = null_mut();
    check(
        cu!(cuLibraryLoadData(&mut l, bytes.as_ptr() as *const c_void, null_mut(), null_mut(), 0, null_mut(), null_mut(), 0): *mut *mut c_void, *const c_void, *mut c_void, *mut *mut c_void, u32, *mut c_void, *mut *mut c_void, u32),
        "cuLibraryLoadData",
    );
    let get_managed = |name: &str| {
        let n = std::ffi::CString::new(name).unwrap();
        let (mut d, mut size) = (0u64, 0usize);
        let r = cu!(cuLibraryGetManaged(&mut d, &mut size, l, n.as_ptr()): *mut u64, *mut usize, *mut c_void, *const std::ffi::c_char);
        (r, d, size)
    };
    let (r, lt, lts) = get_managed("m_table");
    assert_eq!((r, lts), (0, 16), "cuLibraryGetManaged m_table");
    assert_ne!(lt, t.0, "the library has variables of its own");
    assert_eq!(pattr(8, lt), (0, 1), "IS_MANAGED");
    assert_eq!(cpu(lt, 1), 2);
    assert_eq!(get_managed("d_plain").0, 500, "a plain __device__ variable");
    assert_eq!(get_managed("nope").0, 500, "no such variable");
    check(cu!(cuLibraryUnload(l): *mut c_void), "cuLibraryUnload");
    let (r, managed) = pattr(8, lt);
    assert!(
        r == 1 || managed == 0,
        "freed with the library ({r}, {managed})"
    );
    check(cu!(cuModuleUnload(m): *mut c_void), "cuModuleUnload");
    for (what, (d, _)) in [("m_counter", c), ("m_table", t), ("m_zero", z)] {
        // Tests run in parallel: the freed address may already be another test's memory, but
        // not managed memory of this module.
        let (r, managed) = pattr(8, d);
        assert!(
            r == 1 || managed == 0,
            "{what}: freed with the module ({r}, {managed})"
        );
    }
}
