//! Arbitrary bytes → `tg_module_load` on the emulated Orin, then every kernel and global of the
//! module through the C API (see `harness::module_load`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    tegragpu_fuzz::harness::module_load(data);
});
