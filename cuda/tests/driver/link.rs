//! The JIT linker (`cuLink*`): two PTX inputs, one calling a function the other defines, linked
//! by nvJitLink where it is found; without it, the refusal (naming what is missing) and the
//! one-input link of a cubin, which needs no linker.

use crate::*;
use std::ffi::{c_char, c_void, CStr};
use std::ptr::null_mut;

const KERNEL_PTX: &str = r#".version 7.0
.target sm_80
.address_size 64
.extern .func (.param .b32 func_retval0) twice(.param .b32 x);
.visible .entry twice_all(.param .u64 p, .param .u32 n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<5>;
    ld.param.u64 %rd1, [p];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.u32 %p1, %r5, %r1;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.u32 %rd3, %r5, 4;
    add.s64 %rd4, %rd2, %rd3;
    ld.global.u32 %r6, [%rd4];
    {
    .param .b32 param0;
    st.param.b32 [param0], %r6;
    .param .b32 retval0;
    call.uni (retval0), twice, (param0);
    ld.param.b32 %r7, [retval0];
    }
    st.global.u32 [%rd4], %r7;
DONE:
    ret;
}
"#;

const FUNCTION_PTX: &str = r#".version 7.0
.target sm_80
.address_size 64
.visible .func (.param .b32 func_retval0) twice(.param .b32 x)
{
    .reg .b32 %r<3>;
    ld.param.u32 %r1, [x];
    add.s32 %r2, %r1, %r1;
    st.param.b32 [func_retval0], %r2;
    ret;
}
"#;

type AddData = unsafe extern "C" fn(
    *mut c_void,
    u32,
    *const c_void,
    usize,
    *const c_char,
    u32,
    *const i32,
    *mut *mut c_void,
) -> CUresult;

/// A link state with an error log buffer (`log`, 4 KiB).
fn create(log: &mut [u8; 4096]) -> *mut c_void {
    let options = [5i32, 6];
    let mut values = [
        log.as_mut_ptr() as *mut c_void,
        std::ptr::without_provenance_mut(4096),
    ];
    let mut st = null_mut();
    check(
        cu!(cuLinkCreate_v2(2, options.as_ptr(), values.as_mut_ptr(), &mut st): u32, *const i32, *mut *mut c_void, *mut *mut c_void),
        "cuLinkCreate_v2",
    );
    st
}

fn add_ptx(st: *mut c_void, text: &str, name: &CStr) -> CUresult {
    let add: AddData = f("cuLinkAddData_v2");
    unsafe {
        add(
            st,
            1,
            text.as_ptr() as *const c_void,
            text.len(),
            name.as_ptr(),
            0,
            std::ptr::null(),
            null_mut(),
        )
    }
}

#[test]
fn link_two_ptx_inputs_or_refuse_without_nvjitlink() {
    setup();
    let mut log = [0u8; 4096];
    let st = create(&mut log);
    check(add_ptx(st, KERNEL_PTX, c"kernel.ptx"), "add kernel PTX");
    check(add_ptx(st, FUNCTION_PTX, c"twice.ptx"), "add function PTX");
    let (mut cubin, mut size) = (null_mut::<c_void>(), 0usize);
    let r =
        cu!(cuLinkComplete(st, &mut cubin, &mut size): *mut c_void, *mut *mut c_void, *mut usize);
    let text = CStr::from_bytes_until_nul(&log)
        .unwrap()
        .to_string_lossy()
        .into_owned();
    if r == 221 {
        // No nvJitLink here: refused, and the log says what is missing.
        assert!(text.contains("nvJitLink"), "error log: {text}");
        eprintln!("NOTICE: no nvJitLink: the link was refused ({text})");
        check(cu!(cuLinkDestroy(st): *mut c_void), "destroy");
        return;
    }
    check(r, &format!("cuLinkComplete ({text})"));
    assert!(size > 64 && !cubin.is_null());
    let image = unsafe { std::slice::from_raw_parts(cubin as *const u8, size) }.to_vec();
    assert_eq!(&image[..4], b"\x7fELF", "a cubin");
    // The linked cubin loads and its kernel runs (calling the function from the other input).
    let mut m = null_mut();
    check(
        cu!(cuModuleLoadData(&mut m, image.as_ptr() as *const c_void): *mut *mut c_void, *const c_void),
        "load the linked cubin",
    );
    check(cu!(cuLinkDestroy(st): *mut c_void), "destroy");
    let k = function(m, "twice_all");
    if emulated() {
        eprintln!("NOTICE: the emulated Orin does not run nvJitLink's code: launch skipped");
        return;
    }
    let n = 256usize;
    let src: Vec<u32> = (0..n as u32).collect();
    let d = alloc(n * 4);
    htod(d, &src);
    let (mut p, mut cnt) = (d, n as u32);
    launch(k, 2, 128, null_mut(), &mut [ptr(&mut p), ptr(&mut cnt)]);
    let got = dtoh::<u32>(d, n);
    assert!(
        got.iter().enumerate().all(|(i, &x)| x == 2 * i as u32),
        "{:?}",
        &got[..8]
    );
}

#[test]
fn link_one_cubin_and_refusals() {
    setup();
    let (a, b) = sm();
    let path = repo().join(format!("tests/fixtures/cubin/kernels.sm_{a}{b}.cubin"));
    let p = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    let mut log = [0u8; 4096];
    let st = create(&mut log);
    check(
        cu!(cuLinkAddFile_v2(st, 0, p.as_ptr(), 0, std::ptr::null(), null_mut()): *mut c_void, u32, *const c_char, u32, *const i32, *mut *mut c_void),
        "add the cubin",
    );
    let (mut cubin, mut size) = (null_mut::<c_void>(), 0usize);
    check(
        cu!(cuLinkComplete(st, &mut cubin, &mut size): *mut c_void, *mut *mut c_void, *mut usize),
        "complete",
    );
    let mut m = null_mut();
    check(
        cu!(cuModuleLoadData(&mut m, cubin): *mut *mut c_void, *const c_void),
        "load",
    );
    function(m, "fill_u32");
    check(cu!(cuLinkDestroy(st): *mut c_void), "destroy");
    assert_eq!(cu!(cuLinkDestroy(st): *mut c_void), 400);
    // Bad input type, no inputs, a missing file.
    let st = create(&mut log);
    let add: AddData = f("cuLinkAddData_v2");
    let one = [1u8];
    assert_eq!(
        unsafe {
            add(
                st,
                9,
                one.as_ptr() as *const c_void,
                1,
                std::ptr::null(),
                0,
                std::ptr::null(),
                null_mut(),
            )
        },
        1
    );
    assert_eq!(
        cu!(cuLinkComplete(st, &mut cubin, &mut size): *mut c_void, *mut *mut c_void, *mut usize),
        1
    );
    assert_eq!(
        cu!(cuLinkAddFile_v2(st, 0, c"/no/such.cubin".as_ptr(), 0, std::ptr::null(), null_mut()): *mut c_void, u32, *const c_char, u32, *const i32, *mut *mut c_void),
        301
    );
    check(cu!(cuLinkDestroy(st): *mut c_void), "destroy");
}
