//! Device bring-up (rm-kernel-interface.md §2.2): version checks, root client, UVM, card info,
//! device and subdevice, class list, usermode region, GR/FB/engine information, the UVM-owned
//! VA space, the GRAPHICS TSG; and the [`DeviceInfo`] / [`RmDetails`] that describe the result.

use super::engines::{select_classes, CopyEngineInfo, RmClasses};
use super::rmapi::uvm_ioctl;
use super::state::{Inner, TsgState};
use super::usermode::{doorbell_over_bar1, DOORBELL_OFFSET};
use crate::backend::{BackendKind, DeviceInfo};
use crate::error::{Error, Result, Status};
use crate::log::debug;
use crate::sys::rm::*;

/// Base of the shader shared-memory window used on Hopper and later (4 GiB aligned).
pub const SHARED_WINDOW: u64 = 0x7294_0000_0000;
/// Base of the shader local-memory window.
pub const LOCAL_WINDOW: u64 = 0x7293_0000_0000;
/// Size of the FERMI_VASPACE_A VA space (tinygrad's value, just under 2^49).
pub const VASPACE_SIZE: u64 = 0x1_FFFF_FB00_0000;
/// Width of the GPU VA space we allocate, bits.
pub const VA_BITS: u32 = 49;

/// Check the driver version strings and return the branch. `sysfs_nvidia` / `sysfs_uvm` are
/// the contents of `/sys/module/{nvidia,nvidia_uvm}/version` when readable; `query` is the
/// `NV_ESC_CHECK_VERSION_STR` QUERY answer (authoritative).
pub fn check_driver_version(
    query: &str,
    sysfs_nvidia: Option<&str>,
    sysfs_uvm: Option<&str>,
) -> Result<(RmVersion, RmBranch)> {
    let v = RmVersion::parse(query)?;
    for (name, s) in [
        ("/sys/module/nvidia/version", sysfs_nvidia),
        ("/sys/module/nvidia_uvm/version", sysfs_uvm),
    ] {
        if let Some(s) = s {
            let s = s.trim();
            if s != v.text {
                return Err(Error::new(
                    Status::UnsupportedDriver,
                    format!(
                        "NVIDIA driver version mismatch: {name} says {s:?} but the loaded nvidia.ko answers {:?} (reload the modules)",
                        v.text
                    ),
                ));
            }
        }
    }
    let b = RmBranch::for_version(&v)?;
    Ok((v, b))
}

/// Facts about the RM device beyond [`DeviceInfo`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RmDetails {
    pub version: RmVersion,
    pub branch: RmBranch,
    /// RM GPU id (from card info).
    pub gpu_id: u32,
    /// Minor number: the device node is `/dev/nvidia<minor>`.
    pub minor: u32,
    pub pci_domain: u32,
    pub pci_bus: u8,
    pub pci_slot: u8,
    pub pci_device_id: u16,
    /// GPU UUID (binary) as UVM knows it.
    pub uuid: [u8; 16],
    /// Every class the device reports.
    pub class_list: Vec<u32>,
    pub classes: RmClasses,
    /// GR info `GPU_CORE_COUNT` and `MAX_SP_PER_SM` (the latter reads 0 on H200 / 580).
    pub gpu_core_count: u32,
    pub sp_per_sm: u32,
    /// Enabled TPCs (sum of `GR_GET_TPC_MASK` over `GR_GET_GPC_MASK`); sm_count = this ×
    /// `LITTER_NUM_SM_PER_TPC`.
    pub tpc_count: u32,
    /// FB info in KiB (0 when the control failed).
    pub fb_ram_kib: u32,
    pub fb_heap_kib: u32,
    pub fb_heap_free_kib: u32,
    pub bar1_kib: u32,
    pub bar1_avail_kib: u32,
    /// `NV2080_CTRL_CMD_MC_GET_ARCH_INFO` implementation (arch = architecture | implementation).
    pub arch_implementation: u32,
    /// RM handles (for diagnostics).
    pub client: u32,
    pub device: u32,
    pub subdevice: u32,
    pub vaspace: u32,
    /// TSG and context share as allocated at open (a TSG whose channels were all freed is
    /// replaced by a new one when the next channel is created).
    pub tsg: u32,
    pub ctxshare: u32,
    /// Subcontext id of the context share.
    pub subctx_id: u32,
    /// The logical copy engines (`GPU_GET_ENGINES_V2`, caps, PCE masks; best effort).
    pub copy_engines: Vec<CopyEngineInfo>,
}

pub(super) fn bring_up(
    inner: &mut Inner,
    version: RmVersion,
    ordinal: u32,
    share_uvm: bool,
) -> Result<(DeviceInfo, RmDetails)> {
    let client = inner.api.alloc_client()?;
    debug!("root client {client:#x}");

    // Cross-check the branch with the size-checked build-version control.
    let mut bv = Box::<NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_PARAMS>::default();
    let bsize = inner.layout.build_version_v2_size;
    inner
        .api
        .control_sized(
            client,
            NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2,
            &mut *bv,
            bsize,
        )
        .map_err(|e| {
            Error::new(
                Status::UnsupportedDriver,
                format!(
                    "driver {} does not answer GET_BUILD_VERSION_V2 in the {}-byte layout: {e}",
                    version.text, bsize
                ),
            )
        })?;
    let dv = c_string(&bv.driverVersionBuffer);
    debug!(
        "GET_BUILD_VERSION_V2: driver {dv:?} branch {:?}",
        c_string(&bv.driverBranch)
    );
    if RmVersion::parse(&dv).is_ok_and(|b| b.major != version.major) {
        return Err(Error::new(
            Status::UnsupportedDriver,
            format!(
                "GET_BUILD_VERSION_V2 reports driver {dv:?} but the version query said {:?}",
                version.text
            ),
        ));
    }

    // Card info → the GPU.
    let cards = inner.api.card_info()?;
    let card = *cards.get(ordinal as usize).ok_or_else(|| {
        Error::new(
            Status::NotFound,
            format!(
                "GPU ordinal {ordinal} not found: the driver lists {} GPU(s)",
                cards.len()
            ),
        )
    })?;
    inner.minor = card.minor_number;

    // UVM: the process's address space for this GPU (INITIALIZE on one fd, MM_INITIALIZE on a
    // second), shared with the devices of other GPUs where `share_uvm` (uvm_space.rs).
    let m = super::uvm_space::join(&inner.api.sys, share_uvm, card.gpu_id)?;
    inner.uvm_fd = m.fd();
    debug!("{} for GPU id {:#x}", m.space.label(), card.gpu_id);
    inner.uvm = Some(m);
    debug!(
        "card: gpu_id {:#x} minor {} pci {:04x}:{:02x}:{:02x} device {:#06x}",
        card.gpu_id,
        card.minor_number,
        card.pci_info.domain,
        card.pci_info.bus,
        card.pci_info.slot,
        card.pci_info.device_id
    );
    inner.dev_fd = inner.new_dev_fd()?;
    debug!(
        "opened /dev/nvidia{} (fd {}), linked to the control fd",
        inner.minor, inner.dev_fd
    );

    let mut id = NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS {
        gpuId: card.gpu_id,
        ..Default::default()
    };
    inner
        .api
        .control(client, NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2, &mut id)?;
    let mut dp = NV0080_ALLOC_PARAMETERS {
        deviceId: id.deviceInstance,
        hClientShare: client,
        ..Default::default()
    };
    inner.device = inner.api.alloc(client, NV01_DEVICE_0, Some(&mut dp))?;
    inner.device_instance = id.deviceInstance;
    let mut sp = NV2080_ALLOC_PARAMETERS { subDeviceId: 0 };
    inner.subdevice = inner
        .api
        .alloc(inner.device, NV20_SUBDEVICE_0, Some(&mut sp))?;
    debug!(
        "device {:#x} (instance {}), subdevice {:#x}",
        inner.device, id.deviceInstance, inner.subdevice
    );
    request_compute_clocks(inner);

    // Class list.
    let mut cl = NV0080_CTRL_GPU_GET_CLASSLIST_PARAMS::default();
    inner
        .api
        .control(inner.device, NV0080_CTRL_CMD_GPU_GET_CLASSLIST, &mut cl)?;
    let n = cl.numClasses as usize;
    if n == 0 || n > 4096 {
        return Err(Error::new(
            Status::Os,
            format!("NV0080_CTRL_CMD_GPU_GET_CLASSLIST returned {n} classes"),
        ));
    }
    let mut list = vec![0u32; n];
    cl.classList = list.as_mut_ptr() as u64;
    inner
        .api
        .control(inner.device, NV0080_CTRL_CMD_GPU_GET_CLASSLIST, &mut cl)?;
    list.truncate((cl.numClasses as usize).min(n));
    let classes = select_classes(&list)?;
    inner.classes = Some(classes);
    debug!("{} classes; picked {classes:x?}", list.len());

    // Usermode (doorbell) region.
    inner.usermode =
        inner.map_region::<()>(classes.usermode, None, NVOS33_FLAGS_ACCESS_READ_WRITE)?;
    inner.doorbell_ptr = inner.usermode.ptr + DOORBELL_OFFSET;
    if doorbell_over_bar1(classes.usermode) {
        let mut p = NV_HOPPER_USERMODE_A_PARAMS {
            bBar1Mapping: 1,
            bPriv: 0,
        };
        match inner.map_region(
            classes.usermode,
            Some(&mut p),
            NVOS33_FLAGS_ACCESS_WRITE_ONLY,
        ) {
            Ok(r) => {
                inner.doorbell_ptr = r.ptr + DOORBELL_OFFSET;
                inner.doorbell_bar1 = r;
            }
            Err(e) => debug!("BAR1 doorbell unavailable, using BAR0: {e}"),
        }
    }

    // GR info.
    let idx = [
        NV2080_CTRL_GR_INFO_INDEX_SM_VERSION,
        NV2080_CTRL_GR_INFO_INDEX_MAX_WARPS_PER_SM,
        NV2080_CTRL_GR_INFO_INDEX_MAX_SP_PER_SM,
        NV2080_CTRL_GR_INFO_INDEX_GPU_CORE_COUNT,
        NV2080_CTRL_GR_INFO_INDEX_LITTER_NUM_GPCS,
        NV2080_CTRL_GR_INFO_INDEX_LITTER_NUM_TPC_PER_GPC,
        NV2080_CTRL_GR_INFO_INDEX_LITTER_NUM_SM_PER_TPC,
    ];
    let mut gr: Vec<NV2080_CTRL_GR_INFO> = idx
        .iter()
        .map(|&i| NV2080_CTRL_GR_INFO { index: i, data: 0 })
        .collect();
    let mut gp = NV2080_CTRL_GR_GET_INFO_PARAMS {
        grInfoListSize: gr.len() as u32,
        grInfoList: gr.as_mut_ptr() as u64,
        ..Default::default()
    };
    inner
        .api
        .control(inner.subdevice, NV2080_CTRL_CMD_GR_GET_INFO, &mut gp)?;
    let [sm_version, warps, sp_per_sm, cores, gpcs, tpc_per_gpc, sm_per_tpc] =
        [0, 1, 2, 3, 4, 5, 6].map(|i| gr[i].data);
    // Enabled SMs: enabled TPCs (GPC mask, then each GPC's TPC mask) × SMs per TPC. The
    // GR info "litter" values describe the full die; MAX_SP_PER_SM reads 0 on H200.
    let per_gpc = enabled_tpcs(inner).unwrap_or_else(|e| {
        debug!("GPC/TPC masks unavailable ({e})");
        Vec::new()
    });
    let tpc_count: u32 = per_gpc.iter().sum();
    let sm_count = if tpc_count != 0 && sm_per_tpc != 0 {
        tpc_count * sm_per_tpc
    } else if sp_per_sm != 0 && cores != 0 {
        cores / sp_per_sm
    } else {
        gpcs * tpc_per_gpc * sm_per_tpc
    };
    debug!(
        "GR: sm_version {sm_version:#x} warps {warps} sp/sm {sp_per_sm} cores {cores} gpcs {gpcs} tpc/gpc {tpc_per_gpc} sm/tpc {sm_per_tpc}; enabled TPCs {tpc_count} (per GPC {per_gpc:?}) → {sm_count} SMs"
    );

    // Name, architecture, framebuffer (best effort).
    let mut np = NV2080_CTRL_GPU_GET_NAME_STRING_PARAMS::default();
    let name = match inner.api.control(
        inner.subdevice,
        NV2080_CTRL_CMD_GPU_GET_NAME_STRING,
        &mut np,
    ) {
        Ok(()) => c_string(&np.gpuNameString[..NV2080_GPU_MAX_NAME_STRING_LENGTH]),
        Err(e) => {
            debug!("GET_NAME_STRING failed: {e}");
            String::new()
        }
    };
    let name = if name.is_empty() {
        format!("NVIDIA GPU (PCI device {:#06x})", card.pci_info.device_id)
    } else {
        name
    };
    let mut ap = NV2080_CTRL_MC_GET_ARCH_INFO_PARAMS::default();
    let (arch, arch_impl) =
        match inner
            .api
            .control(inner.subdevice, NV2080_CTRL_CMD_MC_GET_ARCH_INFO, &mut ap)
        {
            Ok(()) => (ap.architecture | ap.implementation, ap.implementation),
            Err(e) => {
                debug!("MC_GET_ARCH_INFO failed: {e}");
                (0, 0)
            }
        };
    let fb_idx = [
        NV2080_CTRL_FB_INFO_INDEX_RAM_SIZE,
        NV2080_CTRL_FB_INFO_INDEX_HEAP_SIZE,
        NV2080_CTRL_FB_INFO_INDEX_HEAP_FREE,
        NV2080_CTRL_FB_INFO_INDEX_BAR1_SIZE,
        NV2080_CTRL_FB_INFO_INDEX_BAR1_AVAIL_SIZE,
    ];
    let mut fb: Vec<NV2080_CTRL_FB_INFO> = fb_idx
        .iter()
        .map(|&i| NV2080_CTRL_FB_INFO { index: i, data: 0 })
        .collect();
    let mut fp = NV2080_CTRL_FB_GET_INFO_PARAMS {
        fbInfoListSize: fb.len() as u32,
        _pad: 0,
        fbInfoList: fb.as_mut_ptr() as u64,
    };
    let [ram_kib, heap_kib, heap_free_kib, bar1_kib, bar1_avail_kib] =
        match inner
            .api
            .control(inner.subdevice, NV2080_CTRL_CMD_FB_GET_INFO, &mut fp)
        {
            Ok(()) => [0, 1, 2, 3, 4].map(|i| fb[i].data),
            Err(e) => {
                debug!("FB_GET_INFO failed: {e}");
                [0; 5]
            }
        };

    // Copy engines (best effort: without them copies use the GR copy engine).
    inner.copy_engines = query_copy_engines(inner).unwrap_or_else(|e| {
        debug!("copy-engine query failed ({e}); copies use the GR copy engine");
        Vec::new()
    });
    for e in &inner.copy_engines {
        debug!(
            "LCE{} (engine type {:#x}): caps {:02x?}{} PCE mask {:#x}",
            e.index,
            e.engine_type,
            e.caps,
            if e.is_grce() { " GRCE" } else { "" },
            e.pce_mask
        );
    }

    // UVM-owned VA space.
    let mut vp = NV_VASPACE_ALLOCATION_PARAMETERS {
        index: NV_VASPACE_ALLOCATION_INDEX_GPU_NEW,
        flags: NV_VASPACE_ALLOCATION_FLAGS_ENABLE_PAGE_FAULTING
            | NV_VASPACE_ALLOCATION_FLAGS_IS_EXTERNALLY_OWNED,
        vaSize: VASPACE_SIZE,
        vaBase: 0x1000,
        ..Default::default()
    };
    inner.vaspace = inner
        .api
        .alloc(inner.device, FERMI_VASPACE_A, Some(&mut vp))?;

    let mut gid = NV2080_CTRL_GPU_GET_GID_INFO_PARAMS {
        index: 0,
        flags: NV2080_GPU_CMD_GPU_GET_GID_FLAGS_FORMAT_BINARY,
        length: 16,
        ..Default::default()
    };
    inner
        .api
        .control(inner.subdevice, NV2080_CTRL_CMD_GPU_GET_GID_INFO, &mut gid)?;
    inner.uuid.uuid.copy_from_slice(&gid.data[..16]);

    let register_gpu = |inner: &Inner| {
        let mut rg = UVM_REGISTER_GPU_PARAMS {
            gpu_uuid: inner.uuid,
            rmCtrlFd: -1,
            ..Default::default()
        };
        uvm_ioctl(
            inner.sys(),
            inner.uvm_fd,
            UVM_REGISTER_GPU,
            &mut rg,
            |p| p.rmStatus,
            &|| "UVM_REGISTER_GPU".into(),
        )
    };
    match register_gpu(inner) {
        Ok(()) => {}
        // UVM refuses some GPUs next to others in one address space (coherent beside
        // non-coherent ones, a second integrated GPU): this device then takes a space of its own.
        Err(e) if inner.uvm.as_ref().is_some_and(|m| m.has_others()) => {
            debug!("UVM_REGISTER_GPU in the shared address space failed ({e}); using an address space of this device's own (no peer access)");
            inner.uvm = None;
            let m = super::uvm_space::join(&inner.api.sys, false, card.gpu_id)?;
            inner.uvm_fd = m.fd();
            inner.uvm = Some(m);
            register_gpu(inner)?;
        }
        Err(e) => return Err(e),
    }
    inner.uvm_gpu_registered = true;
    let mut rv = UVM_REGISTER_GPU_VASPACE_PARAMS {
        gpuUuid: inner.uuid,
        rmCtrlFd: inner.api.ctl_fd,
        hClient: client,
        hVaSpace: inner.vaspace,
        rmStatus: 0,
    };
    uvm_ioctl(
        inner.sys(),
        inner.uvm_fd,
        UVM_REGISTER_GPU_VASPACE,
        &mut rv,
        |p| p.rmStatus,
        &|| format!("UVM_REGISTER_GPU_VASPACE(hVaSpace={:#x})", inner.vaspace),
    )?;
    inner.uvm_vaspace_registered = true;
    debug!("VA space {:#x} registered with UVM", inner.vaspace);

    // TSG + context share.
    let (tsg, ctxshare, subctx_id) = {
        let mut st = TsgState {
            engine_type: NV2080_ENGINE_TYPE_GRAPHICS,
            ..Default::default()
        };
        let r = inner.alloc_tsg(&mut st);
        let ids = (st.tsg, st.ctxshare, st.subctx_id);
        inner.sched.lock().insert(NV2080_ENGINE_TYPE_GRAPHICS, st);
        r?;
        ids
    };

    // Buffers whose GPU address the process already maps (AddressSanitizer's shadow, another
    // allocator's reservation, a second copy of this library) are CPU-mapped elsewhere.
    let unified = match super::va::probe_window() {
        Some(c) if c.is_empty() => true,
        Some(c) => {
            crate::log::info!(
                "GPU VA window [{:#x}, {:#x}): the process already maps {}; buffers given GPU addresses there are CPU-mapped elsewhere (tg_buf_cpu_ptr differs from tg_buf_gpu_address)",
                super::va::LOW_VA_BASE,
                super::va::LOW_VA_END,
                super::va::describe_ranges(&c)
            );
            false
        }
        None => {
            debug!("/proc/self/maps unreadable: the GPU VA window was not checked");
            true
        }
    };

    let info = DeviceInfo {
        name,
        backend: BackendKind::Rm,
        emulated: inner.sys().is_emulated(),
        arch,
        sm_major: (sm_version >> 8) & 0xff,
        sm_minor: sm_version & 0xff,
        sm_count,
        max_gpc_count: gpcs,
        max_tpc_per_gpc: tpc_per_gpc,
        sm_per_tpc,
        warps_per_sm: warps,
        memory_bytes: heap_kib as u64 * 1024,
        va_bits: VA_BITS,
        compute_class: classes.compute,
        copy_class: classes.copy,
        gpfifo_class: classes.gpfifo,
        driver_version: version.text.clone(),
        shared_window: SHARED_WINDOW,
        local_window: LOCAL_WINDOW,
        unified_addresses: unified,
    };
    let details = RmDetails {
        version,
        branch: inner.branch,
        gpu_id: card.gpu_id,
        minor: card.minor_number,
        pci_domain: card.pci_info.domain,
        pci_bus: card.pci_info.bus,
        pci_slot: card.pci_info.slot,
        pci_device_id: card.pci_info.device_id,
        uuid: inner.uuid.uuid,
        class_list: list,
        classes,
        gpu_core_count: cores,
        sp_per_sm,
        tpc_count,
        fb_ram_kib: ram_kib,
        fb_heap_kib: heap_kib,
        fb_heap_free_kib: heap_free_kib,
        bar1_kib,
        bar1_avail_kib,
        arch_implementation: arch_impl,
        client,
        device: inner.device,
        subdevice: inner.subdevice,
        vaspace: inner.vaspace,
        tsg,
        ctxshare,
        subctx_id,
        copy_engines: inner.copy_engines.clone(),
    };
    Ok((info, details))
}

/// The COPY engines of `GPU_GET_ENGINES_V2` with their caps and PCE masks.
/// Ask RM for the clocks a compute context gets: the `NV2080_CTRL_CMD_PERF_BOOST` request
/// libcuda makes for every context (flags BOOST_TO_MAX | CUDA, duration infinite; seen in an
/// ioctl trace of libcuda on driver 580). Without it an idle GPU answers launches from its lowest
/// clocks (H100: empty launch + wait p50 11 µs instead of 5.5 µs). Like libcuda, the library does
/// not clear it; RM decides how long it lasts. `TEGRAGPU_RM_PERF_BOOST=0` skips the request.
/// Not fatal if refused.
fn request_compute_clocks(inner: &Inner) {
    if matches!(std::env::var("TEGRAGPU_RM_PERF_BOOST").as_deref(), Ok("0")) {
        debug!("PERF_BOOST not requested (TEGRAGPU_RM_PERF_BOOST=0)");
        return;
    }
    let mut p = NV2080_CTRL_PERF_BOOST_PARAMS {
        flags: NV2080_CTRL_PERF_BOOST_FLAGS_CMD_BOOST_TO_MAX
            | NV2080_CTRL_PERF_BOOST_FLAGS_CUDA_YES,
        duration: NV2080_CTRL_PERF_BOOST_DURATION_INFINITE,
    };
    match inner
        .api
        .control(inner.subdevice, NV2080_CTRL_CMD_PERF_BOOST, &mut p)
    {
        Ok(()) => debug!("PERF_BOOST: BOOST_TO_MAX | CUDA, duration infinite"),
        Err(e) => debug!("PERF_BOOST refused (clocks stay with the driver's policy): {e}"),
    }
}

fn query_copy_engines(inner: &Inner) -> Result<Vec<CopyEngineInfo>> {
    let mut p = NV2080_CTRL_GPU_GET_ENGINES_V2_PARAMS::default();
    inner
        .api
        .control(inner.subdevice, NV2080_CTRL_CMD_GPU_GET_ENGINES_V2, &mut p)?;
    let n = (p.engineCount as usize).min(NV2080_GPU_MAX_ENGINES_LIST_SIZE);
    let mut out = Vec::new();
    for &t in &p.engineList[..n] {
        let Some(index) = NV2080_ENGINE_TYPE_COPY_IDX(t) else {
            continue;
        };
        let mut c = NV2080_CTRL_CE_GET_CAPS_V2_PARAMS {
            ceEngineType: t,
            ..Default::default()
        };
        let caps = match inner
            .api
            .control(inner.subdevice, NV2080_CTRL_CMD_CE_GET_CAPS_V2, &mut c)
        {
            Ok(()) => c.capsTbl,
            Err(e) => {
                debug!("CE_GET_CAPS_V2(LCE{index}): {e}");
                [0; NV2080_CTRL_CE_CAPS_TBL_SIZE]
            }
        };
        let mut m = NV2080_CTRL_CE_GET_CE_PCE_MASK_PARAMS {
            ceEngineType: t,
            pceMask: 0,
        };
        let pce_mask =
            match inner
                .api
                .control(inner.subdevice, NV2080_CTRL_CMD_CE_GET_CE_PCE_MASK, &mut m)
            {
                Ok(()) => m.pceMask,
                Err(e) => {
                    debug!("CE_GET_CE_PCE_MASK(LCE{index}): {e}");
                    0
                }
            };
        out.push(CopyEngineInfo {
            index,
            engine_type: t,
            caps,
            pce_mask,
        });
    }
    out.sort_by_key(|e| e.index);
    Ok(out)
}

/// Enabled TPCs of each enabled GPC.
fn enabled_tpcs(inner: &Inner) -> Result<Vec<u32>> {
    let mut g = NV2080_CTRL_GR_GET_GPC_MASK_PARAMS::default();
    inner
        .api
        .control(inner.subdevice, NV2080_CTRL_CMD_GR_GET_GPC_MASK, &mut g)?;
    let mut n = Vec::new();
    for gpc in 0..32 {
        if g.gpcMask & (1 << gpc) != 0 {
            let mut t = NV2080_CTRL_GR_GET_TPC_MASK_PARAMS {
                gpcId: gpc,
                ..Default::default()
            };
            inner
                .api
                .control(inner.subdevice, NV2080_CTRL_CMD_GR_GET_TPC_MASK, &mut t)?;
            debug!("GPC {gpc}: TPC mask {:#x}", t.tpcMask);
            n.push(t.tpcMask.count_ones());
        }
    }
    Ok(n)
}
