//! Bring-up: opening the nodes, the address space, VA windows, TSG, subcontext and doorbell.

use std::ffi::CStr;
use std::os::fd::RawFd;
use std::sync::Arc;

use super::{
    os_err, Device, NvgpuBackend, CTRL_PATH, LOCAL_WINDOW, NVMAP_PATH, PAGE_SIZE, PROT_RW,
};
use super::{SHARED_WINDOW, VA_RANGE_END, VA_RANGE_START, WINDOW_SIZE};
use crate::backend::{BackendKind, DeviceInfo};
use crate::error::{Error, Result, Status};
use crate::log::debug;
use crate::os::Sys;
use crate::sys::nvgpu::*;
use crate::sys::nvmap::*;

fn meminfo_total() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = s.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kb.checked_mul(1024)
}

/// `open(path, O_RDWR|O_CLOEXEC)`, restarted when a signal interrupts it (EINTR; a driver's
/// open may sleep interruptibly, e.g. while the GPU powers on), a bounded number of times
/// like [`crate::os::ioctl_retrying`]. Other errors come back naming the call.
fn open_node(sys: &dyn Sys, path: &CStr) -> Result<RawFd> {
    let what = || format!("open({path:?}, O_RDWR|O_CLOEXEC)");
    let mut restarts = 0u32;
    loop {
        match sys.open(path, libc::O_RDWR | libc::O_CLOEXEC) {
            Ok(fd) => return Ok(fd),
            Err(libc::EINTR) if restarts < crate::os::IOCTL_EINTR_RETRIES => restarts += 1,
            Err(libc::EINTR) => {
                let mut e = os_err(what(), libc::EINTR);
                e.message
                    .push_str(&format!("; still EINTR after {restarts} restarts"));
                return Err(e);
            }
            Err(e) => return Err(os_err(what(), e)),
        }
    }
}

/// GET_CHARACTERISTICS through the control node alone, which is opened and closed again and
/// nothing else set up: what the device listing (`core::list_devices`) reports.
pub fn read_characteristics(sys: Arc<dyn Sys>) -> Result<nvgpu_gpu_characteristics> {
    let mut d = Device::new(sys.clone());
    d.ctrl_fd = open_node(&*sys, CTRL_PATH)?;
    let mut chars = nvgpu_gpu_characteristics::default();
    let mut gc = nvgpu_gpu_get_characteristics {
        gpu_characteristics_buf_size: NVGPU_GPU_CHARACTERISTICS_SIZE as u64,
        gpu_characteristics_buf_addr: &mut chars as *mut _ as u64,
    };
    d.ioctl(
        d.ctrl_fd,
        NVGPU_GPU_IOCTL_GET_CHARACTERISTICS,
        &mut gc,
        || {
            format!(
                "NVGPU_GPU_IOCTL_GET_CHARACTERISTICS(buf_size={NVGPU_GPU_CHARACTERISTICS_SIZE})"
            )
        },
    )?;
    // Dropping `d` closes the control node.
    Ok(chars)
}

impl NvgpuBackend {
    /// Opens the GPU through `sys` and brings up the address space, VA windows, TSG,
    /// subcontext, doorbell (§4.1–§4.2) and the channel pool (`TEGRAGPU_CHANNELS`, see
    /// [`super::pool`]). Fails with an error naming the call that failed.
    pub fn open(sys: Arc<dyn Sys>) -> Result<NvgpuBackend> {
        let (compute, copy) = crate::backend::pool::configured_counts(super::TSG_MAX_CHANNELS)?;
        Self::open_with_channels(sys, compute, copy)
    }

    /// [`open`](Self::open) with `compute` and `copy` channels made at open.
    pub fn open_with_channels(sys: Arc<dyn Sys>, compute: u32, copy: u32) -> Result<NvgpuBackend> {
        let allow_cilp = !std::env::var("TEGRAGPU_NVGPU_CILP").is_ok_and(|v| v == "0");
        let timeout = super::channel::ctxsw_timeout_ms();
        Self::open_configured(sys, compute, copy, allow_cilp, timeout)
    }

    /// [`open_with_channels`](Self::open_with_channels); `allow_cilp` false keeps the driver's
    /// wait-for-idle compute preemption even where CILP is offered (as `TEGRAGPU_NVGPU_CILP=0`);
    /// `ctxsw_timeout_ms` is every channel's context-switch timeout limit (as
    /// `TEGRAGPU_NVGPU_CTXSW_TIMEOUT_MS`).
    pub fn open_configured(
        sys: Arc<dyn Sys>,
        compute: u32,
        copy: u32,
        allow_cilp: bool,
        ctxsw_timeout_ms: u32,
    ) -> Result<NvgpuBackend> {
        if compute + copy > super::TSG_MAX_CHANNELS {
            return Err(Error::invalid(format!(
                "open: {compute} compute + {copy} copy channels exceed the {} one TSG holds",
                super::TSG_MAX_CHANNELS
            )));
        }
        let emulated = sys.is_emulated();
        let mut d = Device::new(sys.clone());
        d.ctrl_fd = open_node(&*sys, CTRL_PATH)?;
        d.nvmap_fd = open_node(&*sys, NVMAP_PATH)?;
        debug!(
            "opened {CTRL_PATH:?} (fd {}) and {NVMAP_PATH:?} (fd {}){}",
            d.ctrl_fd,
            d.nvmap_fd,
            if emulated {
                " of the emulated kernel"
            } else {
                ""
            }
        );

        // GET_CHARACTERISTICS.
        let mut chars = nvgpu_gpu_characteristics::default();
        let mut gc = nvgpu_gpu_get_characteristics {
            gpu_characteristics_buf_size: NVGPU_GPU_CHARACTERISTICS_SIZE as u64,
            gpu_characteristics_buf_addr: &mut chars as *mut _ as u64,
        };
        d.ioctl(d.ctrl_fd, NVGPU_GPU_IOCTL_GET_CHARACTERISTICS, &mut gc, || {
            format!("NVGPU_GPU_IOCTL_GET_CHARACTERISTICS(buf_size={NVGPU_GPU_CHARACTERISTICS_SIZE})")
        })?;
        if chars.compute_class == 0 || chars.gpfifo_class == 0 {
            return Err(Error::new(
                Status::UnsupportedDriver,
                format!(
                    "NVGPU_GPU_IOCTL_GET_CHARACTERISTICS reported no compute/gpfifo class (compute_class={:#x}, gpfifo_class={:#x}, buf_size={})",
                    chars.compute_class, chars.gpfifo_class, gc.gpu_characteristics_buf_size
                ),
            ));
        }
        if chars.flags & NVGPU_GPU_FLAGS_SUPPORT_USERMODE_SUBMIT == 0 {
            return Err(Error::new(
                Status::UnsupportedDriver,
                format!(
                    "nvgpu does not support usermode submit (characteristics flags={:#x})",
                    chars.flags
                ),
            ));
        }
        d.chars = chars;
        debug!(
            "GET_CHARACTERISTICS: {} arch {:#x} impl {:#x} sm_{}{}, compute class {:#x}, copy \
             class {:#x}, gpfifo class {:#x}, flags {:#x}, {} GPC(s), VA {} bits",
            chars.chipname_str(),
            chars.arch,
            chars.r#impl,
            chars.sm_arch_sm_version >> 8,
            chars.sm_arch_sm_version & 0xff,
            chars.compute_class,
            chars.dma_copy_class,
            chars.gpfifo_class,
            chars.flags,
            chars.num_gpc,
            chars.gpu_va_bit_count
        );

        // Optional queries: any error (ENOTTY on a driver without them) is tolerated.
        let mut nv = nvgpu_gpu_num_vsms::default();
        let num_vsms = d
            .ioctl(d.ctrl_fd, NVGPU_GPU_IOCTL_NUM_VSMS, &mut nv, || {
                "NVGPU_GPU_IOCTL_NUM_VSMS (optional)".to_string()
            })
            .ok()
            .map(|_| nv.num_vsms);
        let gpc_slots = chars.max_gpc_count.max(chars.num_gpc).clamp(1, 64);
        let mut masks = vec![0u32; gpc_slots as usize];
        let mut tm = nvgpu_gpu_get_tpc_masks_args {
            mask_buf_size: 4 * gpc_slots,
            reserved: 0,
            mask_buf_addr: masks.as_mut_ptr() as u64,
        };
        let tpcs = d
            .ioctl(d.ctrl_fd, NVGPU_GPU_IOCTL_GET_TPC_MASKS, &mut tm, || {
                format!(
                    "NVGPU_GPU_IOCTL_GET_TPC_MASKS(mask_buf_size={}) (optional)",
                    4 * gpc_slots
                )
            })
            .ok()
            .map(|_| masks.iter().map(|m| m.count_ones()).sum::<u32>())
            .filter(|&t| t > 0);
        let mut ms = nvgpu_gpu_get_memory_state_args::default();
        let mem_state = d
            .ioctl(d.ctrl_fd, NVGPU_GPU_IOCTL_GET_MEMORY_STATE, &mut ms, || {
                "NVGPU_GPU_IOCTL_GET_MEMORY_STATE (optional)".to_string()
            })
            .ok()
            .map(|_| ms.total_free_bytes)
            .filter(|&m| m > 0);

        // ALLOC_AS.
        let mut aa = nvgpu_alloc_as_args {
            big_page_size: 0,
            flags: NVGPU_GPU_IOCTL_ALLOC_AS_FLAGS_UNIFIED_VA,
            va_range_start: VA_RANGE_START,
            va_range_end: VA_RANGE_END,
            va_range_split: 0,
            ..Default::default()
        };
        d.ioctl(d.ctrl_fd, NVGPU_GPU_IOCTL_ALLOC_AS, &mut aa, || {
            format!(
                "NVGPU_GPU_IOCTL_ALLOC_AS(big_page_size=0, flags=UNIFIED_VA, va_range_start={VA_RANGE_START:#x}, va_range_end={VA_RANGE_END:#x}, va_range_split=0)"
            )
        })?;
        d.as_fd = aa.as_fd;
        debug!(
            "address space: fd {}, VA [{VA_RANGE_START:#x}, {VA_RANGE_END:#x}), unified, 4 KiB pages",
            d.as_fd
        );

        // Reserve the shader windows before any mapping.
        for win in [SHARED_WINDOW, LOCAL_WINDOW] {
            let pages = WINDOW_SIZE / PAGE_SIZE;
            let mut s = nvgpu_as_alloc_space_args {
                pages,
                page_size: PAGE_SIZE as u32,
                flags: NVGPU_AS_ALLOC_SPACE_FLAGS_FIXED_OFFSET,
                o_a: win,
                padding: [0; 2],
            };
            d.ioctl(d.as_fd, NVGPU_AS_IOCTL_ALLOC_SPACE, &mut s, || {
                format!(
                    "NVGPU_AS_IOCTL_ALLOC_SPACE(pages={pages:#x}, page_size={PAGE_SIZE}, flags=FIXED_OFFSET, offset={win:#x})"
                )
            })?;
            if s.o_a != win {
                d.areas.push(s.o_a);
                return Err(Error::new(
                    Status::Os,
                    format!("NVGPU_AS_IOCTL_ALLOC_SPACE(FIXED_OFFSET, offset={win:#x}) reserved {:#x} instead", s.o_a),
                ));
            }
            d.areas.push(win);
        }
        debug!(
            "shader windows reserved: shared {SHARED_WINDOW:#x}, local {LOCAL_WINDOW:#x} ({} MiB each)",
            WINDOW_SIZE >> 20
        );

        // TSG + subcontext.
        let mut ot = nvgpu_gpu_open_tsg_args::default();
        d.ioctl(d.ctrl_fd, NVGPU_GPU_IOCTL_OPEN_TSG, &mut ot, || {
            "NVGPU_GPU_IOCTL_OPEN_TSG(flags=0, source_device_instance_id=0, share_token=0)"
                .to_string()
        })?;
        d.tsg_fd = ot.tsg_fd as RawFd;
        let as_fd = d.as_fd;
        let mut sc = nvgpu_tsg_create_subcontext_args {
            r#type: NVGPU_TSG_SUBCONTEXT_TYPE_ASYNC,
            as_fd,
            veid: 0,
            reserved: 0,
        };
        d.ioctl(d.tsg_fd, NVGPU_TSG_IOCTL_CREATE_SUBCONTEXT, &mut sc, || {
            format!("NVGPU_TSG_IOCTL_CREATE_SUBCONTEXT(type=ASYNC, as_fd={as_fd})")
        })?;
        d.veid = sc.veid;
        debug!("TSG fd {}, ASYNC subcontext veid {}", d.tsg_fd, d.veid);

        // Doorbell page.
        let ctrl = d.ctrl_fd;
        // SAFETY: a fresh shared mapping of the ctrl node's usermode region.
        d.usermode = unsafe {
            sys.mmap(std::ptr::null_mut(), NVGPU_USERMODE_MAP_SIZE, PROT_RW, libc::MAP_SHARED, ctrl, 0)
        }
        .map_err(|e| {
            os_err(format!("mmap(ctrl_fd={ctrl}, len={NVGPU_USERMODE_MAP_SIZE:#x}, MAP_SHARED, offset=0) (doorbell)"), e)
        })?;
        debug!(
            "usermode page mapped at {:p} ({NVGPU_USERMODE_MAP_SIZE:#x} bytes; doorbell at +{NVGPU_USERMODE_DOORBELL_OFFSET:#x})",
            d.usermode
        );

        let dev = Arc::new(d);

        // Probe whether CPU views can sit at their GPU VAs.
        let unified = {
            let mut b =
                dev.create_buffer(PAGE_SIZE, NVMAP_HANDLE_CACHEABLE, true, true, true, false)?;
            let u = b.gpu_va == Some(b.cpu as u64);
            dev.release_buffer(&mut b)?;
            u
        };
        debug!(
            "CPU views {} at their GPU addresses",
            if unified { "sit" } else { "cannot sit" }
        );

        let sm_per_tpc = if chars.arch >= 0x140 { 2 } else { 1 };
        let sm_count = num_vsms
            .filter(|&n| n > 0)
            .or(tpcs.map(|t| t * sm_per_tpc))
            .unwrap_or(
                chars
                    .num_gpc
                    .saturating_mul(chars.num_tpc_per_gpc)
                    .saturating_mul(sm_per_tpc),
            );
        // Then nvmap's IOVMM heap, which buffers come from (on Orin the system memory; on the
        // emulated Orin the emulated memory), then the kernel's MemTotal.
        let memory_bytes = mem_state
            .or_else(|| dev.iovmm_heap().ok().map(|(_, total)| total))
            .or_else(meminfo_total)
            .unwrap_or(0);
        let driver_version = if emulated {
            "emulated nvgpu (r36 interface)".to_string()
        } else {
            std::fs::read_to_string("/sys/module/nvgpu/version")
                .map(|s| format!("nvgpu {}", s.trim()))
                .unwrap_or_else(|_| "nvgpu (version not reported)".to_string())
        };
        let info = DeviceInfo {
            name: chars.chipname_str(),
            backend: BackendKind::Nvgpu,
            emulated,
            arch: chars.arch,
            sm_major: chars.sm_arch_sm_version >> 8,
            sm_minor: chars.sm_arch_sm_version & 0xff,
            sm_count,
            max_gpc_count: chars.max_gpc_count.max(chars.num_gpc),
            max_tpc_per_gpc: chars.num_tpc_per_gpc,
            sm_per_tpc,
            warps_per_sm: chars.sm_arch_warp_count,
            memory_bytes,
            va_bits: u32::from(chars.gpu_va_bit_count),
            compute_class: chars.compute_class,
            copy_class: chars.dma_copy_class,
            gpfifo_class: chars.gpfifo_class,
            driver_version,
            shared_window: SHARED_WINDOW,
            local_window: LOCAL_WINDOW,
            unified_addresses: unified,
        };
        debug!(
            "nvgpu device ready: {} ({}), {} SMs, {} MiB, driver {:?}",
            info.name,
            if emulated { "emulated" } else { "real" },
            info.sm_count,
            info.memory_bytes >> 20,
            info.driver_version
        );
        let cilp = allow_cilp
            && chars.compute_preemption_mode_flags & NVGPU_COMPUTE_PREEMPTION_MODE_CILP != 0;
        let pool = Arc::new(open_pool(&dev, (compute, copy), cilp, ctxsw_timeout_ms)?);
        Ok(NvgpuBackend {
            dev,
            info,
            pool,
            cilp,
        })
    }

    /// The raw characteristics the driver reported.
    pub fn characteristics(&self) -> &nvgpu_gpu_characteristics {
        &self.dev.chars
    }

    /// The VEID of the device's subcontext.
    pub fn veid(&self) -> u32 {
        self.dev.veid
    }

    /// `NVGPU_GPU_IOCTL_FLUSH_L2` on the ctrl fd: write back (and optionally invalidate) the GPU
    /// L2 and flush the FB. Invalid combinations are rejected before the call (§3).
    pub fn flush_l2(&self, invalidate: bool, fb_flush: bool) -> Result<()> {
        let mut a = nvgpu_gpu_l2_fb_args::new(true, invalidate, fb_flush);
        self.dev
            .ioctl(self.dev.ctrl_fd, NVGPU_GPU_IOCTL_FLUSH_L2, &mut a, || {
                format!(
                    "NVGPU_GPU_IOCTL_FLUSH_L2(l2_flush=1, l2_invalidate={}, fb_flush={})",
                    invalidate as u8, fb_flush as u8
                )
            })
            .map(|_| ())
    }

    /// Number of live allocations (for leak checks).
    pub fn live_allocations(&self) -> usize {
        self.dev.buffers.lock().len()
    }
}

/// The device's channels (see [`crate::backend::pool`]): compute channels ask for CILP where
/// `cilp` (the driver offers it in `compute_preemption_mode_flags` and `TEGRAGPU_NVGPU_CILP` is
/// not 0; a driver that advertises CILP but refuses it at ALLOC_OBJ_CTX fails the open with that
/// ioctl named); every channel gets the context-switch timeout limit `ctxsw_timeout_ms`.
fn open_pool(
    dev: &Arc<Device>,
    (compute, copy): (u32, u32),
    cilp: bool,
    ctxsw_timeout_ms: u32,
) -> Result<crate::backend::pool::Pool> {
    use crate::backend::pool::Pool;
    use crate::backend::{Channel, Engine};
    let d = dev.clone();
    let entries = super::pool_entries(dev);
    let pool = Pool::new(
        super::TSG_MAX_CHANNELS,
        "the most one nvgpu TSG holds (common/fifo/tsg.c:nvgpu_tsg_bind_channel)",
        Box::new(move |engine| {
            super::NvgpuChannel::create(d.clone(), engine, entries, cilp, ctxsw_timeout_ms)
                .map(|c| Box::new(c) as Box<dyn Channel>)
        }),
    );
    pool.fill(Engine::Compute, compute)?;
    pool.fill(Engine::Copy, copy)?;
    debug!(
        "channel pool: {compute} compute, {copy} copy channels; compute preemption {}",
        if cilp {
            "CILP requested"
        } else {
            "wait-for-idle"
        }
    );
    Ok(pool)
}
