//! nvgpu channels: one usermode-submit channel per [`NvgpuChannel`], in the device's TSG and
//! subcontext (§4.2).
//!
//! Creation: `OPEN_CHANNEL(runlist_id=-1)` → AS `BIND_CHANNEL` → TSG `BIND_CHANNEL_EX(veid)` →
//! `WDT(DISABLE)` → `SET_TIMEOUT_EX` → GPFIFO (`entries × 8` bytes, ≥ 4 KiB) and USERD (4 KiB) nvmap buffers,
//! zeroed, write-combined, CPU-mapped (the kernel GPU-maps the GPFIFO itself; USERD is not
//! GPU-mapped) → `SETUP_BIND(USERMODE_SUPPORT | DETERMINISTIC)` → `GET_USER_SYNCPOINT` →
//! `ALLOC_OBJ_CTX(compute_class | dma_copy_class)` → `SET_ERROR_NOTIFIER` with a 4 KiB buffer.
//! The three buffers' dma-buf fds are closed as soon as SETUP_BIND / SET_ERROR_NOTIFIER has
//! taken the kernel's own references, so a live channel holds one fd (the channel's).
//! Dropping the channel closes the channel fd first (the kernel unbinds it and drops its
//! references), then frees the three buffers.

use std::os::fd::RawFd;
use std::sync::Arc;

use super::{Device, NvBuf, PAGE_SIZE};
use crate::backend::{Channel, ChannelError, ChannelRaw, Engine};
use crate::error::{Error, Result};
use crate::log::debug;
use crate::sys::nvgpu::*;
use crate::sys::nvmap::NVMAP_HANDLE_WRITE_COMBINE;

/// Largest ring accepted when the driver does not report `max_gpfifo_entries` (2^28, the
/// header's documented maximum).
pub const MAX_GPFIFO_ENTRIES: u32 = 1 << 28;
/// Subchannel the compute class is bound to.
pub const SUBCHANNEL_COMPUTE: u32 = 1;
/// Subchannel the copy class is bound to.
pub const SUBCHANNEL_COPY: u32 = 4;

/// The environment variable that sets each channel's context-switch timeout limit (ms).
pub const CTXSW_TIMEOUT_ENV: &str = "TEGRAGPU_NVGPU_CTXSW_TIMEOUT_MS";

/// The context-switch timeout limit given to every channel: `TEGRAGPU_NVGPU_CTXSW_TIMEOUT_MS`
/// (the driver's own default is 3,000), else `u32::MAX` (about 49 days: no limit in practice).
pub fn ctxsw_timeout_ms() -> u32 {
    std::env::var(CTXSW_TIMEOUT_ENV)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(u32::MAX)
}

/// The user syncpoint the kernel allocated for a channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UserSyncpoint {
    /// GPU VA of the syncpoint's RW shim page.
    pub gpu_va: u64,
    pub id: u32,
    /// The syncpoint value when it was queried.
    pub value: u32,
}

/// One usermode channel. Holds the device alive.
pub struct NvgpuChannel {
    dev: Arc<Device>,
    fd: RawFd,
    gpfifo: Option<NvBuf>,
    userd: Option<NvBuf>,
    notifier: Option<NvBuf>,
    raw: Option<ChannelRaw>,
    syncpoint: Option<UserSyncpoint>,
}

impl std::fmt::Debug for NvgpuChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NvgpuChannel")
            .field("fd", &self.fd)
            .field("raw", &self.raw)
            .finish()
    }
}

impl NvgpuChannel {
    /// Validates `entries` and creates the channel. Partial state is torn down on failure.
    /// `cilp`: ask for CILP compute preemption for a compute channel's context
    /// (`NVGPU_ALLOC_OBJ_FLAGS_CILP`, see [`super::pool`]). `ctxsw_timeout_ms`: the channel's
    /// context-switch timeout limit (SET_TIMEOUT_EX, see [`ctxsw_timeout_ms`]).
    pub(crate) fn create(
        dev: Arc<Device>,
        engine: Engine,
        entries: u32,
        cilp: bool,
        ctxsw_timeout_ms: u32,
    ) -> Result<NvgpuChannel> {
        let max = match dev.chars.max_gpfifo_entries {
            0 => MAX_GPFIFO_ENTRIES,
            m => m.min(MAX_GPFIFO_ENTRIES),
        };
        if entries < 2 || !entries.is_power_of_two() || entries > max {
            return Err(Error::invalid(format!(
                "create_channel: entries={entries} must be a power of two in [2, {max}]"
            )));
        }
        let (class, subchannel) = match engine {
            Engine::Compute => (dev.chars.compute_class, SUBCHANNEL_COMPUTE),
            Engine::Copy => (dev.chars.dma_copy_class, SUBCHANNEL_COPY),
        };
        if class == 0 {
            return Err(Error::new(
                crate::error::Status::NotSupported,
                format!("create_channel: the driver reports no class for {engine:?}"),
            ));
        }
        let mut ch = NvgpuChannel {
            dev,
            fd: -1,
            gpfifo: None,
            userd: None,
            notifier: None,
            raw: None,
            syncpoint: None,
        };
        let obj_flags = if cilp && engine == Engine::Compute {
            NVGPU_ALLOC_OBJ_FLAGS_CILP
        } else {
            0
        };
        ch.build(entries, class, subchannel, obj_flags, ctxsw_timeout_ms)?;
        Ok(ch)
    }

    fn build(
        &mut self,
        entries: u32,
        class: u32,
        subchannel: u32,
        obj_flags: u32,
        limit: u32,
    ) -> Result<()> {
        let dev = self.dev.clone();
        // OPEN_CHANNEL.
        let mut oc = nvgpu_gpu_open_channel_args::with_runlist_id(-1);
        dev.ioctl(dev.ctrl_fd, NVGPU_GPU_IOCTL_OPEN_CHANNEL, &mut oc, || {
            "NVGPU_GPU_IOCTL_OPEN_CHANNEL(runlist_id=-1)".to_string()
        })?;
        self.fd = oc.channel_fd;
        let fd = self.fd;
        debug!("channel fd {fd}: class {class:#x} on subchannel {subchannel}, {entries} GPFIFO entries");
        // AS bind.
        let mut ab = nvgpu_as_bind_channel_args {
            channel_fd: fd as u32,
        };
        dev.ioctl(dev.as_fd, NVGPU_AS_IOCTL_BIND_CHANNEL, &mut ab, || {
            format!("NVGPU_AS_IOCTL_BIND_CHANNEL(channel_fd={fd})")
        })?;
        // TSG bind.
        let veid = dev.veid;
        let mut tb = nvgpu_tsg_bind_channel_ex_args {
            channel_fd: fd,
            subcontext_id: veid,
            reserved: [0; 16],
        };
        dev.ioctl(dev.tsg_fd, NVGPU_TSG_IOCTL_BIND_CHANNEL_EX, &mut tb, || {
            format!("NVGPU_TSG_IOCTL_BIND_CHANNEL_EX(channel_fd={fd}, subcontext_id={veid})")
        })?;
        // Watchdog off (required for DETERMINISTIC).
        let mut w = nvgpu_channel_wdt_args {
            wdt_status: NVGPU_IOCTL_CHANNEL_DISABLE_WDT,
            timeout_ms: 0,
        };
        dev.ioctl(fd, NVGPU_IOCTL_CHANNEL_WDT, &mut w, || {
            format!("NVGPU_IOCTL_CHANNEL_WDT(channel_fd={fd}, wdt_status=DISABLE)")
        })?;
        // The context-switch timeout budget. For a usermode-submit channel every 100-ms
        // context-switch timeout while a switch is pending (another context wants the GPU and a
        // kernel of ours cannot be switched out) adds to a total that never resets over the
        // channel's life; past the limit (3,000 ms at open) the driver stops the whole TSG with
        // error 8 (common/fifo/channel.c:nvgpu_channel_update_and_check_ctxsw_timeout,
        // common/rc/rc.c:nvgpu_rc_ctxsw_timeout). Pooled channels live as long as the device,
        // so the limit is raised (SET_TIMEOUT_EX takes any value:
        // os/linux/ioctl_channel.c), to `TEGRAGPU_NVGPU_CTXSW_TIMEOUT_MS` (default: no limit).
        let mut t = nvgpu_set_timeout_ex_args {
            timeout: limit,
            flags: 1 << NVGPU_TIMEOUT_FLAG_DISABLE_DUMP,
        };
        dev.ioctl(fd, NVGPU_IOCTL_CHANNEL_SET_TIMEOUT_EX, &mut t, || {
            format!("NVGPU_IOCTL_CHANNEL_SET_TIMEOUT_EX(channel_fd={fd}, timeout={limit} ms)")
        })?;
        // Ring and USERD.
        let ring_bytes = (u64::from(entries) * 8).max(PAGE_SIZE).div_ceil(PAGE_SIZE) * PAGE_SIZE;
        let g = dev.create_buffer(
            ring_bytes,
            NVMAP_HANDLE_WRITE_COMBINE,
            true,
            false,
            false,
            true,
        )?;
        let gpfifo_fd = g.fd;
        let gpfifo_cpu = g.cpu;
        self.gpfifo = Some(g);
        let u = dev.create_buffer(
            PAGE_SIZE,
            NVMAP_HANDLE_WRITE_COMBINE,
            true,
            false,
            false,
            true,
        )?;
        let userd_fd = u.fd;
        let userd_cpu = u.cpu;
        self.userd = Some(u);
        // The kernel does not initialise user USERD; zero both ourselves (§4.4).
        // SAFETY: both are fresh writable mappings of the given sizes.
        unsafe {
            std::ptr::write_bytes(gpfifo_cpu, 0, ring_bytes as usize);
            std::ptr::write_bytes(userd_cpu, 0, PAGE_SIZE as usize);
        }
        // SETUP_BIND.
        let flags = NVGPU_CHANNEL_SETUP_BIND_FLAGS_USERMODE_SUPPORT
            | NVGPU_CHANNEL_SETUP_BIND_FLAGS_DETERMINISTIC;
        let mut sb = nvgpu_channel_setup_bind_args {
            num_gpfifo_entries: entries,
            flags,
            userd_dmabuf_fd: userd_fd,
            gpfifo_dmabuf_fd: gpfifo_fd,
            ..Default::default()
        };
        dev.ioctl(fd, NVGPU_IOCTL_CHANNEL_SETUP_BIND, &mut sb, || {
            format!(
                "NVGPU_IOCTL_CHANNEL_SETUP_BIND(channel_fd={fd}, num_gpfifo_entries={entries}, flags={flags:#x}, userd_dmabuf_fd={userd_fd}, gpfifo_dmabuf_fd={gpfifo_fd}, gpfifo_size={ring_bytes:#x})"
            )
        })?;
        let token = sb.work_submit_token;
        debug!(
            "channel fd {fd}: SETUP_BIND(USERMODE|DETERMINISTIC) ok, work-submit token {token:#x}, \
             GPFIFO ring at {gpfifo_cpu:p} ({ring_bytes:#x} bytes), USERD at {userd_cpu:p}"
        );
        // The channel now holds its own dma-buf references to the ring and USERD
        // (SRC os/linux/linux-channel.c:nvgpu_usermode_buf_from_dmabuf, put at channel close).
        for b in [self.gpfifo.as_mut(), self.userd.as_mut()]
            .into_iter()
            .flatten()
        {
            dev.close_dmabuf_fd(b)?;
        }
        // User syncpoint.
        let mut us = nvgpu_get_user_syncpoint_args::default();
        dev.ioctl(fd, NVGPU_IOCTL_CHANNEL_GET_USER_SYNCPOINT, &mut us, || {
            format!("NVGPU_IOCTL_CHANNEL_GET_USER_SYNCPOINT(channel_fd={fd})")
        })?;
        debug!(
            "channel fd {fd}: user syncpoint {} at GPU VA {:#x}",
            us.syncpoint_id, us.gpu_va
        );
        self.syncpoint = Some(UserSyncpoint {
            gpu_va: us.gpu_va,
            id: us.syncpoint_id,
            value: us.syncpoint_max,
        });
        // Engine object.
        let mut oc = nvgpu_alloc_obj_ctx_args {
            class_num: class,
            flags: obj_flags,
            obj_id: 0,
        };
        dev.ioctl(fd, NVGPU_IOCTL_CHANNEL_ALLOC_OBJ_CTX, &mut oc, || {
            format!(
                "NVGPU_IOCTL_CHANNEL_ALLOC_OBJ_CTX(channel_fd={fd}, class_num={class:#x}, flags={obj_flags:#x})"
            )
        })?;
        // Error notifier.
        let n = dev.create_buffer(
            PAGE_SIZE,
            NVMAP_HANDLE_WRITE_COMBINE,
            true,
            false,
            false,
            true,
        )?;
        let nfd = n.fd;
        // SAFETY: fresh writable mapping of PAGE_SIZE bytes.
        unsafe { std::ptr::write_bytes(n.cpu, 0, PAGE_SIZE as usize) };
        self.notifier = Some(n);
        let mut en = nvgpu_set_error_notifier {
            offset: 0,
            size: std::mem::size_of::<nvgpu_notification>() as u64,
            mem: nfd as u32,
            padding: 0,
        };
        dev.ioctl(fd, NVGPU_IOCTL_CHANNEL_SET_ERROR_NOTIFIER, &mut en, || {
            format!("NVGPU_IOCTL_CHANNEL_SET_ERROR_NOTIFIER(channel_fd={fd}, mem={nfd}, offset=0)")
        })?;
        // The channel holds the notifier's dma-buf until it closes
        // (SRC os/linux/ioctl_channel.c:gk20a_init_error_notifier).
        if let Some(n) = self.notifier.as_mut() {
            dev.close_dmabuf_fd(n)?;
        }
        // SAFETY: the usermode page is NVGPU_USERMODE_MAP_SIZE bytes; the doorbell is inside it.
        let doorbell = unsafe { dev.usermode.add(NVGPU_USERMODE_DOORBELL_OFFSET) }.cast::<u32>();
        debug!("channel fd {fd} ready: class {class:#x} bound, error notifier set, doorbell {doorbell:p}");
        self.raw = Some(ChannelRaw {
            gpfifo: gpfifo_cpu.cast::<u64>(),
            entries,
            userd: userd_cpu.cast::<u32>(),
            doorbell,
            token,
            class,
            subchannel,
        });
        Ok(())
    }

    /// The user syncpoint from GET_USER_SYNCPOINT.
    pub fn syncpoint(&self) -> Option<UserSyncpoint> {
        self.syncpoint
    }

    /// The channel fd (for diagnostics).
    pub fn fd(&self) -> RawFd {
        self.fd
    }

    /// The notifier record as the kernel last wrote it.
    pub fn notification(&self) -> Option<nvgpu_notification> {
        let n = self.notifier.as_ref()?;
        let p = n.cpu.cast::<nvgpu_notification>();
        // The kernel writes the time stamp and info32, then `nvgpu_wmb()`, then status
        // (os/linux/linux-channel.c:nvgpu_set_err_notifier_locked). Read status first and the
        // record after a read barrier (aarch64: `dmb oshld`), so that a record whose status says
        // "error" carries that error's code, never an older one.
        // SAFETY: the notifier mapping is PAGE_SIZE bytes and lives as long as self; the kernel
        // writes it concurrently, so read it volatile.
        let status = unsafe { std::ptr::read_volatile(std::ptr::addr_of!((*p).status)) };
        crate::hw::barrier::after_gpu_value();
        // SAFETY: as above.
        let mut rec = unsafe { std::ptr::read_volatile(p) };
        if status != NVGPU_NOTIFICATION_STATUS_ERROR {
            // Not posted when first read: report the record as not posted (its other fields may
            // be mid-update).
            rec.status = status;
        }
        Some(rec)
    }

    fn timed_out(&self) -> bool {
        if self.fd < 0 {
            return false;
        }
        let mut p = nvgpu_get_param_args::default();
        let fd = self.fd;
        self.dev
            .ioctl(fd, NVGPU_IOCTL_CHANNEL_GET_TIMEDOUT, &mut p, || {
                format!("NVGPU_IOCTL_CHANNEL_GET_TIMEDOUT(channel_fd={fd})")
            })
            .is_ok()
            && p.value != 0
    }
}

impl Channel for NvgpuChannel {
    fn raw(&self) -> ChannelRaw {
        // `raw` is always set for a channel handed out by `create`.
        self.raw.unwrap_or(ChannelRaw {
            gpfifo: std::ptr::null_mut(),
            entries: 0,
            userd: std::ptr::null_mut(),
            doorbell: std::ptr::null_mut(),
            token: 0,
            class: 0,
            subchannel: 0,
        })
    }

    fn error(&self) -> Option<ChannelError> {
        let token = self.raw.map(|r| r.token);
        let address_for = |code: u32| {
            let token = token?;
            self.dev
                .sys
                .fault_log()
                .into_iter()
                .rev()
                .find(|f| f.token == token && f.code == code)
                .and_then(|f| f.address)
        };
        let from_notifier = || {
            let n = self.notification()?;
            if n.status != NVGPU_NOTIFICATION_STATUS_ERROR {
                return None;
            }
            let code = n.info32;
            let address = address_for(code);
            let mut what = format!("nvgpu channel error {code} ({})", notifier_error_name(code));
            if let Some(a) = address {
                what.push_str(&format!(" at GPU VA {a:#x}"));
            }
            Some(ChannelError {
                code,
                what,
                address,
            })
        };
        if let Some(e) = from_notifier() {
            return Some(e);
        }
        if self.timed_out() {
            // The channel was found dead between the two reads: the driver's recovery may have
            // marked it before its notifier record was visible here. Read the record again
            // before reporting a death without a cause.
            if let Some(e) = from_notifier() {
                return Some(e);
            }
            return Some(ChannelError {
                code: 0,
                what: format!(
                    "NVGPU_IOCTL_CHANNEL_GET_TIMEDOUT(channel_fd={}) reports the channel timed out (no notifier record)",
                    self.fd
                ),
                address: None,
            });
        }
        None
    }
}

impl Drop for NvgpuChannel {
    fn drop(&mut self) {
        // §6 step 2: closing the channel fd unbinds it and releases the kernel's references to
        // the ring, USERD and notifier; then our own buffer references go.
        if self.fd >= 0 {
            let _ = self.dev.sys.close(self.fd);
            self.fd = -1;
        }
        for b in [self.notifier.take(), self.userd.take(), self.gpfifo.take()]
            .into_iter()
            .flatten()
        {
            let mut b = b;
            let _ = self.dev.release_buffer(&mut b);
        }
    }
}
