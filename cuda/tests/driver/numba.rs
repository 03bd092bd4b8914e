//! What numba-cuda needs: the profiler controls; cubins whose kernel register count in
//! `.nv.info` (`EIATTR_REGCOUNT`) differs from the one in the kernel's `.text` section header
//! (nvJitLink writes such cubins when a kernel calls functions of another input, and with
//! debug information); kernels whose stack ptxas cannot bound (recursion); the constant memory
//! size of a function; the result of a launch past the launch bounds.

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
    let regs = (info >> 24) as i32;
    assert!(
        regs > 0,
        "the fixture's .text.fill_u32 has a register count"
    );
    assert_eq!(num_regs(&original), Ok(regs), "the fixture as built");

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
