//! Devices and contexts.

use crate::*;
use std::ffi::{c_char, c_void, CStr};
use std::ptr::null_mut;

#[test]
fn device_queries() {
    let mut v = 0;
    check(cu!(cuDriverGetVersion(&mut v): *mut i32), "version");
    assert_eq!(v, 13000);
    check(cu!(cuInit(0): u32), "cuInit");
    let mut n = 0;
    check(cu!(cuDeviceGetCount(&mut n): *mut i32), "count");
    assert!(n >= 1);
    let mut d = -1;
    check(cu!(cuDeviceGet(&mut d, 0): *mut i32, i32), "get");
    assert_eq!(d, 0);
    assert_eq!(cu!(cuDeviceGet(&mut d, n): *mut i32, i32), 101);
    let mut name = [0 as c_char; 256];
    check(
        cu!(cuDeviceGetName(name.as_mut_ptr(), 256, 0): *mut c_char, i32, i32),
        "name",
    );
    assert!(!unsafe { CStr::from_ptr(name.as_ptr()) }
        .to_bytes()
        .is_empty());
    let mut mem = 0usize;
    check(
        cu!(cuDeviceTotalMem_v2(&mut mem, 0): *mut usize, i32),
        "total mem",
    );
    assert!(mem > 0);
    let (a, b) = sm();
    let (mut ma, mut mi) = (0, 0);
    check(
        cu!(cuDeviceComputeCapability(&mut ma, &mut mi, 0): *mut i32, *mut i32, i32),
        "cc",
    );
    assert_eq!((ma, mi), (a, b));
    if std::env::var_os("TEGRAGPU_DEVICE").is_none()
        && !std::path::Path::new("/dev/nvidiactl").exists()
    {
        assert_eq!((a, b), (8, 7), "the emulated Orin is sm_87");
    }
    let mut x = 0;
    for attr in 1..=147 {
        check(
            cu!(cuDeviceGetAttribute(&mut x, attr, 0): *mut i32, i32, i32),
            &format!("attribute {attr}"),
        );
    }
    assert_eq!(
        cu!(cuDeviceGetAttribute(&mut x, 0, 0): *mut i32, i32, i32),
        1
    );
    assert_eq!(
        cu!(cuDeviceGetAttribute(&mut x, 148, 0): *mut i32, i32, i32),
        1
    );
    check(
        cu!(cuDeviceGetAttribute(&mut x, 16, 0): *mut i32, i32, i32),
        "sm count",
    );
    assert!(x > 0);
    let mut u = [0u8; 16];
    check(
        cu!(cuDeviceGetUuid_v2(u.as_mut_ptr() as *mut c_void, 0): *mut c_void, i32),
        "uuid",
    );
    assert_ne!(u, [0u8; 16]);
}

#[test]
fn context_stack_is_per_thread() {
    let c1 = setup();
    let mut cur = null_mut();
    check(cu!(cuCtxGetCurrent(&mut cur): *mut *mut c_void), "get");
    assert_eq!(cur, c1);
    let mut c2 = null_mut();
    check(
        cu!(cuCtxCreate_v2(&mut c2, 0, 0): *mut *mut c_void, u32, i32),
        "create 2",
    );
    check(cu!(cuCtxGetCurrent(&mut cur): *mut *mut c_void), "get");
    assert_eq!(cur, c2);
    let mut popped = null_mut();
    check(
        cu!(cuCtxPopCurrent_v2(&mut popped): *mut *mut c_void),
        "pop",
    );
    assert_eq!(popped, c2);
    check(cu!(cuCtxGetCurrent(&mut cur): *mut *mut c_void), "get");
    assert_eq!(cur, c1);
    check(cu!(cuCtxPushCurrent_v2(c2): *mut c_void), "push");
    check(cu!(cuCtxGetCurrent(&mut cur): *mut *mut c_void), "get");
    assert_eq!(cur, c2);
    let c2u = c2 as usize;
    std::thread::spawn(move || {
        let mut cur: *mut c_void = std::ptr::without_provenance_mut(1);
        check(
            cu!(cuCtxGetCurrent(&mut cur): *mut *mut c_void),
            "get in thread",
        );
        assert!(cur.is_null(), "a new thread has no current context");
        let mut d = 0u64;
        assert_eq!(cu!(cuMemAlloc_v2(&mut d, 16): *mut u64, usize), 201);
        check(cu!(cuCtxSetCurrent(c2u as *mut c_void): *mut c_void), "set");
        check(cu!(cuCtxGetCurrent(&mut cur): *mut *mut c_void), "get");
        assert_eq!(cur as usize, c2u);
        let mut dev = -1;
        check(cu!(cuCtxGetDevice(&mut dev): *mut i32), "device");
        assert_eq!(dev, 0);
    })
    .join()
    .unwrap();
    check(cu!(cuCtxDestroy_v2(c2): *mut c_void), "destroy 2");
    check(cu!(cuCtxGetCurrent(&mut cur): *mut *mut c_void), "get");
    assert_eq!(cur, c1);
    // Primary context: retained twice is the same context.
    let (mut p1, mut p2) = (null_mut(), null_mut());
    check(
        cu!(cuDevicePrimaryCtxRetain(&mut p1, 0): *mut *mut c_void, i32),
        "retain",
    );
    check(
        cu!(cuDevicePrimaryCtxRetain(&mut p2, 0): *mut *mut c_void, i32),
        "retain",
    );
    assert_eq!(p1, p2);
    let (mut flags, mut active) = (0u32, 0);
    check(
        cu!(cuDevicePrimaryCtxGetState(0, &mut flags, &mut active): i32, *mut u32, *mut i32),
        "state",
    );
    assert_eq!(active, 1);
    check(cu!(cuDevicePrimaryCtxRelease_v2(0): i32), "release");
    check(cu!(cuDevicePrimaryCtxRelease_v2(0): i32), "release");
    check(cu!(cuCtxSynchronize(): ), "sync");
}
