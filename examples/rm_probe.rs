//! Bring-up probe for the RM backend (the same program as `src/bin/tegragpu-rmprobe.rs`; an
//! example so that cargo builds it without a `[[bin]]` entry). Run on a machine with an NVIDIA
//! GPU and the open kernel modules: `cargo run --release --example rm_probe [-- --fault]`.

include!("../src/bin/tegragpu-rmprobe.rs");
