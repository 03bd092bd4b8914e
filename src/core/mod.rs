//! Backend-independent runtime: [`Device`], [`Buffer`], [`Module`]/[`Kernel`], [`Queue`],
//! [`Signal`], [`CmdBuf`] (command buffers replayed on queues). This is the Rust API; `crate::capi` wraps it for C.
//!
//! Thread safety: `Device`, `Buffer`, `Module`, `Kernel` and `Signal` are `Send + Sync` and may be
//! used from any thread. A `Queue` records commands through `&mut self`: one thread at a time
//! (the C API wraps each queue in an uncontended lock).

mod buffer;
mod cmdbuf;
mod device;
mod enumerate;
mod module;
mod peer;
mod properties;
mod queue;
mod signal;
pub mod syscalls;
mod texture;
mod vmm;
mod wcmem;

pub use crate::hw::texture::{AddressMode, TexDesc, TexFormat, TexLayout};
pub use buffer::Buffer;
pub use cmdbuf::CmdBuf;
pub use device::{device_from_env, Device, FaultReport};
pub use enumerate::{device_count, list_devices, list_devices_for, DeviceListing};
pub use module::{
    carveout_shared_per_sm, max_blocks_per_sm, max_threads, occupancy, static_shared_need, Kernel,
    KernelAttributes, ManagedPlace, ManagedVariable, Module, ParamAttr, PlaceManaged,
};
pub use properties::DeviceAttribute;
/// For the curated API (`crate::api`): per-buffer use tracking waits on queue timelines.
pub(crate) use queue::{wait_fence, QueueTrack};
pub use queue::{
    CopySplit, LaunchConfig, Queue, QueueConfig, QueueKind, QueuePoint, ValueCond, STAGING_CHUNK,
};
pub use signal::Signal;
pub use texture::{Texture, TEXTURE_POOL_ENTRIES};
pub use vmm::{CpuView, Mapping, PhysicalMemory, VaRange, VMM_GRANULE};

pub use crate::backend::rm::CopyEngineInfo;
pub use crate::backend::{BackendKind, CopyEngine, DeviceInfo, MemFlags, PeerInfo, PeerLink};

/// Default timeout for internal waits (ring space, synchronize without an explicit timeout).
pub const DEFAULT_TIMEOUT_NS: u64 = 10_000_000_000;
