//! What numba-cuda needs: the profiler controls; cubins whose kernel register count in
//! `.nv.info` (`EIATTR_REGCOUNT`) differs from the one in the kernel's `.text` section header
//! (nvJitLink writes such cubins when a kernel calls functions of another input, and with
//! debug information); kernels whose stack ptxas cannot bound (recursion); the constant memory
//! size of a function; the result of a launch past the launch bounds; user objects;
//! `cuGraphInstantiateWithParams`.

use crate::*;
use std::ffi::c_void;
use std::ptr::null_mut;

#[test]
fn profiler_start_and_stop_need_a_current_context() {
    setup();
    // Enabling or disabling twice is no error.
    for _ in 0..2 {
        check(cu!(cuProfilerStart(): ), "cuProfilerStart");
    }
    for _ in 0..2 {
        check(cu!(cuProfilerStop(): ), "cuProfilerStop");
    }
    // A thread without a current context: CUDA_ERROR_INVALID_CONTEXT (201).
    std::thread::spawn(|| {
        assert_eq!(
            cu!(cuProfilerStart(): ),
            201,
            "cuProfilerStart without a context"
        );
        assert_eq!(
            cu!(cuProfilerStop(): ),
            201,
            "cuProfilerStop without a context"
        );
    })
    .join()
    .unwrap();
}

fn u16_at(b: &[u8], o: usize) -> usize {
    u16::from_le_bytes(b[o..o + 2].try_into().unwrap()) as usize
}
fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().unwrap())
}
fn u64_at(b: &[u8], o: usize) -> usize {
    u64::from_le_bytes(b[o..o + 8].try_into().unwrap()) as usize
}

/// The file offset of the `sh_info` field of the ELF64 section named `name`.
fn sh_info_offset(elf: &[u8], name: &str) -> usize {
    let shoff = u64_at(elf, 0x28);
    let shentsize = u16_at(elf, 0x3a);
    let shnum = u16_at(elf, 0x3c);
    let shstrndx = u16_at(elf, 0x3e);
    let strtab = u64_at(elf, shoff + shstrndx * shentsize + 24);
    for i in 0..shnum {
        let sh = shoff + i * shentsize;
        let n = strtab + u32_at(elf, sh) as usize;
        let end = n + elf[n..].iter().position(|&c| c == 0).unwrap();
        if &elf[n..end] == name.as_bytes() {
            return sh + 44;
        }
    }
    panic!("no section {name}");
}

/// Loads `image` and returns `CU_FUNC_ATTRIBUTE_NUM_REGS` of `fill_u32` (or the load's result).
fn num_regs(image: &[u8]) -> Result<i32, CUresult> {
    let mut m = null_mut();
    let r = cu!(cuModuleLoadData(&mut m, image.as_ptr() as *const c_void): *mut *mut c_void, *const c_void);
    if r != OK {
        return Err(r);
    }
    let f = function(m, "fill_u32");
    let mut regs = 0;
    check(
        cu!(cuFuncGetAttribute(&mut regs, 4, f): *mut i32, i32, *mut c_void),
        "CU_FUNC_ATTRIBUTE_NUM_REGS",
    );
    check(cu!(cuModuleUnload(m): *mut c_void), "cuModuleUnload");
    Ok(regs)
}

#[test]
fn a_kernel_gets_the_larger_of_its_two_register_counts() {
    setup();
    let (a, b) = sm();
    let p = repo().join(format!("tests/fixtures/cubin/kernels.sm_{a}{b}.cubin"));
    let original = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let at = sh_info_offset(&original, ".text.fill_u32");
    let info = u32_at(&original, at);
    // The count .nv.info gives (EIATTR_REGCOUNT): what the fixture loads with. Its section
    // header carries the same count on sm_87 and none (0) on sm_90.
    let regs = num_regs(&original).expect("the fixture as built loads");
    assert!(regs > 0, "fill_u32 uses registers");
    let header = (info >> 24) as i32;
    assert!(
        header == 0 || header == regs,
        "the fixture's .text.fill_u32 header says {header} registers, .nv.info {regs}"
    );

    let with_regs = |n: u32| {
        let mut img = original.clone();
        img[at..at + 4].copy_from_slice(&((info & 0x00ff_ffff) | (n << 24)).to_le_bytes());
        img
    };
    // The section header says fewer than .nv.info: the .nv.info count.
    assert_eq!(num_regs(&with_regs(1)), Ok(regs), "sh_info 1");
    // The section header says more: its count.
    let more = regs as u32 + 8;
    assert_eq!(
        num_regs(&with_regs(more)),
        Ok(more as i32),
        "sh_info {more}"
    );
    // A kernel still launches with either count.
    let m = {
        let img = with_regs(1);
        let mut m = null_mut();
        check(
            cu!(cuModuleLoadData(&mut m, img.as_ptr() as *const c_void): *mut *mut c_void, *const c_void),
            "cuModuleLoadData",
        );
        m
    };
    let fill = function(m, "fill_u32");
    let d = alloc(64 * 4);
    let mut dp = d;
    let mut v = 0x5eed_u32;
    let mut n = 64u32;
    let mut params = [
        &mut dp as *mut u64 as *mut c_void,
        &mut v as *mut u32 as *mut c_void,
        &mut n as *mut u32 as *mut c_void,
    ];
    check(
        cu!(cuLaunchKernel(fill, 1, 1, 1, 64, 1, 1, 0, null_mut(), params.as_mut_ptr(), null_mut()):
            *mut c_void, u32, u32, u32, u32, u32, u32, u32, *mut c_void, *mut *mut c_void, *mut *mut c_void),
        "cuLaunchKernel",
    );
    let mut host = vec![0u32; 64];
    check(
        cu!(cuMemcpyDtoH_v2(host.as_mut_ptr() as *mut c_void, d, 64 * 4): *mut c_void, u64, usize),
        "cuMemcpyDtoH_v2",
    );
    assert!(
        host.iter().all(|&x| x == 0x5eed),
        "fill_u32 wrote {host:x?}"
    );
}

/// The file offsets of the values of every `EIATTR_MIN_STACK_SIZE` (0x12, `EIFMT_SVAL`: symbol
/// index, bytes) in the module's `.nv.info`.
fn min_stack_values(elf: &[u8]) -> Vec<usize> {
    let shoff = u64_at(elf, 0x28);
    let shentsize = u16_at(elf, 0x3a);
    let shnum = u16_at(elf, 0x3c);
    let shstrndx = u16_at(elf, 0x3e);
    let strtab = u64_at(elf, shoff + shstrndx * shentsize + 24);
    let mut v = Vec::new();
    for i in 0..shnum {
        let sh = shoff + i * shentsize;
        let n = strtab + u32_at(elf, sh) as usize;
        if !elf[n..].starts_with(b".nv.info\0") {
            continue;
        }
        let (off, size) = (u64_at(elf, sh + 24), u64_at(elf, sh + 32));
        let mut o = off;
        while o + 4 <= off + size {
            let (fmt, attr) = (elf[o], elf[o + 1]);
            match fmt {
                4 => {
                    let len = u16_at(elf, o + 2);
                    if attr == 0x12 && len == 8 {
                        v.push(o + 8);
                    }
                    o += 4 + len;
                }
                1 => o += 2,
                _ => o += 4,
            }
        }
    }
    v
}

#[test]
fn a_kernel_whose_stack_ptxas_cannot_bound_gets_the_stack_limit() {
    setup();
    let (a, b) = sm();
    let p = repo().join(format!("tests/fixtures/cubin/kernels.sm_{a}{b}.cubin"));
    let mut img = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    // What ptxas writes for recursion: a minimum stack of 0xffffffff, for every kernel here.
    let at = min_stack_values(&img);
    assert!(
        !at.is_empty(),
        "the fixture has EIATTR_MIN_STACK_SIZE entries"
    );
    for o in at {
        img[o..o + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    }
    let mut m = null_mut();
    check(
        cu!(cuModuleLoadData(&mut m, img.as_ptr() as *const c_void): *mut *mut c_void, *const c_void),
        "cuModuleLoadData",
    );
    let fill = function(m, "fill_u32");
    // CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: the kernel's own bound, none.
    let mut local = -1;
    check(
        cu!(cuFuncGetAttribute(&mut local, 3, fill): *mut i32, i32, *mut c_void),
        "CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES",
    );
    assert_eq!(local, 0);
    let d = alloc(32 * 4);
    let mut dp = d;
    let mut v = 0xabcd_u32;
    let mut n = 32u32;
    let mut params = [
        &mut dp as *mut u64 as *mut c_void,
        &mut v as *mut u32 as *mut c_void,
        &mut n as *mut u32 as *mut c_void,
    ];
    check(
        cu!(cuLaunchKernel(fill, 1, 1, 1, 32, 1, 1, 0, null_mut(), params.as_mut_ptr(), null_mut()):
            *mut c_void, u32, u32, u32, u32, u32, u32, u32, *mut c_void, *mut *mut c_void, *mut *mut c_void),
        "cuLaunchKernel",
    );
    let mut host = vec![0u32; 32];
    check(
        cu!(cuMemcpyDtoH_v2(host.as_mut_ptr() as *mut c_void, d, 32 * 4): *mut c_void, u64, usize),
        "cuMemcpyDtoH_v2",
    );
    assert!(
        host.iter().all(|&x| x == 0xabcd),
        "fill_u32 wrote {host:x?}"
    );
}

/// `CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES`: the module's user constant data (`__constant__`,
/// `.nv.constant3`), numba-cuda's `get_const_mem_size`.
#[test]
fn const_size_bytes_is_the_modules_user_constant_data() {
    setup();
    let attr = |m: *mut c_void, name: &str| {
        let f = function(m, name);
        let mut v = -1;
        check(
            cu!(cuFuncGetAttribute(&mut v, 2, f): *mut i32, i32, *mut c_void),
            "CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES",
        );
        v
    };
    // globals.cu: `__constant__ unsigned c_table[8]`.
    let g = load_fixture("globals");
    assert_eq!(attr(g, "use_globals"), 32);
    // kernels.cu declares no constant data.
    let k = load_fixture("kernels");
    assert_eq!(attr(k, "fill_u32"), 0);
}

/// A block past the kernel's launch bounds (`__launch_bounds__(128)`, `.maxntid`) is
/// `CUDA_ERROR_INVALID_VALUE` (numba-cuda's `launch_bounds` tests), not
/// `CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES` (a block the kernel's registers do not fit).
#[test]
fn a_block_past_the_launch_bounds_is_an_invalid_value() {
    setup();
    let m = load_fixture("kernels");
    let bounded = function(m, "bounded_128");
    let d = alloc(1 << 12);
    let mut dp = d;
    let mut params = [&mut dp as *mut u64 as *mut c_void];
    let launch = |threads: u32, params: &mut [*mut c_void]| {
        cu!(cuLaunchKernel(bounded, 1, 1, 1, threads, 1, 1, 0, null_mut(), params.as_mut_ptr(), null_mut()):
            *mut c_void, u32, u32, u32, u32, u32, u32, u32, *mut c_void, *mut *mut c_void, *mut *mut c_void)
    };
    assert_eq!(launch(256, &mut params), 1, "256 threads");
    assert_eq!(launch(129, &mut params), 1, "129 threads");
    check(launch(128, &mut params), "128 threads");
    check(cu!(cuCtxSynchronize(): ), "cuCtxSynchronize");
}

static DESTROYED: std::sync::Mutex<Vec<usize>> = std::sync::Mutex::new(Vec::new());

unsafe extern "C" fn destroy_user_object(p: *mut c_void) {
    DESTROYED.lock().unwrap().push(p as usize);
}

/// Waits (up to 10 s) until the destructor of the object made with `tag` has run; whether it ran.
fn destroyed(tag: usize) -> bool {
    for _ in 0..1000 {
        if DESTROYED.lock().unwrap().contains(&tag) {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    false
}

fn user_object(tag: usize, refs: u32) -> *mut c_void {
    let mut o = null_mut();
    let d: unsafe extern "C" fn(*mut c_void) = destroy_user_object;
    check(
        cu!(cuUserObjectCreate(&mut o, tag as *mut c_void, Some(d), refs, 1):
            *mut *mut c_void, *mut c_void, Option<unsafe extern "C" fn(*mut c_void)>, u32, u32),
        "cuUserObjectCreate",
    );
    assert!(!o.is_null());
    o
}

/// User objects (cuda.core keeps a captured graph's Python objects alive with them): counted
/// references of the caller, of graphs and of the executable graphs instantiated from them; the
/// destructor runs once the last is released.
#[test]
fn user_objects_live_until_their_last_reference() {
    setup();
    let create = |flags: u32, refs: u32, d: Option<unsafe extern "C" fn(*mut c_void)>| {
        let mut o = null_mut();
        cu!(cuUserObjectCreate(&mut o, null_mut(), d, refs, flags):
            *mut *mut c_void, *mut c_void, Option<unsafe extern "C" fn(*mut c_void)>, u32, u32)
    };
    let d: unsafe extern "C" fn(*mut c_void) = destroy_user_object;
    // The flag is required; the count is 1..=INT_MAX; the destructor is required.
    assert_eq!(create(0, 1, Some(d)), 1, "flags 0");
    assert_eq!(create(1, 0, Some(d)), 1, "initial count 0");
    assert_eq!(create(1, 1, None), 1, "no destructor");

    // The caller's references.
    let a = user_object(0xa1, 2);
    check(cu!(cuUserObjectRetain(a, 3): *mut c_void, u32), "retain 3");
    assert_eq!(
        cu!(cuUserObjectRetain(a, 0): *mut c_void, u32),
        1,
        "retain 0"
    );
    check(
        cu!(cuUserObjectRelease(a, 4): *mut c_void, u32),
        "release 4",
    );
    assert!(
        !DESTROYED.lock().unwrap().contains(&0xa1),
        "1 reference left"
    );
    check(
        cu!(cuUserObjectRelease(a, 1): *mut c_void, u32),
        "release the last",
    );
    assert!(destroyed(0xa1), "the destructor ran");

    // A graph's references: new ones, and the caller's moved to it.
    let mut g = null_mut();
    check(
        cu!(cuGraphCreate(&mut g, 0): *mut *mut c_void, u32),
        "cuGraphCreate",
    );
    let b = user_object(0xb2, 1);
    check(
        cu!(cuGraphRetainUserObject(g, b, 2, 0): *mut c_void, *mut c_void, u32, u32),
        "graph retains 2",
    );
    let c = user_object(0xc3, 1);
    check(
        cu!(cuGraphRetainUserObject(g, c, 1, 1): *mut c_void, *mut c_void, u32, u32),
        "graph takes the caller's reference (CU_GRAPH_USER_OBJECT_MOVE)",
    );
    assert_eq!(
        cu!(cuGraphRetainUserObject(g, c, 1, 2): *mut c_void, *mut c_void, u32, u32),
        1,
        "unknown flag"
    );
    // The graph releases what it owns, no more.
    assert_eq!(
        cu!(cuGraphReleaseUserObject(g, b, 3): *mut c_void, *mut c_void, u32),
        1,
        "the graph owns 2"
    );
    check(
        cu!(cuGraphReleaseUserObject(g, b, 1): *mut c_void, *mut c_void, u32),
        "graph releases 1",
    );
    check(
        cu!(cuUserObjectRelease(b, 1): *mut c_void, u32),
        "caller's b",
    );
    assert!(
        !DESTROYED.lock().unwrap().contains(&0xb2),
        "the graph holds one of b"
    );
    // An executable graph holds the graph's references after the graph is gone.
    let mut e = null_mut();
    check(
        cu!(cuGraphInstantiateWithFlags(&mut e, g, 0): *mut *mut c_void, *mut c_void, u64),
        "cuGraphInstantiateWithFlags",
    );
    check(cu!(cuGraphDestroy(g): *mut c_void), "cuGraphDestroy");
    assert!(
        !DESTROYED.lock().unwrap().contains(&0xb2) && !DESTROYED.lock().unwrap().contains(&0xc3),
        "the executable graph holds b and c"
    );
    check(
        cu!(cuGraphExecDestroy(e): *mut c_void),
        "cuGraphExecDestroy",
    );
    assert!(destroyed(0xb2) && destroyed(0xc3), "b and c destroyed");
    let n = DESTROYED.lock().unwrap().len();
    assert_eq!(n, 3, "each destructor ran once");
}

/// `cuGraphInstantiateWithParams` (cuda.core's graph builder): the flags of the parameters, the
/// upload they ask for, the result written back.
#[test]
fn instantiate_with_params_writes_the_result() {
    setup();
    #[repr(C)]
    struct Params {
        flags: u64,
        upload_stream: *mut c_void,
        err_node_out: *mut c_void,
        result_out: u32,
    }
    let mut g = null_mut();
    check(
        cu!(cuGraphCreate(&mut g, 0): *mut *mut c_void, u32),
        "cuGraphCreate",
    );
    let mut n = null_mut();
    check(
        cu!(cuGraphAddEmptyNode(&mut n, g, std::ptr::null(), 0): *mut *mut c_void, *mut c_void, *const *mut c_void, usize),
        "cuGraphAddEmptyNode",
    );
    let mut s = null_mut();
    check(
        cu!(cuStreamCreate(&mut s, 0): *mut *mut c_void, u32),
        "cuStreamCreate",
    );
    let inst = |flags: u64, e: &mut *mut c_void| {
        let mut p = Params {
            flags,
            upload_stream: s,
            err_node_out: std::ptr::dangling_mut::<c_void>(),
            result_out: 99,
        };
        let r = cu!(cuGraphInstantiateWithParams(e, g, &mut p): *mut *mut c_void, *mut c_void, *mut Params);
        assert!(p.err_node_out.is_null(), "flags {flags:#x}: no error node");
        (r, p.result_out)
    };
    for flags in [0u64, 2 /* UPLOAD */] {
        let mut e = null_mut();
        assert_eq!(inst(flags, &mut e), (0, 0), "flags {flags:#x}");
        assert!(!e.is_null());
        check(
            cu!(cuGraphLaunch(e, s): *mut c_void, *mut c_void),
            "cuGraphLaunch",
        );
        check(
            cu!(cuStreamSynchronize(s): *mut c_void),
            "cuStreamSynchronize",
        );
        check(
            cu!(cuGraphExecDestroy(e): *mut c_void),
            "cuGraphExecDestroy",
        );
    }
    // An unknown flag: CUDA_ERROR_INVALID_VALUE and CUDA_GRAPH_INSTANTIATE_ERROR.
    let mut e = null_mut();
    assert_eq!(inst(0x100, &mut e), (1, 1));
    assert_eq!(
        cu!(cuGraphInstantiateWithParams(&mut e, g, null_mut()): *mut *mut c_void, *mut c_void, *mut Params),
        1,
        "NULL parameters"
    );
    check(cu!(cuGraphDestroy(g): *mut c_void), "cuGraphDestroy");
    check(
        cu!(cuStreamDestroy_v2(s): *mut c_void),
        "cuStreamDestroy_v2",
    );
}
