//! `cuGetExportTable`: the CUDA runtime's private tables, as the runtime uses them.

// The runtime's tables are called through raw function pointers; cu! wraps its own calls.
#![allow(unused_unsafe)]

use crate::*;
use hmac::{Hmac, Mac};
use std::ffi::{c_char, c_void, CStr};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicUsize, Ordering};

fn uuid(v: u128) -> [u8; 16] {
    v.to_be_bytes()
}

/// The table `id` names (its start), or the result code.
fn table(id: u128) -> Result<*const usize, u32> {
    let mut t: *const c_void = std::ptr::null();
    let u = uuid(id);
    match cu!(cuGetExportTable(&mut t, &u): *mut *const c_void, *const [u8; 16]) {
        0 => Ok(t as *const usize),
        r => Err(r),
    }
}

/// Slot `i` of table `t` as a function of type `F`.
unsafe fn slot<F: Copy>(t: *const usize, i: usize) -> F {
    let p = *t.add(i);
    assert_ne!(p, 0, "slot {i} is empty");
    std::mem::transmute_copy(&p)
}

static DESTROYED: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn destructor(_ctx: *mut c_void, _key: *mut c_void, value: *mut c_void) {
    DESTROYED.store(value as usize, Ordering::SeqCst);
}

#[test]
fn runtime_tables_by_uuid() {
    let ctx = setup();
    const RUNTIME: u128 = 0x6bd5fb6c_5bf4_e74a_8987_d93912fd9df9;
    const STORAGE: u128 = 0xc693336e_1121_df11_a8c3_68f355d89593;
    const INTEGRITY: u128 = 0xd4082055_bde6_704b_8d34_ba123c66e1f2;
    assert_eq!(table(0x1234).err(), Some(1), "an unknown table");
    let u = uuid(RUNTIME);
    assert_eq!(
        cu!(cuGetExportTable(null_mut(), &u): *mut *const c_void, *const [u8; 16]),
        1,
        "NULL table pointer"
    );

    // The runtime interface: its size, the primary context without a reference, module loads.
    let rt = table(RUNTIME).expect("runtime interface");
    unsafe {
        assert_eq!(*rt, 13 * 8);
        let primary: unsafe extern "C" fn(*mut *mut c_void, i32) -> u32 = slot(rt, 2);
        let mut pc = null_mut();
        assert_eq!(primary(&mut pc, 0), 0);
        let mut retained = null_mut();
        check(
            cu!(cuDevicePrimaryCtxRetain(&mut retained, 0): *mut *mut c_void, i32),
            "retain",
        );
        assert_eq!(pc, retained, "device 0's primary context");
        check(cu!(cuDevicePrimaryCtxRelease_v2(0): i32), "release");
        assert_eq!(primary(&mut pc, 99), 101, "no device 99");
        let load: unsafe extern "C" fn(*mut *mut c_void, *const c_void) -> u32 = slot(rt, 1);
        let (a, b) = sm();
        let p = repo().join(format!("tests/fixtures/cubin/kernels.sm_{a}{b}.cubin"));
        let bytes = std::fs::read(&p).unwrap();
        // A `__fatBinC_Wrapper_t`: magic, version, the image, no file name.
        #[repr(C)]
        struct Wrapper(u32, u32, *const u8, *const c_void);
        let w = Wrapper(0x4662_43b1, 1, bytes.as_ptr(), std::ptr::null());
        let mut m = null_mut();
        assert_eq!(load(&mut m, &w as *const Wrapper as *const c_void), 0);
        let fill = function(m, "fill_u32");
        assert!(!fill.is_null());
        check(cu!(cuModuleUnload(m): *mut c_void), "unload");
        let ext: unsafe extern "C" fn(
            *mut *mut c_void,
            *const c_void,
            *mut c_void,
            *mut c_void,
            u32,
        ) -> u32 = slot(rt, 6);
        assert_eq!(
            ext(
                &mut m,
                &w as *const Wrapper as *const c_void,
                null_mut(),
                null_mut(),
                1
            ),
            801,
            "load options"
        );
    }

    // The tools' thread-local storage: the calling thread's current context, read and set.
    let tls = table(0x42d85a81_23f6_cb47_8298_f6e78a3aecdc).expect("tools TLS");
    unsafe {
        assert_eq!(*tls, 3 * 8);
        let set: unsafe extern "C" fn(*mut c_void) -> u32 = slot(tls, 1);
        let get: unsafe extern "C" fn(*mut *mut c_void) -> u32 = slot(tls, 2);
        let mut cur = null_mut();
        assert_eq!(get(&mut cur), 0);
        assert_eq!(cur, ctx);
        assert_eq!(set(null_mut()), 0);
        assert_eq!(get(&mut cur), 0);
        assert!(cur.is_null(), "no current context");
        assert_eq!(set(ctx), 0);
        assert_eq!(get(&mut cur), 0);
        assert_eq!(cur, ctx);
    }

    // Context-local storage: put, get, delete; a context's values go with it.
    let st = table(STORAGE).expect("context-local storage");
    unsafe {
        type Put =
            unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_void, *const c_void) -> u32;
        type Get = unsafe extern "C" fn(*mut *mut c_void, *mut c_void, *mut c_void) -> u32;
        type Del = unsafe extern "C" fn(*mut c_void, *mut c_void) -> u32;
        let (put, del, get): (Put, Del, Get) = (slot(st, 0), slot(st, 1), slot(st, 2));
        let key = 0x77 as *mut c_void;
        assert_eq!(
            put(null_mut(), key, 0x1234 as *mut c_void, std::ptr::null()),
            0
        );
        let mut v = null_mut();
        assert_eq!(get(&mut v, null_mut(), key), 0);
        assert_eq!(v as usize, 0x1234);
        assert_eq!(get(&mut v, ctx, key), 0, "the current context by handle");
        assert_eq!(del(null_mut(), key), 0);
        assert_eq!(get(&mut v, null_mut(), key), 400, "deleted");
        let mut c2 = null_mut();
        check(
            cu!(cuCtxCreate_v2(&mut c2, 0, 0): *mut *mut c_void, u32, i32),
            "cuCtxCreate",
        );
        assert_eq!(
            put(c2, key, 0x5678 as *mut c_void, destructor as *const c_void),
            0
        );
        check(cu!(cuCtxDestroy_v2(c2): *mut c_void), "cuCtxDestroy");
        assert_eq!(
            DESTROYED.load(Ordering::SeqCst),
            0x5678,
            "the destructor ran"
        );
        check(cu!(cuCtxSetCurrent(ctx): *mut c_void), "current again");
    }

    // The integrity check: fixed answers for versions ending in 0 and 1, otherwise HMAC-MD2 of
    // what the runtime knows too (computed here the same way).
    let it = table(INTEGRITY).expect("integrity check");
    unsafe {
        type Check = unsafe extern "C" fn(u32, u64, *mut [u64; 2]) -> u32;
        let check_fn: Check = slot(it, 1);
        let mut h = [0u64; 2];
        assert_eq!(check_fn(20, 5, &mut h), 0);
        assert_eq!(h, [0x3341_181C_03CB_675C, 0x8ED3_83AA_1F4C_D1E8]);
        assert_eq!(check_fn(12, 1_700_000_000, &mut h), 0);
        let mut version = 0;
        check(cu!(cuDriverGetVersion(&mut version): *mut i32), "version");
        let mut msg = Vec::new();
        msg.extend_from_slice(&(version as u32).to_ne_bytes());
        msg.extend_from_slice(&12u32.to_ne_bytes());
        msg.extend_from_slice(&std::process::id().to_ne_bytes());
        msg.extend_from_slice(&(libc::pthread_self() as u32).to_ne_bytes());
        msg.extend_from_slice(&(rt as u64).to_ne_bytes());
        msg.extend_from_slice(&(it as u64).to_ne_bytes());
        msg.extend_from_slice(&(*it.add(1) as u64).to_ne_bytes());
        msg.extend_from_slice(&1_700_000_000u64.to_ne_bytes());
        let mut count = 0;
        check(cu!(cuDeviceGetCount(&mut count): *mut i32), "count");
        for d in 0..count {
            let mut u = [0u8; 16];
            check(cu!(cuDeviceGetUuid(&mut u, d): *mut [u8; 16], i32), "uuid");
            msg.extend_from_slice(&u);
            for a in [50, 33, 34] {
                let mut v = 0i32;
                check(
                    cu!(cuDeviceGetAttribute(&mut v, a, d): *mut i32, i32, i32),
                    "pci",
                );
                msg.extend_from_slice(&v.to_ne_bytes());
            }
        }
        let key = [
            0x14, 0x6A, 0xDD, 0xAE, 0x53, 0xA9, 0xA7, 0x52, 0xAA, 0x08, 0x41, 0x36, 0x0B, 0xF5,
            0x5A, 0x9F,
        ];
        let mut mac = <Hmac<md2::Md2> as Mac>::new_from_slice(&key).unwrap();
        mac.update(&msg);
        let want = mac.finalize().into_bytes();
        let got: Vec<u8> = h.iter().flat_map(|w| w.to_ne_bytes()).collect();
        assert_eq!(got, want.to_vec());
    }
}

/// The context internals cuBLAS and cuBLASLt key their state with (a context's id, a stream's
/// own handle and its id), and the 17-slot table cuBLASLt asks for before it picks
/// half-precision kernels, whose slots are refused.
#[test]
fn context_internals_for_cublas() {
    let ctx = setup();
    let t = table(0x21318c60_9714_3248_8ca6_41ff7324c8f2).expect("context internals");
    type Id = unsafe extern "C" fn(*mut c_void, *mut u64) -> u32;
    type Handle = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut *mut c_void, i32) -> u32;
    type StreamId = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut u64) -> u32;
    type Refused = unsafe extern "C" fn() -> u32;
    unsafe {
        assert_eq!(*t, 93 * 8);
        let (id, handle, stream_id): (Id, Handle, StreamId) =
            (slot(t, 4), slot(t, 51), slot(t, 39));
        let (mut got, mut want) = (0u64, 0u64);
        check(
            cu!(cuCtxGetId(ctx, &mut want): *mut c_void, *mut u64),
            "cuCtxGetId",
        );
        assert_eq!(id(ctx, &mut got), 0);
        assert_eq!(got, want, "context id");
        assert_eq!(id(null_mut(), &mut got), 0);
        assert_eq!(got, want, "the current context's id");

        let mut s = null_mut();
        check(
            cu!(cuStreamCreate(&mut s, 0): *mut *mut c_void, u32),
            "cuStreamCreate",
        );
        let mut h = null_mut();
        assert_eq!(handle(ctx, s, &mut h, 0), 0);
        assert_eq!(h, s, "a created stream is its own handle");
        check(
            cu!(cuStreamGetId(s, &mut want): *mut c_void, *mut u64),
            "cuStreamGetId",
        );
        assert_eq!(stream_id(ctx, h, &mut got), 0);
        assert_eq!(got, want, "stream id");
        // NULL is the legacy stream, or the thread's stream where per_thread is set.
        for (public, per_thread, same_as) in [(0usize, 0, 1usize), (0, 1, 2), (1, 0, 1), (2, 0, 2)]
        {
            assert_eq!(handle(ctx, public as *mut c_void, &mut h, per_thread), 0);
            check(
                cu!(cuStreamGetId(same_as as *mut c_void, &mut want): *mut c_void, *mut u64),
                "cuStreamGetId",
            );
            assert_eq!(stream_id(ctx, h, &mut got), 0);
            assert_eq!(got, want, "stream {public:#x}, per_thread {per_thread}");
        }
        assert_eq!(handle(ctx, s, null_mut(), 0), 1, "NULL out");
        assert_eq!(stream_id(ctx, null_mut(), &mut got), 1, "NULL stream");
        check(cu!(cuStreamDestroy_v2(s): *mut c_void), "cuStreamDestroy");
        let refused: Refused = slot(t, 16);
        assert_eq!(refused(), 801);
    }
    let h = table(0x1734dc26_800d_4745_8726_c0f1e7dd8bca).expect("heuristics data");
    unsafe {
        assert_eq!(*h, 17 * 8);
        let refused: Refused = slot(h, 4);
        assert_eq!(refused(), 801);
    }
}

unsafe extern "C" fn record_kernel(user: *mut c_void, f: *mut c_void, name: *const c_char) {
    let seen = &mut *(user as *mut Vec<(usize, String)>);
    seen.push((
        f as usize,
        CStr::from_ptr(name).to_string_lossy().into_owned(),
    ));
}

/// The module internals cuFFT finds its kernels with: slot 7 visits each kernel of a module
/// (its function handle and name) and returns their count; -1 for what is not a module.
#[test]
fn module_internals_visit_the_kernels_of_a_module() {
    setup();
    let t = table(0x6e163fbe_b958_444d_835c_e182aff1991e).expect("module internals");
    type Visit = unsafe extern "C" fn(*mut c_void, *mut c_void, *const c_char);
    type Slot7 = unsafe extern "C" fn(*mut c_void, *mut c_void, Option<Visit>, *mut c_void) -> i32;
    let m = load_fixture("kernels");
    let mut count = 0u32;
    check(
        cu!(cuModuleGetFunctionCount(&mut count, m): *mut u32, *mut c_void),
        "cuModuleGetFunctionCount",
    );
    assert!(count > 1);
    unsafe {
        assert_eq!(*t, 99 * 8);
        let visit_kernels: Slot7 = slot(t, 7);
        let mut seen: Vec<(usize, String)> = Vec::new();
        let n = visit_kernels(
            null_mut(),
            m,
            Some(record_kernel),
            &mut seen as *mut _ as *mut c_void,
        );
        assert_eq!(n, count as i32);
        assert_eq!(seen.len(), count as usize);
        // Each is the module's function of that name.
        for (f, name) in &seen {
            assert_eq!(*f as *mut c_void, function(m, name), "{name}");
        }
        assert!(seen.iter().any(|(_, n)| n == "fill_u32"));
        // Without a visitor it counts; what is not a module is -1.
        assert_eq!(visit_kernels(null_mut(), m, None, null_mut()), count as i32);
        let mut not_a_module = [0u64; 8];
        assert_eq!(
            visit_kernels(
                null_mut(),
                not_a_module.as_mut_ptr() as *mut c_void,
                None,
                null_mut()
            ),
            -1
        );
    }
}
