//! The input bytes drive a sequence of C API calls on emulated devices (see
//! `harness::capi_sequence`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    tegragpu_fuzz::harness::capi_sequence(data);
});
