//! Identity and configuration (cuda/src/queries.rs): the answers NVIDIA's libcuda gives on an
//! H200 (the difftest's `query` section) where they do not depend on the GPU, and what each call
//! must do wherever it runs.

use crate::*;
use std::ffi::{c_char, c_void, CString};
use std::ptr::null_mut;

fn stream(flags: u32) -> *mut c_void {
    let mut s = null_mut();
    check(
        cu!(cuStreamCreate(&mut s, flags): *mut *mut c_void, u32),
        "cuStreamCreate",
    );
    s
}

fn stream_id(s: *mut c_void) -> u64 {
    let mut id = 0u64;
    check(
        cu!(cuStreamGetId(s, &mut id): *mut c_void, *mut u64),
        "cuStreamGetId",
    );
    id
}

#[test]
fn ids_devices_and_contexts_of_streams() {
    let ctx = setup();
    let (s1, s2) = (stream(1), stream(0));
    let (a, b) = (stream_id(s1), stream_id(s2));
    assert!(b > a, "ids increase with creation: {a} {b}");
    assert_eq!(stream_id(s1), a, "stable");
    let legacy = stream_id(std::ptr::dangling_mut::<c_void>()); // CU_STREAM_LEGACY (1)
    assert!(legacy != a && legacy != b);
    assert_eq!(cu!(cuStreamGetId(s1, null_mut()): *mut c_void, *mut u64), 1);
    let (mut c1, mut c2) = (0u64, 0u64);
    check(
        cu!(cuCtxGetId(ctx, &mut c1): *mut c_void, *mut u64),
        "cuCtxGetId",
    );
    check(
        cu!(cuCtxGetId(null_mut(), &mut c2): *mut c_void, *mut u64),
        "cuCtxGetId current",
    );
    assert!(c1 != 0 && c1 == c2);
    let mut other = null_mut();
    check(
        cu!(cuCtxCreate_v2(&mut other, 0, 0): *mut *mut c_void, u32, i32),
        "second context",
    );
    let mut c3 = 0u64;
    check(
        cu!(cuCtxGetId(other, &mut c3): *mut c_void, *mut u64),
        "cuCtxGetId",
    );
    assert_ne!(c3, c1, "contexts have ids of their own");
    let mut popped = null_mut();
    check(
        cu!(cuCtxPopCurrent_v2(&mut popped): *mut *mut c_void),
        "pop",
    );
    assert_eq!(popped, other);
    let mut d = -1;
    check(
        cu!(cuStreamGetDevice(s1, &mut d): *mut c_void, *mut i32),
        "cuStreamGetDevice",
    );
    assert_eq!(d, 0);
    d = -1;
    check(
        cu!(cuCtxGetDevice_v2(&mut d, ctx): *mut i32, *mut c_void),
        "cuCtxGetDevice_v2",
    );
    assert_eq!(d, 0);
    check(
        cu!(cuCtxSynchronize_v2(null_mut()): *mut c_void),
        "cuCtxSynchronize_v2",
    );
    let (mut sc, mut green) = (null_mut(), std::ptr::dangling_mut::<c_void>());
    check(
        cu!(cuStreamGetCtx_v2(s1, &mut sc, &mut green): *mut c_void, *mut *mut c_void, *mut *mut c_void),
        "cuStreamGetCtx_v2",
    );
    assert_eq!((sc, green), (ctx, null_mut()));
    check(cu!(cuCtxDestroy_v2(other): *mut c_void), "destroy");
    for s in [s1, s2] {
        check(cu!(cuStreamDestroy_v2(s): *mut c_void), "destroy stream");
    }
}

/// `cuCtxRecordEvent` covers the work of every stream of the context: an event recorded while a
/// kernel of one stream spins completes only once it ends; `cuCtxWaitEvent` makes the streams
/// wait for it.
#[test]
fn events_over_the_whole_context() {
    let ctx = setup();
    let m = load_fixture("kernels");
    let spin = function(m, "spin_until");
    let (flag, flag_dev) = host_flag();
    let (s, s2) = (stream(1), stream(1));
    let d = alloc(4);
    let (mut fp, mut max) = (flag_dev, 10_000_000_000u64);
    launch(spin, 1, 1, s, &mut [ptr(&mut fp), ptr(&mut max)]);
    let mut e = null_mut();
    check(
        cu!(cuEventCreate(&mut e, 2): *mut *mut c_void, u32),
        "event",
    );
    check(
        cu!(cuCtxRecordEvent(ctx, e): *mut c_void, *mut c_void),
        "cuCtxRecordEvent",
    );
    assert_eq!(
        cu!(cuEventQuery(e): *mut c_void),
        600,
        "behind the spinning kernel"
    );
    // Another stream waits for it through cuCtxWaitEvent: its memset runs after the kernel.
    check(
        cu!(cuCtxWaitEvent(ctx, e): *mut c_void, *mut c_void),
        "cuCtxWaitEvent",
    );
    check(
        cu!(cuMemsetD32Async(d, 7, 1, s2): u64, u32, usize, *mut c_void),
        "memset behind the wait",
    );
    assert_eq!(
        cu!(cuStreamQuery(s2): *mut c_void),
        600,
        "s2 waits for the event"
    );
    unsafe { (flag as *mut u32).write_volatile(1) };
    check(cu!(cuEventSynchronize(e): *mut c_void), "sync");
    check(cu!(cuStreamSynchronize(s2): *mut c_void), "sync s2");
    assert_eq!(dtoh::<u32>(d, 1), [7]);
    assert_eq!(
        cu!(cuCtxRecordEvent(null_mut(), e): *mut c_void, *mut c_void),
        201
    );
    assert_eq!(
        cu!(cuCtxRecordEvent(ctx, null_mut()): *mut c_void, *mut c_void),
        400
    );
    assert_eq!(
        cu!(cuCtxWaitEvent(ctx, null_mut()): *mut c_void, *mut c_void),
        400
    );
    check(cu!(cuEventDestroy_v2(e): *mut c_void), "destroy");
    check(cu!(cuMemFreeHost(flag): *mut c_void), "free flag");
    for x in [s, s2] {
        check(cu!(cuStreamDestroy_v2(x): *mut c_void), "destroy stream");
    }
    check(cu!(cuMemFree_v2(d): u64), "free");
}

#[test]
fn context_settings_and_stream_attributes() {
    setup();
    let get_u32 = |name: &str| -> u32 {
        let mut v = 99u32;
        let r = match name {
            "cache" => cu!(cuCtxGetCacheConfig(&mut v): *mut u32),
            "shared" => cu!(cuCtxGetSharedMemConfig(&mut v): *mut u32),
            _ => cu!(cuCtxGetFlags(&mut v): *mut u32),
        };
        check(r, name);
        v
    };
    assert_eq!(get_u32("cache"), 0);
    check(cu!(cuCtxSetCacheConfig(1): u32), "cuCtxSetCacheConfig");
    assert_eq!(get_u32("cache"), 1);
    assert_eq!(cu!(cuCtxSetCacheConfig(9): u32), 1);
    assert_eq!(cu!(cuCtxGetCacheConfig(null_mut()): *mut u32), 1);
    assert_eq!(get_u32("shared"), 1, "four-byte banks");
    check(
        cu!(cuCtxSetSharedMemConfig(2): u32),
        "cuCtxSetSharedMemConfig",
    );
    assert_eq!(get_u32("shared"), 1, "unchanged, as NVIDIA's");
    assert_eq!(cu!(cuCtxSetSharedMemConfig(7): u32), 1);
    let before = get_u32("flags");
    check(cu!(cuCtxSetFlags(2): u32), "cuCtxSetFlags");
    assert_eq!(get_u32("flags"), 2);
    assert_eq!(cu!(cuCtxSetFlags(0x100_0000): u32), 1);
    check(cu!(cuCtxSetFlags(before): u32), "restore");
    check(
        cu!(cuCtxResetPersistingL2Cache(): ),
        "cuCtxResetPersistingL2Cache",
    );

    // Stream attributes: what is set is read back; CopyAttributes copies them.
    let (s1, s2) = (stream(1), stream(0));
    let get = |s: *mut c_void, a: u32| {
        let mut v = [0x5au8; 64];
        let r = cu!(cuStreamGetAttribute(s, a, &mut v): *mut c_void, u32, *mut [u8; 64]);
        (r, v)
    };
    let word = |v: &[u8; 64], o: usize| i32::from_le_bytes(v[o..o + 4].try_into().unwrap());
    assert_eq!(word(&get(s1, 8).1, 0), 0, "PRIORITY");
    assert_eq!(word(&get(s1, 3).1, 0), -1, "SYNCHRONIZATION_POLICY unset");
    assert_eq!(get(s1, 1).1[..28], [0u8; 28], "ACCESS_POLICY_WINDOW unset");
    let mut v = [0u8; 64];
    v[..4].copy_from_slice(&4i32.to_le_bytes());
    let set = |s: *mut c_void, a: u32, v: &[u8; 64]| cu!(cuStreamSetAttribute(s, a, v): *mut c_void, u32, *const [u8; 64]);
    assert_eq!(set(s1, 3, &v), 0);
    assert_eq!(word(&get(s1, 3).1, 0), 4);
    let mut w = [0u8; 64];
    w[..8].copy_from_slice(&0x1000u64.to_le_bytes());
    w[8..16].copy_from_slice(&4096u64.to_le_bytes());
    w[16..20].copy_from_slice(&0.5f32.to_le_bytes());
    w[20..24].copy_from_slice(&2u32.to_le_bytes());
    w[24..28].copy_from_slice(&1u32.to_le_bytes());
    assert_eq!(set(s1, 1, &w), 0);
    assert_eq!(get(s1, 1).1[..28], w[..28]);
    let mut bad = w;
    bad[16..20].copy_from_slice(&1.5f32.to_le_bytes());
    assert_eq!(set(s1, 1, &bad), 1, "hitRatio above 1");
    let mut p = [0u8; 64];
    p[..4].copy_from_slice(&(-1i32).to_le_bytes());
    assert_eq!(set(s1, 8, &p), 0);
    assert_eq!(word(&get(s1, 8).1, 0), -1);
    check(
        cu!(cuStreamCopyAttributes(s2, s1): *mut c_void, *mut c_void),
        "cuStreamCopyAttributes",
    );
    assert_eq!(word(&get(s2, 3).1, 0), 4);
    assert_eq!(get(s2, 1).1[..28], w[..28]);
    assert_eq!(get(s1, 77).0, 1, "not a stream attribute");
    for s in [s1, s2] {
        check(cu!(cuStreamDestroy_v2(s): *mut c_void), "destroy");
    }
}

#[test]
fn module_functions_occupancy_and_devices() {
    setup();
    let m = load_fixture("kernels");
    let mut n = 0u32;
    check(
        cu!(cuModuleGetFunctionCount(&mut n, m): *mut u32, *mut c_void),
        "cuModuleGetFunctionCount",
    );
    assert!(n >= 10, "{n} kernels");
    let mut fns = vec![null_mut::<c_void>(); n as usize + 2];
    check(
        cu!(cuModuleEnumerateFunctions(fns.as_mut_ptr(), n + 2, m): *mut *mut c_void, u32, *mut c_void),
        "cuModuleEnumerateFunctions",
    );
    let add = function(m, "vector_add");
    assert!(fns[..n as usize].contains(&add), "the same handles");
    assert!(fns[..n as usize].iter().all(|f| !f.is_null()));
    assert!(
        fns[n as usize..].iter().all(|f| f.is_null()),
        "past the count: untouched"
    );
    assert_eq!(
        cu!(cuModuleEnumerateFunctions(null_mut(), n, m): *mut *mut c_void, u32, *mut c_void),
        1
    );
    let mut mode = 0u32;
    check(
        cu!(cuModuleGetLoadingMode(&mut mode): *mut u32),
        "cuModuleGetLoadingMode",
    );
    assert_eq!(mode, 2, "lazy unless CUDA_MODULE_LOADING=EAGER");
    let mut st = 9u32;
    check(
        cu!(cuFuncIsLoaded(&mut st, add): *mut u32, *mut c_void),
        "cuFuncIsLoaded",
    );
    assert_eq!(st, 1);
    check(cu!(cuFuncLoad(add): *mut c_void), "cuFuncLoad");
    assert_eq!(cu!(cuFuncLoad(null_mut()): *mut c_void), 400);

    // The dynamic shared memory left for N blocks (NVIDIA's answers on an H200): the largest
    // carveout split among the blocks, at most the function's limit; under
    // CU_FUNC_CACHE_PREFER_L1 the smallest carveout (8 KiB); the 1 KiB each block reserves is
    // not deducted.
    let avail = |f: *mut c_void, blocks: i32, threads: i32| {
        let mut s = 0usize;
        let r = cu!(cuOccupancyAvailableDynamicSMemPerBlock(&mut s, f, blocks, threads): *mut usize, *mut c_void, i32, i32);
        (r, s)
    };
    let attr = |a: i32| {
        let mut v = 0;
        check(
            cu!(cuDeviceGetAttribute(&mut v, a, 0): *mut i32, i32, i32),
            "attribute",
        );
        v as usize
    };
    let per_sm = attr(81);
    let mut limit = 0i32;
    check(
        cu!(cuFuncGetAttribute(&mut limit, 8, add): *mut i32, i32, *mut c_void),
        "MAX_DYNAMIC_SHARED_SIZE_BYTES",
    );
    for blocks in [1usize, 2, 4, 8] {
        assert_eq!(
            avail(add, blocks as i32, 128),
            (0, (per_sm / blocks / 128 * 128).min(limit as usize)),
            "{blocks} blocks"
        );
    }
    check(
        cu!(cuFuncSetCacheConfig(add, 2): *mut c_void, u32),
        "CU_FUNC_CACHE_PREFER_L1",
    );
    assert_eq!(avail(add, 8, 128), (0, 1024), "8 KiB among 8 blocks");
    check(
        cu!(cuFuncSetCacheConfig(add, 0): *mut c_void, u32),
        "CU_FUNC_CACHE_PREFER_NONE",
    );
    assert_eq!(
        avail(add, 64, 1024).0,
        1,
        "64 blocks of 1024 threads never fit"
    );
    assert_eq!(avail(add, 1, 2048).0, 1, "2048 threads");

    // Devices by PCI bus id, in the forms NVIDIA's accepts.
    let mut bus = [0 as c_char; 64];
    check(
        cu!(cuDeviceGetPCIBusId(bus.as_mut_ptr(), 64, 0): *mut c_char, i32, i32),
        "bus id",
    );
    let id = unsafe { std::ffi::CStr::from_ptr(bus.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    for form in [id.clone(), id.to_uppercase(), id[5..].to_string()] {
        let c = CString::new(form.clone()).unwrap();
        let mut d = -1;
        check(
            cu!(cuDeviceGetByPCIBusId(&mut d, c.as_ptr()): *mut i32, *const c_char),
            &form,
        );
        assert_eq!(d, 0, "{form}");
    }
    let mut d = -1;
    assert_eq!(
        cu!(cuDeviceGetByPCIBusId(&mut d, c"ffff:ff:1f.7".as_ptr()): *mut i32, *const c_char),
        101
    );
    assert_eq!(
        cu!(cuDeviceGetByPCIBusId(&mut d, c"nope".as_ptr()): *mut i32, *const c_char),
        1
    );
    // Linear 1-D textures: 2^32 bytes, at most 2^30 elements (NVIDIA's answers on an H200).
    for (format, channels, want) in [
        (0x20u32, 4u32, 1usize << 28),
        (0x01, 1, 1 << 30),
        (0x20, 2, 1 << 29),
    ] {
        let mut w = 0usize;
        check(
            cu!(cuDeviceGetTexture1DLinearMaxWidth(&mut w, format, channels, 0): *mut usize, u32, u32, i32),
            "cuDeviceGetTexture1DLinearMaxWidth",
        );
        assert_eq!(w, want, "format {format:#x} x{channels}");
    }
    let mut w = 0usize;
    assert_eq!(
        cu!(cuDeviceGetTexture1DLinearMaxWidth(&mut w, 0x20, 3, 0): *mut usize, u32, u32, i32),
        1
    );
    // The old properties are the attributes.
    let mut p = [0i32; 14];
    check(
        cu!(cuDeviceGetProperties(&mut p, 0): *mut [i32; 14], i32),
        "cuDeviceGetProperties",
    );
    for (i, attr) in [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]
        .into_iter()
        .enumerate()
    {
        let mut v = 0;
        check(
            cu!(cuDeviceGetAttribute(&mut v, attr, 0): *mut i32, i32, i32),
            "attribute",
        );
        assert_eq!(p[i], v, "property {i} = attribute {attr}");
    }
}

#[test]
fn pointer_sync_memops_and_2d_memsets() {
    setup();
    let d = alloc(4096);
    let one = 1u32;
    let set = |attr: u32, at: u64| cu!(cuPointerSetAttribute(&one as *const u32 as *const c_void, attr, at): *const c_void, u32, u64);
    assert_eq!(set(6, d), 0, "SYNC_MEMOPS");
    assert_eq!(set(8, d), 1, "IS_MANAGED cannot be set");
    assert_eq!(set(6, 16), 1, "not this library's memory");
    check(cu!(cuMemsetD8_v2(d, 0, 4096): u64, u8, usize), "clear");
    check(
        cu!(cuMemsetD2D8_v2(d, 512, 0x11, 100, 4): u64, usize, u8, usize, usize),
        "cuMemsetD2D8",
    );
    check(
        cu!(cuMemsetD2D16_v2(d + 2048, 512, 0x2233, 50, 2): u64, usize, u16, usize, usize),
        "cuMemsetD2D16",
    );
    // The non-blocking stream below does not wait for the legacy stream's memsets, which other
    // tests' work on the legacy stream may still hold back.
    check(
        cu!(cuStreamSynchronize(null_mut()): *mut c_void),
        "legacy sync",
    );
    let s = stream(1);
    check(
        cu!(cuMemsetD2D32Async(d + 3072, 256, 0x4455_6677, 30, 3, s): u64, usize, u32, usize, usize, *mut c_void),
        "cuMemsetD2D32Async",
    );
    check(cu!(cuStreamSynchronize(s): *mut c_void), "sync");
    let got = dtoh::<u8>(d, 4096);
    let mut want = vec![0u8; 4096];
    for r in 0..4 {
        want[r * 512..r * 512 + 100].fill(0x11);
    }
    for r in 0..2 {
        for i in 0..50 {
            want[2048 + r * 512 + 2 * i..2048 + r * 512 + 2 * i + 2]
                .copy_from_slice(&0x2233u16.to_le_bytes());
        }
    }
    for r in 0..3 {
        for i in 0..30 {
            let o = 3072 + r * 256 + 4 * i;
            want[o..o + 4].copy_from_slice(&0x4455_6677u32.to_le_bytes());
        }
    }
    assert!(got == want, "2-D memsets: rows and gaps");
    assert_eq!(
        cu!(cuMemsetD2D8_v2(d, 50, 0x11, 100, 4): u64, usize, u8, usize, usize),
        1,
        "pitch below the row"
    );
    assert_eq!(
        cu!(cuMemsetD2D32_v2(d + 2, 256, 1, 4, 2): u64, usize, u32, usize, usize),
        1,
        "misaligned"
    );
    check(
        cu!(cuMemsetD2D8Async(d, 512, 0x11, 0, 4, s): u64, usize, u8, usize, usize, *mut c_void),
        "zero width",
    );
    check(cu!(cuStreamDestroy_v2(s): *mut c_void), "destroy");
    check(cu!(cuMemFree_v2(d): u64), "free");
}
