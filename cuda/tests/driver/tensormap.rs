//! `cuTensorMapEncodeTiled` against NVIDIA's answers: every parameter set of
//! `cuda/data/tensormap-h200.txt` (NVIDIA's libcuda on an H200) gives the same result and, when
//! accepted, the same 128 bytes; `cuTensorMapReplaceAddress`; the pointer checks.

use crate::*;
use std::ffi::c_void;
use std::ptr::null_mut;

#[repr(C, align(64))]
struct Map([u32; 32]);

type Encode = unsafe extern "C" fn(
    *mut c_void,
    u32,
    u32,
    *mut c_void,
    *const u64,
    *const u64,
    *const u32,
    *const u32,
    u32,
    u32,
    u32,
    u32,
) -> CUresult;

struct Case {
    dtype: u32,
    rank: u32,
    addr: u64,
    dims: [u64; 5],
    strides: [u64; 4],
    boxes: [u32; 5],
    estrides: [u32; 5],
    modes: [u32; 4],
    result: u32,
    words: Vec<u32>,
}

fn cases() -> Vec<Case> {
    let text = std::fs::read_to_string(repo().join("cuda/data/tensormap-h200.txt"))
        .expect("cuda/data/tensormap-h200.txt");
    let mut out = Vec::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let f: Vec<&str> = line.split(' ').collect();
        let hex = |s: &str| u64::from_str_radix(s, 16).expect("hex");
        let dec = |s: &str| s.parse::<u32>().expect("number");
        out.push(Case {
            dtype: dec(f[0]),
            rank: dec(f[1]),
            addr: hex(f[2]),
            dims: std::array::from_fn(|i| hex(f[3 + i])),
            strides: std::array::from_fn(|i| hex(f[8 + i])),
            boxes: std::array::from_fn(|i| dec(f[12 + i])),
            estrides: std::array::from_fn(|i| dec(f[17 + i])),
            modes: std::array::from_fn(|i| dec(f[22 + i])),
            result: dec(f[26]),
            words: f[27..].iter().map(|s| hex(s) as u32).collect(),
        });
    }
    out
}

#[test]
fn tensor_maps_equal_nvidias() {
    setup();
    let encode: Encode = f("cuTensorMapEncodeTiled");
    let mut shared = 0i32;
    check(
        cu!(cuDeviceGetAttribute(&mut shared, 81, 0): *mut i32, i32, i32),
        "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR",
    );
    let cases = cases();
    assert!(cases.len() > 1000, "{} cases", cases.len());
    let (mut accepted, mut refused, mut smaller) = (0, 0, 0);
    for (n, c) in cases.iter().enumerate() {
        let mut m = Map([0xabab_abab; 32]);
        // SAFETY: the arrays outlive the call; the map is 128 aligned bytes.
        let r = unsafe {
            encode(
                m.0.as_mut_ptr() as *mut c_void,
                c.dtype,
                c.rank,
                c.addr as *mut c_void,
                c.dims.as_ptr(),
                c.strides.as_ptr(),
                c.boxes.as_ptr(),
                c.estrides.as_ptr(),
                c.modes[0],
                c.modes[1],
                c.modes[2],
                c.modes[3],
            )
        };
        let mut want = c.result;
        // The box may bring in at most a multiprocessor's shared memory: on a GPU with less
        // than the H200's, some accepted there are refused here.
        if want == 0 && i64::from(c.words[16]) > i64::from(shared) {
            want = 1;
            smaller += 1;
        }
        assert_eq!(r, want, "case {n} (line {} of the data)", n + 5);
        if want == 0 {
            accepted += 1;
            let mut full = c.words.clone();
            full.resize(32, 0);
            assert_eq!(m.0.to_vec(), full, "case {n}: the descriptor");
        } else {
            refused += 1;
        }
    }
    eprintln!("{accepted} accepted as by NVIDIA's, {refused} refused ({smaller} for this GPU's smaller shared memory)");
    assert!(accepted > 500 && refused > 500);
}

#[test]
fn replace_address_and_pointer_checks() {
    setup();
    let encode: Encode = f("cuTensorMapEncodeTiled");
    let (dims, strides, boxes, es) = ([1024u64, 512], [4096u64], [32u32, 16], [1u32, 1]);
    let mut m = Map([0; 32]);
    let run = |m: *mut c_void, addr: u64, dims: *const u64| {
        // SAFETY: the arrays outlive the call.
        unsafe {
            encode(
                m,
                7,
                2,
                addr as *mut c_void,
                dims,
                strides.as_ptr(),
                boxes.as_ptr(),
                es.as_ptr(),
                0,
                0,
                0,
                0,
            )
        }
    };
    check(
        run(
            m.0.as_mut_ptr() as *mut c_void,
            0x7f00_0000_0000,
            dims.as_ptr(),
        ),
        "encode",
    );
    assert_eq!(&m.0[..3], &[0, 0x7f00, 0x390]);
    check(
        cu!(cuTensorMapReplaceAddress(m.0.as_mut_ptr() as *mut c_void, 0x1234_5670usize as *mut c_void): *mut c_void, *mut c_void),
        "replace",
    );
    assert_eq!(
        &m.0[..3],
        &[0x1234_5670, 0, 0x390],
        "only the address changes"
    );
    assert_eq!(
        cu!(cuTensorMapReplaceAddress(m.0.as_mut_ptr() as *mut c_void, 0x1234_5678usize as *mut c_void): *mut c_void, *mut c_void),
        1,
        "an address not 16-byte aligned"
    );
    assert_eq!(m.0[0], 0x1234_5670, "unchanged by the refusal");
    // SAFETY: 4 bytes into the aligned map: a misaligned pointer into valid memory.
    let inside = unsafe { (m.0.as_mut_ptr() as *mut u8).add(4) } as *mut c_void;
    assert_eq!(
        run(inside, 0x7f00_0000_0000, dims.as_ptr()),
        1,
        "map not 64-byte aligned"
    );
    assert_eq!(
        run(null_mut(), 0x7f00_0000_0000, dims.as_ptr()),
        1,
        "NULL map"
    );
    assert_eq!(
        run(
            m.0.as_mut_ptr() as *mut c_void,
            0x7f00_0000_0000,
            std::ptr::null()
        ),
        1,
        "NULL globalDim"
    );
}
