//! Emulated GPU tests: float results bit for bit equal to the H200's.

use super::*;

/// Inputs in [-2, 2) from a 64-bit LCG, exactly representable as f32.
struct Lcg(u64);
impl Lcg {
    fn floats(&mut self, n: usize) -> Vec<f32> {
        (0..n)
            .map(|_| {
                self.0 = self
                    .0
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (self.0 >> 40) as f32 / 16_777_216.0 * 4.0 - 2.0
            })
            .collect()
    }
}

fn fnv1a(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325, |h, &c| {
        (h ^ u64::from(c)).wrapping_mul(0x100_0000_01b3)
    })
}

/// The expected hashes were produced on an NVIDIA H200 (driver 580.159.04) by loading
/// `kernels.sm_90.cubin` with libcuda and launching the same kernels on the same LCG inputs
/// (matmul_tiled n = 77 on a 5 x 5 grid of 16 x 16; reduce_sum n = 100000, 391 x 256 threads;
/// saxpy a = 1.37, n = 100003, 256-thread blocks), hashing the output bytes with FNV-1a 64.
/// The reference closures must reproduce the compiled code's float rounding exactly
/// (fused multiply-adds, the reduction tree order).
#[test]
fn float_results_match_h200_bit_for_bit() {
    let mut env = compute_env("sm_90", HOPPER_COMPUTE_A);
    let mut r = Lcg(1);
    // matmul_tiled
    let n = 77u32;
    let (a, b, c) = (DATA, DATA + 0x1_0000, DATA + 0x2_0000);
    env.write(a, &floats(&r.floats((n * n) as usize)));
    env.write(b, &floats(&r.floats((n * n) as usize)));
    let p = params(&[
        &a.to_le_bytes(),
        &b.to_le_bytes(),
        &c.to_le_bytes(),
        &n.to_le_bytes(),
    ]);
    let f = run_fixture(
        &mut env,
        "sm_90",
        "matmul_tiled",
        [5, 5, 1],
        [16, 16, 1],
        0xc00,
        &p,
    );
    assert!(f.is_empty(), "{f:?}");
    assert_eq!(
        fnv1a(&env.read(c, (4 * n * n) as usize)),
        0x3fa2_1f19_0684_f13f,
        "matmul_tiled"
    );
    // reduce_sum
    let n = 100_000u32;
    let (inp, out) = (DATA, DATA + 0x10_0000);
    env.write(inp, &floats(&r.floats(n as usize)));
    let p = params(&[&inp.to_le_bytes(), &out.to_le_bytes(), &n.to_le_bytes()]);
    let f = run_fixture(
        &mut env,
        "sm_90",
        "reduce_sum",
        [391, 1, 1],
        [256, 1, 1],
        0x400 + 1024,
        &p,
    );
    assert!(f.is_empty(), "{f:?}");
    assert_eq!(
        fnv1a(&env.read(out, 4 * 391)),
        0xb781_82f8_1faa_df61,
        "reduce_sum"
    );
    // saxpy
    let n = 100_003u32;
    let (x, y) = (DATA, DATA + 0x10_0000);
    env.write(x, &floats(&r.floats(n as usize)));
    env.write(y, &floats(&r.floats(n as usize)));
    let p = params(&[
        &1.37f32.to_le_bytes(),
        &[0; 4],
        &x.to_le_bytes(),
        &y.to_le_bytes(),
        &n.to_le_bytes(),
    ]);
    let f = run_fixture(
        &mut env,
        "sm_90",
        "saxpy",
        [n / 256 + 1, 1, 1],
        [256, 1, 1],
        0x400,
        &p,
    );
    assert!(f.is_empty(), "{f:?}");
    assert_eq!(
        fnv1a(&env.read(y, 4 * n as usize)),
        0xdff2_d12d_7f6d_6225,
        "saxpy"
    );
}
