//! Limits, cuLaunchKernelEx, host functions, occupancy.

use crate::*;
use std::ffi::c_void;
use std::ptr::null_mut;

static HOST_FN_RAN: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

unsafe extern "C" fn host_fn(data: *mut c_void) {
    // Writes the pinned buffer the stream copies to the device after this function.
    *(data as *mut u32) = 0x600d;
    HOST_FN_RAN.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
}

#[test]
fn limits_launch_ex_host_functions_and_occupancy() {
    setup();
    let mut v = 0usize;
    check(
        cu!(cuCtxGetLimit(&mut v, 0): *mut usize, i32),
        "stack limit",
    );
    assert_eq!(v, 1024);
    check(cu!(cuCtxSetLimit(0, 4096): i32, usize), "set stack");
    check(
        cu!(cuCtxGetLimit(&mut v, 0): *mut usize, i32),
        "stack limit",
    );
    assert_eq!(v, 4096);
    check(cu!(cuCtxGetLimit(&mut v, 2): *mut usize, i32), "heap");
    assert_eq!(v, 8 << 20);
    assert_eq!(cu!(cuCtxSetLimit(5, 48): i32, usize), 1);

    let m = load_fixture("kernels");
    let fill = function(m, "fill_u32");
    let d = alloc(256 * 4);
    // cuLaunchKernelEx: no attributes, then a priority hint.
    #[repr(C)]
    struct Attr {
        id: u32,
        pad: u32,
        value: [u32; 16],
    }
    #[repr(C)]
    struct Cfg {
        grid: [u32; 3],
        block: [u32; 3],
        shared: u32,
        stream: *mut c_void,
        attrs: *const Attr,
        num: u32,
    }
    let attr = Attr {
        id: 8,
        pad: 0,
        value: [0; 16],
    };
    let cfg = Cfg {
        grid: [2, 1, 1],
        block: [128, 1, 1],
        shared: 0,
        stream: null_mut(),
        attrs: &attr,
        num: 1,
    };
    let (mut p, mut val, mut n) = (d, 0x77u32, 256u32);
    let mut args = [ptr(&mut p), ptr(&mut val), ptr(&mut n)];
    check(
        cu!(cuLaunchKernelEx(&cfg, fill, args.as_mut_ptr(), null_mut()): *const Cfg, *mut c_void, *mut *mut c_void, *mut *mut c_void),
        "cuLaunchKernelEx",
    );
    assert!(dtoh::<u32>(d, 256).iter().all(|&x| x == 0x77));
    // Programmatic stream serialization (CUB and Thrust on sm_90): the launch runs, in order.
    let pdl = Attr {
        id: 6,
        pad: 0,
        value: [1; 16],
    };
    let cfg_pdl = Cfg { attrs: &pdl, ..cfg };
    // The fill value, through the pointer the argument array holds.
    let pv = args[1] as *mut u32;
    // SAFETY: `val` lives on; nothing else uses it during these writes.
    unsafe { pv.write(0x99) };
    check(
        cu!(cuLaunchKernelEx(&cfg_pdl, fill, args.as_mut_ptr(), null_mut()): *const Cfg, *mut c_void, *mut *mut c_void, *mut *mut c_void),
        "cuLaunchKernelEx with programmatic stream serialization",
    );
    assert!(dtoh::<u32>(d, 256).iter().all(|&x| x == 0x99));
    // SAFETY: as above.
    unsafe { pv.write(0x77) };
    let bad = Attr {
        id: 7,
        pad: 0,
        value: [0; 16],
    };
    let cfg_bad = Cfg { attrs: &bad, ..cfg };
    assert_eq!(
        cu!(cuLaunchKernelEx(&cfg_bad, fill, args.as_mut_ptr(), null_mut()): *const Cfg, *mut c_void, *mut *mut c_void, *mut *mut c_void),
        801
    );

    // A host function runs after the stream's earlier work, and later work waits for it.
    let mut s = null_mut();
    check(
        cu!(cuStreamCreate(&mut s, 0): *mut *mut c_void, u32),
        "stream",
    );
    let mut h: *mut c_void = null_mut();
    check(
        cu!(cuMemHostAlloc(&mut h, 4, 0): *mut *mut c_void, usize, u32),
        "pinned",
    );
    unsafe { *(h as *mut u32) = 1 };
    let before = HOST_FN_RAN.load(std::sync::atomic::Ordering::SeqCst);
    type HostFn = unsafe extern "C" fn(*mut c_void);
    check(
        cu!(cuLaunchHostFunc(s, Some(host_fn as HostFn), h): *mut c_void, Option<HostFn>, *mut c_void),
        "host func",
    );
    check(
        cu!(cuMemcpyHtoDAsync_v2(d, h, 4, s): u64, *const c_void, usize, *mut c_void),
        "copy after",
    );
    check(cu!(cuStreamSynchronize(s): *mut c_void), "sync");
    assert_eq!(
        HOST_FN_RAN.load(std::sync::atomic::Ordering::SeqCst),
        before + 1
    );
    assert_eq!(dtoh::<u32>(d, 1)[0], 0x600d);

    // Occupancy: the block size with the most resident threads.
    let (mut grid, mut block) = (0, 0);
    type SmemFn = unsafe extern "C" fn(i32) -> usize;
    check(
        cu!(cuOccupancyMaxPotentialBlockSize(&mut grid, &mut block, fill, None, 0, 0): *mut i32, *mut i32, *mut c_void, Option<SmemFn>, usize, i32),
        "max potential",
    );
    assert!(block >= 32 && block % 32 == 0 && grid > 0, "{grid} {block}");
    let mut per_sm = 0;
    check(
        cu!(cuOccupancyMaxActiveBlocksPerMultiprocessor(&mut per_sm, fill, block, 0): *mut i32, *mut c_void, i32, usize),
        "occupancy",
    );
    let mut sms = 0;
    check(
        cu!(cuDeviceGetAttribute(&mut sms, 16, 0): *mut i32, i32, i32),
        "sms",
    );
    assert_eq!(grid, per_sm * sms);

    // The cache configuration and the preferred carveout set the shared memory occupancy
    // counts with: "prefer L1" configures the smallest carveout that holds a block (8 KiB; each
    // block takes the 1 KiB reserve), so 8 blocks of a kernel without shared memory fit
    // (NVIDIA's libcuda on the H100: 8 for blocks of 32, 64 and 128 threads).
    let occ = |f: *mut c_void, block: i32, dyn_bytes: usize| {
        let mut n = -1;
        check(
            cu!(cuOccupancyMaxActiveBlocksPerMultiprocessor(&mut n, f, block, dyn_bytes): *mut i32, *mut c_void, i32, usize),
            "occupancy",
        );
        n
    };
    let default_32 = occ(fill, 32, 0);
    assert!(default_32 > 8, "{default_32}");
    check(
        cu!(cuFuncSetCacheConfig(fill, 2): *mut c_void, u32),
        "prefer L1",
    );
    for block in [32, 64, 128] {
        assert_eq!(occ(fill, block, 0), 8, "block {block}, prefer L1");
    }
    check(
        cu!(cuFuncSetCacheConfig(fill, 0): *mut c_void, u32),
        "prefer none",
    );
    assert_eq!(occ(fill, 32, 0), default_32);
    // A carveout of 5 % (8.2 KiB of 164 KiB on sm_87, 11.4 KiB of 228 KiB on sm_90) rounds up
    // to the 16 KiB configuration: 3 blocks of 4 KiB + the 1 KiB reserve.
    let reduce = function(m, "reduce_sum");
    let mut dflt = 0;
    check(
        cu!(cuFuncGetAttribute(&mut dflt, 9, reduce): *mut i32, i32, *mut c_void),
        "carveout",
    );
    assert_eq!(dflt, -1);
    assert!(occ(reduce, 32, 4096) > 3);
    check(
        cu!(cuFuncSetAttribute(reduce, 9, 5): *mut c_void, i32, i32),
        "carveout 5 %",
    );
    assert_eq!(occ(reduce, 32, 4096), 3);
    // The carveout takes precedence over the cache configuration.
    check(
        cu!(cuFuncSetCacheConfig(reduce, 1): *mut c_void, u32),
        "prefer shared",
    );
    assert_eq!(occ(reduce, 32, 4096), 3);
}
