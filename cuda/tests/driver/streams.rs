//! Streams and events.

use crate::*;
use std::ffi::c_void;
use std::ptr::null_mut;

#[test]
fn streams_events_and_ordering() {
    setup();
    let m = load_fixture("kernels");
    let inc = function(m, "increment");
    let counter = alloc(8);
    check(cu!(cuMemsetD32_v2(counter, 0, 2): u64, u32, usize), "zero");
    let (mut s1, mut s2) = (null_mut(), null_mut());
    check(
        cu!(cuStreamCreate(&mut s1, 0): *mut *mut c_void, u32),
        "stream",
    );
    check(
        cu!(cuStreamCreate(&mut s2, 1): *mut *mut c_void, u32),
        "non-blocking stream",
    );
    let mut flags = 9u32;
    check(
        cu!(cuStreamGetFlags(s2, &mut flags): *mut c_void, *mut u32),
        "flags",
    );
    assert_eq!(flags, 1);
    let (mut e1, mut e2) = (null_mut(), null_mut());
    check(
        cu!(cuEventCreate(&mut e1, 0): *mut *mut c_void, u32),
        "event",
    );
    check(
        cu!(cuEventCreate(&mut e2, 0): *mut *mut c_void, u32),
        "event",
    );
    let (mut p, mut by) = (counter, 1u64);
    check(
        cu!(cuEventRecord(e1, s1): *mut c_void, *mut c_void),
        "record",
    );
    for _ in 0..50 {
        launch(inc, 1, 32, s1, &mut [ptr(&mut p), ptr(&mut by)]);
    }
    check(
        cu!(cuEventRecord(e2, s1): *mut c_void, *mut c_void),
        "record",
    );
    // s2 continues after s1's 50 increments.
    check(
        cu!(cuStreamWaitEvent(s2, e2, 0): *mut c_void, *mut c_void, u32),
        "wait event",
    );
    let mut by2 = 1000u64;
    launch(inc, 1, 32, s2, &mut [ptr(&mut p), ptr(&mut by2)]);
    check(cu!(cuStreamSynchronize(s2): *mut c_void), "sync s2");
    assert_eq!(cu!(cuStreamQuery(s2): *mut c_void), OK);
    assert_eq!(dtoh::<u64>(counter, 1)[0], 1050);
    check(cu!(cuEventSynchronize(e2): *mut c_void), "event sync");
    assert_eq!(cu!(cuEventQuery(e2): *mut c_void), OK);
    let mut ms = -1.0f32;
    check(
        cu!(cuEventElapsedTime(&mut ms, e1, e2): *mut f32, *mut c_void, *mut c_void),
        "elapsed",
    );
    assert!(ms >= 0.0, "{ms}");
    // Legacy default stream: ordered after work on the blocking stream s1.
    for _ in 0..20 {
        launch(inc, 1, 32, s1, &mut [ptr(&mut p), ptr(&mut by)]);
    }
    launch(inc, 1, 32, null_mut(), &mut [ptr(&mut p), ptr(&mut by2)]);
    check(
        cu!(cuStreamSynchronize(null_mut()): *mut c_void),
        "legacy sync",
    );
    assert_eq!(dtoh::<u64>(counter, 1)[0], 2070);
    // Per-thread default stream (CU_STREAM_PER_THREAD and the _ptsz entry point).
    let lp: Launch = f("cuLaunchKernel_ptsz");
    let mut args = [ptr(&mut p), ptr(&mut by)];
    check(
        unsafe {
            lp(
                inc,
                1,
                1,
                1,
                32,
                1,
                1,
                0,
                null_mut(),
                args.as_mut_ptr(),
                null_mut(),
            )
        },
        "ptsz launch",
    );
    check(
        cu!(cuStreamSynchronize(2 as *mut c_void): *mut c_void),
        "per-thread sync",
    );
    assert_eq!(dtoh::<u64>(counter, 1)[0], 2071);
    // Timing disabled: no elapsed time.
    let mut e3 = null_mut();
    check(
        cu!(cuEventCreate(&mut e3, 2): *mut *mut c_void, u32),
        "event",
    );
    check(
        cu!(cuEventRecord(e3, s1): *mut c_void, *mut c_void),
        "record",
    );
    check(cu!(cuCtxSynchronize(): ), "ctx sync");
    assert_eq!(
        cu!(cuEventElapsedTime(&mut ms, e1, e3): *mut f32, *mut c_void, *mut c_void),
        400
    );
    for e in [e1, e2, e3] {
        check(cu!(cuEventDestroy_v2(e): *mut c_void), "destroy event");
    }
    check(cu!(cuStreamDestroy_v2(s1): *mut c_void), "destroy");
    check(cu!(cuStreamDestroy_v2(s2): *mut c_void), "destroy");
    assert_eq!(cu!(cuStreamDestroy_v2(null_mut()): *mut c_void), 400);
}
