//! GPU programming layer: method encoding, pushbuffers, GPFIFO ring, QMDs, architecture table.
//!
//! Everything here is pure computation over caller-provided buffers: no system calls and no
//! heap allocation on the per-launch paths (error paths format a message). The only exception
//! is [`gpfifo::GpRing::push`] when the ring is full: it reads the clock and sleeps briefly.

pub mod arch;
pub mod barrier;
pub mod cbank0;
pub mod gpfifo;
pub mod local_mem;
pub mod method;
pub mod pushbuf;
pub mod qmd;
pub mod texture;

pub use arch::{arch_for_compute_class, arch_for_device, ArchInfo, QmdVersion};
pub use cbank0::{build_cbank0, Cbank0Params};
pub use gpfifo::{gp_entry, GpRing};
pub use pushbuf::PushBuf;
pub use qmd::{
    encode_qmd, encode_v03, encode_v04, encode_v05, smem_config, LaunchDesc, QmdRelease, SmemConfig,
};
