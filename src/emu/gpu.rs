//! The emulated GPU: host, compute and copy engines running channel work on a thread.
//!
//! API contract used by the emulated kernel (`emu::kernel`). The implementation below is a
//! placeholder that executes nothing; the real model replaces it without changing this API.

use super::hwif::{GpuFault, HostPtr, HwChannel};
use parking_lot::Mutex;
use std::sync::Arc;

/// One emulated GPU. Runs asynchronously on its own thread once created.
pub struct Gpu {
    channels: Mutex<Vec<Arc<HwChannel>>>,
    doorbells: Mutex<Vec<HostPtr>>,
    faults: Mutex<Vec<GpuFault>>,
}

impl Gpu {
    /// Create the GPU and start its thread.
    pub fn new() -> Arc<Gpu> {
        Arc::new(Gpu { channels: Mutex::new(Vec::new()), doorbells: Mutex::new(Vec::new()), faults: Mutex::new(Vec::new()) })
    }
    /// Watch a 64 KiB usermode page: a store of a channel's token at +0x90 makes Host service it.
    pub fn add_doorbell(&self, page: HostPtr) {
        self.doorbells.lock().push(page);
    }
    /// Stop watching a usermode page (before it is unmapped).
    pub fn remove_doorbell(&self, page: HostPtr) {
        self.doorbells.lock().retain(|p| *p != page);
    }
    /// Make a channel runnable (after SETUP_BIND).
    pub fn attach_channel(&self, ch: Arc<HwChannel>) {
        self.channels.lock().push(ch);
    }
    /// Remove a channel; returns once the GPU thread no longer touches it.
    pub fn detach_channel(&self, token: u32) {
        self.channels.lock().retain(|c| c.token != token);
    }
    /// Faults raised so far, oldest first.
    pub fn faults(&self) -> Vec<GpuFault> {
        self.faults.lock().clone()
    }
    /// Stop the GPU thread (idempotent).
    pub fn shutdown(&self) {}
}
