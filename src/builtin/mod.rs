//! Kernels the library itself launches, embedded as cubins (built from `src/builtin/*.cu` by
//! `scripts/gen_cubins.py` with the pinned nvrtc; see tests/fixtures/cubin/README.md).
//!
//! `tg_copy(dst, src, n)`: the SM copy path of [`crate::core::Queue::copy`] on compute queues.
//! `tg_sys_vprintf`, `tg_sys_assertfail`: device-side printf and assert for user cubins.

/// (SM major, SM minor, cubin) for every built-in cubin.
pub static COPY_CUBINS: &[(u32, u32, &[u8])] = &[
    (8, 0, include_bytes!("copy.sm_80.cubin")),
    (8, 6, include_bytes!("copy.sm_86.cubin")),
    (8, 7, include_bytes!("copy.sm_87.cubin")),
    (8, 9, include_bytes!("copy.sm_89.cubin")),
    (9, 0, include_bytes!("copy.sm_90.cubin")),
    (10, 0, include_bytes!("copy.sm_100.cubin")),
    (12, 0, include_bytes!("copy.sm_120.cubin")),
];

/// (SM major, SM minor, cubin) of the syscall module: device-side printf and assert
/// (`syscalls.cu`, see [`crate::core`]'s syscalls).
pub static SYSCALL_CUBINS: &[(u32, u32, &[u8])] = &[
    (8, 0, include_bytes!("syscalls.sm_80.cubin")),
    (8, 6, include_bytes!("syscalls.sm_86.cubin")),
    (8, 7, include_bytes!("syscalls.sm_87.cubin")),
    (8, 9, include_bytes!("syscalls.sm_89.cubin")),
    (9, 0, include_bytes!("syscalls.sm_90.cubin")),
    (10, 0, include_bytes!("syscalls.sm_100.cubin")),
    (12, 0, include_bytes!("syscalls.sm_120.cubin")),
];

/// The syscall cubin for an SM version (chosen as [`copy_cubin`] chooses).
pub fn syscalls_cubin(sm_major: u32, sm_minor: u32) -> Option<&'static [u8]> {
    pick(SYSCALL_CUBINS, sm_major, sm_minor)
}

fn pick(
    table: &'static [(u32, u32, &'static [u8])],
    sm_major: u32,
    sm_minor: u32,
) -> Option<&'static [u8]> {
    table
        .iter()
        .filter(|(ma, mi, _)| *ma == sm_major && *mi <= sm_minor)
        .max_by_key(|(_, mi, _)| *mi)
        .map(|(_, _, c)| *c)
}

/// Name of the copy kernel in [`COPY_CUBINS`].
pub const COPY_KERNEL: &str = "tg_copy";

/// Threads per block of the copy kernel (its `__launch_bounds__`).
pub const COPY_BLOCK: u32 = 256;

/// Bytes one block of the copy kernel copies per chunk (`TG_COPY_CHUNK` in copy.cu).
pub const COPY_CHUNK: u64 = 4096;

/// The copy cubin for an SM version: the exact version, else the newest one of the same major
/// version that is not newer than the device (SASS runs on later minor versions of its major).
pub fn copy_cubin(sm_major: u32, sm_minor: u32) -> Option<&'static [u8]> {
    pick(COPY_CUBINS, sm_major, sm_minor)
}

/// Grid (blocks) for copying `n` bytes: one block per 4 KiB chunk, at least one, at most the
/// largest x dimension of a grid (2^31 - 1; the kernel's chunk loop then covers the rest).
pub fn copy_grid(n: u64) -> u32 {
    n.div_ceil(COPY_CHUNK).clamp(1, i32::MAX as u64) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cubin_choice_follows_sass_compatibility() {
        assert!(std::ptr::eq(copy_cubin(8, 7).unwrap(), COPY_CUBINS[2].2));
        assert!(std::ptr::eq(copy_cubin(9, 0).unwrap(), COPY_CUBINS[4].2));
        // sm_88 (hypothetical) runs the sm_87 code; sm_70 has none.
        assert!(std::ptr::eq(copy_cubin(8, 8).unwrap(), COPY_CUBINS[2].2));
        assert!(copy_cubin(7, 0).is_none());
        assert!(copy_cubin(11, 0).is_none());
    }

    #[test]
    fn grid_is_one_block_per_chunk_bounded_and_never_empty() {
        assert_eq!(copy_grid(0), 1);
        assert_eq!(copy_grid(1), 1);
        assert_eq!(copy_grid(4096), 1);
        assert_eq!(copy_grid(4097), 2);
        assert_eq!(copy_grid(1 << 30), 1 << 18);
        assert_eq!(copy_grid(u64::MAX), i32::MAX as u32);
    }
}
