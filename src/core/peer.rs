//! Peer access between devices: a device's queues and kernels reading and writing the buffers
//! of another device (desktop GPUs over NVLink or PCIe, where the driver allows it).
//!
//! `a.enable_peer_access(&b)` lets `a` use `b`'s memory: every live buffer of `b` is mapped into
//! `a`'s GPU at its own address, and so is every buffer `b` allocates later (at allocation,
//! never while recording). Copies on `a`'s queues then accept buffers of `b`
//! ([`super::Queue::copy`]) and kernels on `a` may take `b`'s buffer addresses. Freeing a
//! buffer of `b` waits for the queued work of `a` as well as of `b`, and removes the mappings
//! with the buffer. The access stays enabled for the lives of both devices; either device can
//! be dropped first.
//!
//! The device's signals live in host memory that is mapped the same way, so a queue of `a` can
//! also wait on a signal of `b` ([`super::Queue::wait`]): one GPU waits on another's work
//! without the CPU (`cuStreamWaitEvent` on an event of another device). Releases stay on the
//! signal's own device.
//!
//! Enabling is explicit, not made on first use: it maps every buffer of the peer (a system
//! call each), which a copy being recorded must not wait for, and a kernel's pointer arguments
//! do not say which device's memory they reach.

use super::buffer::Buffer;
use super::device::{Device, DeviceInner};
use super::queue::{fence_now, fence_passed, Fence};
use super::signal::Signal;
use crate::backend::{Allocation, BackendKind, PeerInfo};
use crate::error::{Error, Result, Status};
use parking_lot::{Mutex, RwLock};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

/// One direction of peer access as a device records it.
struct Link {
    dev: Weak<DeviceInner>,
    atomics: bool,
}

/// A live buffer of the device, as peer mapping needs it.
struct BufEntry {
    va: u64,
    size: u64,
    /// Host memory (`cpu_cached`): a peer that cannot map it is told at its first use of the
    /// buffer instead of failing the whole enable (video memory must map).
    host: bool,
    /// Accessors this buffer could not be mapped into, with the error.
    unmapped: Vec<(Weak<DeviceInner>, String)>,
}

impl BufEntry {
    fn alloc(&self, id: u64) -> Allocation {
        Allocation {
            gpu_va: self.va,
            cpu: std::ptr::null_mut(),
            size: self.size,
            id,
        }
    }
}

/// The other side: the devices this device's memory is mapped into, and its buffers.
#[derive(Default)]
struct Shared {
    /// Devices with access to this device's memory.
    accessors: Vec<Link>,
    /// This device's live buffers by allocation id, mapped into every accessor. Kept only on
    /// backends with peer access.
    buffers: HashMap<u64, BufEntry>,
}

/// A device's peer-access state (`DeviceInner::peer`).
#[derive(Default)]
pub(crate) struct PeerState {
    /// Devices whose memory this device can access.
    access: RwLock<Vec<Link>>,
    shared: Mutex<Shared>,
    /// Some device ever had access to this device's memory (frees then fence its queues too).
    accessed: AtomicBool,
    /// Some host buffer could not be mapped into an accessor (copies then look it up).
    some_unmapped: AtomicBool,
}

impl Device {
    /// The same device (not merely the same GPU).
    pub fn is(&self, other: &Device) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Whether this device can access `peer`'s memory, with the link and, when it cannot, the
    /// reason (naming both GPUs and what the driver reported). Asks the driver; not for the
    /// recording path. Access still has to be enabled ([`Device::enable_peer_access`]).
    pub fn peer_info(&self, peer: &Device) -> Result<PeerInfo> {
        if self.is(peer) {
            return Ok(PeerInfo::refused(format!(
                "{} and peer are the same device (its own memory needs no peer access)",
                self.backend().label()
            )));
        }
        self.backend().peer_info(peer.backend())
    }

    /// Whether this device can access `peer`'s memory once peer access is enabled
    /// (`cuDeviceCanAccessPeer`). [`Device::peer_info`] says why not.
    pub fn can_access_peer(&self, peer: &Device) -> Result<bool> {
        Ok(self.peer_info(peer)?.can_access)
    }

    /// Whether [`Device::enable_peer_access`] succeeded for `peer`.
    pub fn peer_access_enabled(&self, peer: &Device) -> bool {
        let p = Arc::as_ptr(&peer.inner);
        self.inner
            .peer
            .access
            .read()
            .iter()
            .any(|l| std::ptr::eq(l.dev.as_ptr(), p))
    }

    /// Let this device's queues and kernels read and write `peer`'s memory
    /// (`cuCtxEnablePeerAccess`): maps every buffer of `peer` into this device's GPU, now and
    /// as `peer` allocates more. Enabling an enabled pair does nothing. Refused, with the
    /// reason naming both GPUs, where the driver reports no peer path (`NotSupported`), for a
    /// device and itself (`InvalidArgument`), and on backends without peer access (nvgpu).
    pub fn enable_peer_access(&self, peer: &Device) -> Result<()> {
        const CALL: &str = "tg_device_enable_peer_access";
        if self.is(peer) {
            return Err(Error::invalid(format!(
                "{CALL}: dev and peer are the same device ({}); its own memory needs no peer access",
                self.backend().label()
            )));
        }
        self.check_usable()?;
        peer.check_usable()?;
        if self.peer_access_enabled(peer) {
            return Ok(());
        }
        let info = self
            .backend()
            .enable_peer(peer.backend())
            .map_err(|mut e| {
                if !e.message.starts_with(CALL) {
                    e.message = format!("{CALL}: {}", e.message);
                }
                e
            })?;
        {
            // Under the peer's lock: a buffer it allocates meanwhile sees this device as an
            // accessor only after the existing ones are mapped.
            let mut sh = peer.inner.peer.shared.lock();
            let mut done: Vec<Allocation> = Vec::new();
            let mut host_failed: Vec<(u64, String)> = Vec::new();
            for (&id, b) in sh.buffers.iter() {
                let a = b.alloc(id);
                match peer.backend().map_peer(&a, self.backend(), info.atomics) {
                    Ok(()) => done.push(a),
                    Err(e) if b.host => host_failed.push((id, e.message)),
                    Err(mut e) => {
                        for d in &done {
                            let _ = peer.backend().unmap_peer(d, self.backend());
                        }
                        e.message = format!(
                            "{CALL}: {} (buffer at {:#x}, {} bytes; {} link)",
                            e.message,
                            b.va,
                            b.size,
                            info.link.name()
                        );
                        return Err(e);
                    }
                }
            }
            for (id, why) in host_failed {
                crate::log::info!(
                    "{CALL}: a host buffer of {} stays unmapped in {} (copies with it there are refused): {why}",
                    peer.backend().label(),
                    self.backend().label()
                );
                if let Some(b) = sh.buffers.get_mut(&id) {
                    b.unmapped.push((Arc::downgrade(&self.inner), why));
                }
                peer.inner.peer.some_unmapped.store(true, Ordering::Release);
            }
            sh.accessors.retain(|l| l.dev.strong_count() > 0);
            sh.accessors.push(Link {
                dev: Arc::downgrade(&self.inner),
                atomics: info.atomics,
            });
            peer.inner.peer.accessed.store(true, Ordering::Release);
            crate::log::debug!(
                "peer access {} -> {}: {} ({} buffers mapped)",
                self.backend().label(),
                peer.backend().label(),
                info.summary(),
                done.len()
            );
        }
        let mut acc = self.inner.peer.access.write();
        acc.retain(|l| l.dev.strong_count() > 0);
        acc.push(Link {
            dev: Arc::downgrade(&peer.inner),
            atomics: info.atomics,
        });
        Ok(())
    }

    /// A new buffer of this device: recorded for later peers, and mapped into the devices that
    /// have access to this device's memory. On an error nothing stays mapped.
    /// `host`: host memory (`cpu_cached`), whose mapping into a peer may fail without failing
    /// the allocation.
    pub(crate) fn peer_add_buffer(&self, a: &Allocation, host: bool) -> Result<()> {
        if self.inner.info.backend == BackendKind::Nvgpu {
            return Ok(());
        }
        // Declared before the guard, so dropped after it: the last reference to an accessor
        // taken here must not run its drop under this lock.
        let mut done: Vec<Device> = Vec::new();
        let mut sh = self.inner.peer.shared.lock();
        let mut unmapped = Vec::new();
        for l in &sh.accessors {
            let Some(inner) = l.dev.upgrade() else {
                continue;
            };
            let acc = Device { inner };
            match self.backend().map_peer(a, acc.backend(), l.atomics) {
                Ok(()) => done.push(acc),
                Err(e) if host => {
                    crate::log::info!(
                        "a new host buffer of {} stays unmapped in {} (copies with it there are refused): {}",
                        self.backend().label(),
                        acc.backend().label(),
                        e.message
                    );
                    unmapped.push((Arc::downgrade(&acc.inner), e.message));
                    self.inner.peer.some_unmapped.store(true, Ordering::Release);
                    done.push(acc);
                }
                Err(mut e) => {
                    // Video memory (no host buffer gets here): every earlier accessor mapped it.
                    for d in &done {
                        let _ = self.backend().unmap_peer(a, d.backend());
                    }
                    e.message = format!(
                        "mapping the new buffer into {}, which has peer access to this device: {}",
                        acc.backend().label(),
                        e.message
                    );
                    done.push(acc);
                    drop(sh);
                    return Err(e);
                }
            }
        }
        sh.buffers.insert(
            a.id,
            BufEntry {
                va: a.gpu_va,
                size: a.size,
                host,
                unmapped,
            },
        );
        Ok(())
    }

    /// A buffer of this device is being released: no later peer maps it.
    pub(crate) fn peer_remove_buffer(&self, a: &Allocation) {
        if self.inner.info.backend == BackendKind::Nvgpu {
            return;
        }
        self.inner.peer.shared.lock().buffers.remove(&a.id);
    }

    /// Add, to a fence of this device's queues, the queues of the devices with access to this
    /// device's memory (their work may use what is being released).
    pub(crate) fn peer_extend_fence(&self, fence: &mut Fence) {
        if !self.inner.peer.accessed.load(Ordering::Acquire) {
            return;
        }
        let accessors: Vec<Device> = self
            .inner
            .peer
            .shared
            .lock()
            .accessors
            .iter()
            .filter_map(|l| l.dev.upgrade().map(|inner| Device { inner }))
            .collect();
        for d in accessors {
            fence.extend(fence_now(&d));
        }
    }

    /// `Ok` when this device may use `buf` (its own, or a peer's with access enabled); else the
    /// refusal naming both GPUs (`call`: the API call, `what`: the argument).
    pub(crate) fn check_buffer_access(&self, buf: &Buffer, call: &str, what: &str) -> Result<()> {
        let owner = buf.device();
        if self.is(owner) {
            return Ok(());
        }
        let desc = || {
            format!(
                "{what} (buffer at {:#x}, {} bytes)",
                buf.gpu_va(),
                buf.size()
            )
        };
        self.check_peer_memory(owner, buf.alloc_id(), call, what, &desc)
    }

    /// `Ok` when a queue of this device may wait on `sig` (its own signal, or a signal of a
    /// device it has peer access to: the signal's memory is mapped into this device's GPU like
    /// the peer's buffers); else the refusal naming both GPUs (`call`: the API call).
    pub(crate) fn check_signal_access(&self, sig: &Signal, call: &str) -> Result<()> {
        let owner = sig.device();
        if self.is(owner) {
            return Ok(());
        }
        let desc = || format!("signal (at {:#x})", sig.gpu_va());
        self.check_peer_memory(owner, sig.chunk_id(), call, "signal", &desc)
    }

    /// Whether this device may use allocation `alloc_id` of `owner` (another device): peer
    /// access enabled and the allocation mapped here. `desc` describes the argument for errors.
    fn check_peer_memory(
        &self,
        owner: &Device,
        alloc_id: u64,
        call: &str,
        what: &str,
        desc: &dyn Fn() -> String,
    ) -> Result<()> {
        if !self.peer_access_enabled(owner) {
            return Err(self.peer_refusal(owner, call, what, &desc()));
        }
        if owner.inner.peer.some_unmapped.load(Ordering::Acquire) {
            let me = Arc::as_ptr(&self.inner);
            let sh = owner.inner.peer.shared.lock();
            let why = sh.buffers.get(&alloc_id).and_then(|b| {
                b.unmapped
                    .iter()
                    .find(|(w, _)| std::ptr::eq(w.as_ptr(), me))
                    .map(|(_, why)| why.clone())
            });
            if let Some(why) = why {
                return Err(Error::new(
                    Status::NotSupported,
                    format!(
                        "{call}: {} in host memory of {} could not be mapped into {}: {why}",
                        desc(),
                        owner.backend().label(),
                        self.backend().label()
                    ),
                ));
            }
        }
        Ok(())
    }

    #[cold]
    fn peer_refusal(&self, owner: &Device, call: &str, what: &str, desc: &str) -> Error {
        let (me, them) = (self.backend().label(), owner.backend().label());
        let user = if call.starts_with("tg_cmdbuf") {
            "command buffer"
        } else {
            "queue"
        };
        let head = format!("{call}: {desc} belongs to {them}, not to the {user}'s device {me}");
        match self.peer_info(owner) {
            Ok(i) if i.can_access => Error::invalid(format!(
                "{head}; peer access from {me} to {them} is not enabled: call tg_device_enable_peer_access({user}'s device, {what}'s device) first ({})",
                i.summary()
            )),
            Ok(i) => Error::new(
                Status::NotSupported,
                format!("{head}, and it has no peer access to that memory: {}", i.reason),
            ),
            Err(e) => Error::new(
                e.status,
                format!("{head}; asking the driver about peer access failed: {}", e.message),
            ),
        }
    }
}

/// Wait, at most 10 s, until `f` has passed (the queues of other devices that may still use
/// memory a device frees as it is dropped).
pub(crate) fn wait_peer_fence(f: &Fence) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !fence_passed(f) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_micros(100));
    }
}

impl PeerState {
    /// Some device ever had access to this device's memory.
    pub(crate) fn was_accessed(&self) -> bool {
        self.accessed.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::MemFlags;
    use crate::core::QueueKind;

    const SEC: u64 = 1_000_000_000;

    /// What `enable_peer_access(accessor, owner)` records once the driver has agreed, without
    /// asking one (the emulated Orin has no peer path).
    fn link(accessor: &Device, owner: &Device) {
        owner.inner.peer.shared.lock().accessors.push(Link {
            dev: Arc::downgrade(&accessor.inner),
            atomics: false,
        });
        owner.inner.peer.accessed.store(true, Ordering::Release);
        accessor.inner.peer.access.write().push(Link {
            dev: Arc::downgrade(&owner.inner),
            atomics: false,
        });
    }

    /// A buffer of `a` freed while `b` (with access to `a`'s memory) has recorded work: `a`
    /// holds it through its own synchronize and releases it once `b`'s queue has completed
    /// that work. Without the link the same free is immediate.
    #[test]
    fn a_freed_buffer_waits_for_the_queues_of_devices_with_access() {
        for linked in [true, false] {
            let a = Device::open(Some("emu")).unwrap();
            let b = Device::open(Some("emu")).unwrap();
            if linked {
                link(&b, &a);
                assert!(b.peer_access_enabled(&a) && !a.peer_access_enabled(&b));
            }
            let mut qb = b.create_queue(QueueKind::Copy).unwrap();
            qb.synchronize(10 * SEC).unwrap();
            let s = b.create_signal(0).unwrap();
            let buf = a.alloc(1 << 20, MemFlags::default()).unwrap();
            assert_eq!(a.held_for_queued_work().0, 0, "linked {linked}");
            // Work on B that could use the buffer, recorded and not submitted.
            qb.signal(&s, 1).unwrap();
            drop(buf);
            let want = usize::from(linked);
            assert_eq!(
                a.held_for_queued_work().0,
                want,
                "linked {linked}: after the free"
            );
            a.synchronize(10 * SEC).unwrap();
            assert_eq!(
                a.held_for_queued_work().0,
                want,
                "linked {linked}: A's own queues are idle; B's recorded work still counts"
            );
            qb.synchronize(10 * SEC).unwrap();
            assert_eq!(s.value(), 1);
            assert_eq!(
                a.held_for_queued_work().0,
                0,
                "linked {linked}: B's queue has completed the work"
            );
        }
    }
}
