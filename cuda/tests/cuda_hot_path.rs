//! `cuLaunchKernel` through the built libcuda.so makes no system call and no heap allocation once
//! warm (the performance rules), on the legacy default stream, a blocking stream and the
//! per-thread default stream, also while the legacy stream orders with a blocking stream.
//!
//! Allocations: this test executable defines `malloc` and its family (exported to the library,
//! which binds to them: build.rs) and counts the calls made by the measuring thread. System
//! calls: the measuring thread installs a seccomp filter (that thread only) that traps every
//! system call but thread exit into a `SIGSYS` handler, which counts it (the call does not run;
//! a launch that needed it would fail, and is counted either way). Where seccomp filters cannot
//! be installed (an emulator that lacks them), the system-call half is skipped, saying so.

#![allow(non_snake_case, clippy::missing_safety_doc)]

#[macro_use]
#[path = "common/mod.rs"]
mod common;
use common::*;

use std::cell::Cell;
use std::ffi::c_void;
use std::ptr::null_mut;

// --- Counting allocator entry points ---------------------------------------------------------

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

fn count_alloc() {
    let _ = COUNTING.try_with(|c| {
        if c.get() {
            let _ = ALLOCS.try_with(|a| a.set(a.get() + 1));
        }
    });
}

extern "C" {
    fn __libc_malloc(n: usize) -> *mut c_void;
    fn __libc_calloc(n: usize, size: usize) -> *mut c_void;
    fn __libc_realloc(p: *mut c_void, n: usize) -> *mut c_void;
    fn __libc_free(p: *mut c_void);
    fn __libc_memalign(align: usize, n: usize) -> *mut c_void;
}

#[no_mangle]
pub unsafe extern "C" fn malloc(n: usize) -> *mut c_void {
    count_alloc();
    __libc_malloc(n)
}

#[no_mangle]
pub unsafe extern "C" fn calloc(n: usize, size: usize) -> *mut c_void {
    count_alloc();
    __libc_calloc(n, size)
}

#[no_mangle]
pub unsafe extern "C" fn realloc(p: *mut c_void, n: usize) -> *mut c_void {
    count_alloc();
    __libc_realloc(p, n)
}

#[no_mangle]
pub unsafe extern "C" fn free(p: *mut c_void) {
    __libc_free(p)
}

#[no_mangle]
pub unsafe extern "C" fn memalign(align: usize, n: usize) -> *mut c_void {
    count_alloc();
    __libc_memalign(align, n)
}

#[no_mangle]
pub unsafe extern "C" fn aligned_alloc(align: usize, n: usize) -> *mut c_void {
    count_alloc();
    __libc_memalign(align, n)
}

#[no_mangle]
pub unsafe extern "C" fn posix_memalign(out: *mut *mut c_void, align: usize, n: usize) -> i32 {
    count_alloc();
    let p = __libc_memalign(align, n);
    if p.is_null() {
        return libc::ENOMEM;
    }
    *out = p;
    0
}

// --- Counting system calls -------------------------------------------------------------------

thread_local! {
    // Per thread (the handler runs on the trapped thread): tests run side by side.
    static SYSCALLS: Cell<u64> = const { Cell::new(0) };
    static LAST_SYSCALL: Cell<i64> = const { Cell::new(-1) };
}

fn syscalls() -> u64 {
    SYSCALLS.with(|c| c.get())
}

extern "C" fn on_sigsys(_sig: i32, info: *mut libc::siginfo_t, _ctx: *mut c_void) {
    // siginfo for SIGSYS: the system call number follows the call address (offset 24).
    let nr = unsafe { *((info as *const u8).add(24) as *const i32) };
    let _ = SYSCALLS.try_with(|c| c.set(c.get() + 1));
    let _ = LAST_SYSCALL.try_with(|c| c.set(nr as i64));
}

/// Trap every system call of the calling thread but exit (and the signal return) into
/// `on_sigsys`. False where the filter cannot be installed.
fn trap_syscalls_of_this_thread() -> bool {
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_sigsys as *const () as usize;
        sa.sa_flags = libc::SA_SIGINFO;
        if libc::sigaction(libc::SIGSYS, &sa, null_mut()) != 0 {
            return false;
        }
        let stmt = |code: u32, k: u32| libc::sock_filter {
            code: code as u16,
            jt: 0,
            jf: 0,
            k,
        };
        let jeq = |k: i64, jt: u8| libc::sock_filter {
            code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16,
            jt,
            jf: 0,
            k: k as u32,
        };
        let prog = [
            // The system call number (seccomp_data.nr).
            stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0),
            jeq(libc::SYS_exit, 3),
            jeq(libc::SYS_exit_group, 2),
            jeq(libc::SYS_rt_sigreturn, 1),
            stmt(libc::BPF_RET | libc::BPF_K, libc::SECCOMP_RET_TRAP),
            stmt(libc::BPF_RET | libc::BPF_K, libc::SECCOMP_RET_ALLOW),
        ];
        let fprog = libc::sock_fprog {
            len: prog.len() as u16,
            filter: prog.as_ptr() as *mut libc::sock_filter,
        };
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return false;
        }
        // prctl's filter applies to this thread only (no SECCOMP_FILTER_FLAG_TSYNC). An
        // emulator that runs this program (qemu-user) refuses it.
        libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER,
            &fprog as *const libc::sock_fprog,
            0,
            0,
        ) == 0
    }
}

type Launch = unsafe extern "C" fn(
    *mut c_void,
    u32,
    u32,
    u32,
    u32,
    u32,
    u32,
    u32,
    *mut c_void,
    *mut *mut c_void,
    *mut *mut c_void,
) -> CUresult;

/// What the measuring thread saw.
struct Measured {
    allocs: u64,
    syscalls: Option<u64>,
    last_syscall: i64,
    failed: Vec<(usize, CUresult)>,
}

#[test]
fn launches_make_no_syscall_and_no_allocation() {
    let ctx = setup();
    let m = load_fixture("kernels");
    let inc = function(m, "increment");
    let counter = alloc(8);
    check(cu!(cuMemsetD32_v2(counter, 0, 2): u64, u32, usize), "zero");
    let mut blocking = null_mut();
    check(
        cu!(cuStreamCreate(&mut blocking, 0): *mut *mut c_void, u32),
        "blocking stream",
    );
    let launch: Launch = f("cuLaunchKernel");
    let launch_ptsz: Launch = f("cuLaunchKernel_ptsz");
    let (ctx_u, blocking_u, counter_u, inc_u) =
        (ctx as usize, blocking as usize, counter, inc as usize);
    let rounds = 100usize;
    // Per round: the legacy stream, the blocking stream (which orders with the legacy stream's
    // work), the per-thread default stream, the legacy stream again (which orders with the
    // blocking streams' work).
    let per_round = 4usize;
    let measured = std::thread::spawn(move || {
        let ctx = ctx_u as *mut c_void;
        let blocking = blocking_u as *mut c_void;
        let inc = inc_u as *mut c_void;
        check(cu!(cuCtxSetCurrent(ctx): *mut c_void), "set current");
        let (mut p, mut by) = (counter_u, 1u64);
        let mut args = [
            &mut p as *mut u64 as *mut c_void,
            &mut by as *mut u64 as *mut c_void,
        ];
        let go = |l: Launch, s: *mut c_void, args: &mut [*mut c_void; 2]| unsafe {
            l(inc, 1, 1, 1, 32, 1, 1, 0, s, args.as_mut_ptr(), null_mut())
        };
        let mut failed = Vec::with_capacity(rounds * per_round);
        // Warm up: every stream once (the per-thread stream is made by its first use).
        for (l, s) in [
            (launch, null_mut()),
            (launch, blocking),
            (launch_ptsz, null_mut()),
            (launch, null_mut()),
        ] {
            check(go(l, s, &mut args), "warm-up launch");
        }
        let trapping = trap_syscalls_of_this_thread();
        let before = syscalls();
        ALLOCS.with(|a| a.set(0));
        COUNTING.with(|c| c.set(true));
        for i in 0..rounds * per_round {
            let r = match i % per_round {
                0 | 3 => go(launch, null_mut(), &mut args),
                1 => go(launch, blocking, &mut args),
                _ => go(launch_ptsz, null_mut(), &mut args),
            };
            if r != OK {
                // Capacity reserved before: no allocation.
                failed.push((i, r));
            }
        }
        COUNTING.with(|c| c.set(false));
        Measured {
            allocs: ALLOCS.with(|a| a.get()),
            syscalls: trapping.then(|| syscalls() - before),
            last_syscall: LAST_SYSCALL.with(|c| c.get()),
            failed,
        }
    })
    .join()
    .unwrap();
    check(cu!(cuCtxSynchronize(): ), "sync");
    let mut v = 0u64;
    check(
        cu!(cuMemcpyDtoH_v2(&mut v as *mut u64 as *mut c_void, counter, 8): *mut c_void, u64, usize),
        "read counter",
    );
    assert!(
        measured.failed.is_empty(),
        "failed launches: {:?}",
        measured.failed
    );
    assert_eq!(v, (per_round * (rounds + 1)) as u64, "every launch ran");
    assert_eq!(
        measured.allocs, 0,
        "heap allocations on the cuLaunchKernel path"
    );
    match measured.syscalls {
        Some(n) => assert_eq!(
            n, 0,
            "system calls on the cuLaunchKernel path (the last: number {})",
            measured.last_syscall
        ),
        None => {
            eprintln!("NOTICE: seccomp filters cannot be installed here: system calls not counted")
        }
    }
    check(cu!(cuStreamDestroy_v2(blocking): *mut c_void), "destroy");
}

/// The counters count, in the library too: a launch refused with a message allocates it, a
/// module load from a file opens it (a system call).
#[test]
fn the_counters_count() {
    setup();
    let ctx = {
        let mut c = null_mut();
        check(cu!(cuCtxGetCurrent(&mut c): *mut *mut c_void), "current");
        c as usize
    };
    let (allocs, syscalls) = std::thread::spawn(move || {
        check(
            cu!(cuCtxSetCurrent(ctx as *mut c_void): *mut c_void),
            "set current",
        );
        let launch: Launch = f("cuLaunchKernel");
        let load: unsafe extern "C" fn(*mut *mut c_void, *const std::ffi::c_char) -> CUresult =
            f("cuModuleLoad");
        let mut m = null_mut();
        ALLOCS.with(|a| a.set(0));
        COUNTING.with(|c| c.set(true));
        let r = unsafe {
            launch(
                null_mut(),
                1,
                1,
                1,
                1,
                1,
                1,
                0,
                null_mut(),
                null_mut(),
                null_mut(),
            )
        };
        COUNTING.with(|c| c.set(false));
        assert_eq!(r, 400);
        let allocs = ALLOCS.with(|a| a.get());
        if !trap_syscalls_of_this_thread() {
            return (allocs, None);
        }
        let before = syscalls();
        let _ = unsafe { load(&mut m, c"/nonexistent/x.cubin".as_ptr()) };
        (allocs, Some(syscalls() - before))
    })
    .join()
    .unwrap();
    assert!(allocs >= 1, "the refused launch's message was not counted");
    if let Some(n) = syscalls {
        assert!(n >= 1, "the module load's open was not counted");
    }
}
