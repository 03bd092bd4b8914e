//! Fuzz targets for libtegragpu. The target bodies live in `harness.rs`, which
//! `tests/fuzz_smoke.rs` includes too, so the stable-toolchain CI test and the long cargo-fuzz
//! runs exercise the same code (see docs/fuzzing.md).

pub mod harness;
