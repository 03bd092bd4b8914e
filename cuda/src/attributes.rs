//! `cuDeviceGetAttribute`: every `CUdevice_attribute` (1..=147). An attribute libtegragpu's
//! `Device::attribute` knows answers with its value (what the driver reports, the products and
//! architectures it knows, the library's own limits); the others, and those it does not know for
//! the device, come from the facts of the device's architecture and product below. Features this
//! library refuses (managed memory, virtual memory management, memory pools, IPC) read 0, and
//! DMA-BUF export of address ranges reads 1 on desktop GPUs only; the stream memory operations (`cuStreamWaitValue*`, `cuStreamWriteValue*`,
//! `cuStreamBatchMemOp`) are implemented, with 64-bit values and the NOR wait.

use tegragpu::core::{self, DeviceAttribute as A};

/// The libtegragpu attribute that is CUDA's attribute `attrib`, where there is one.
fn core_attribute(attrib: i32) -> Option<A> {
    Some(match attrib {
        1 => A::MaxThreadsPerBlock,
        2 => A::MaxBlockDimX,
        3 => A::MaxBlockDimY,
        4 => A::MaxBlockDimZ,
        5 => A::MaxGridDimX,
        6 => A::MaxGridDimY,
        7 => A::MaxGridDimZ,
        8 => A::MaxSharedMemoryPerBlock,
        9 => A::TotalConstantMemory,
        10 => A::WarpSize,
        11 => A::MaxPitch,
        12 => A::MaxRegistersPerBlock,
        13 => A::ClockRateKhz,
        14 => A::TextureAlignment,
        16 => A::SmCount,
        17 => A::KernelExecTimeout,
        18 => A::Integrated,
        19 => A::CanMapHostMemory,
        20 => A::ComputeMode,
        31 => A::ConcurrentKernels,
        32 => A::EccEnabled,
        33 => A::PciBusId,
        34 => A::PciDeviceId,
        36 => A::MemoryClockRateKhz,
        37 => A::MemoryBusWidthBits,
        38 => A::L2CacheBytes,
        39 => A::MaxThreadsPerSm,
        40 => A::AsyncEngineCount,
        50 => A::PciDomainId,
        51 => A::TexturePitchAlignment,
        69 => A::MaxTexture1dLinearWidth,
        70 => A::MaxTexture2dLinearWidth,
        71 => A::MaxTexture2dLinearHeight,
        72 => A::MaxTexture2dLinearPitch,
        75 => A::ComputeCapabilityMajor,
        76 => A::ComputeCapabilityMinor,
        79 => A::GlobalL1CacheSupported,
        80 => A::LocalL1CacheSupported,
        81 => A::MaxSharedMemoryPerSm,
        82 => A::MaxRegistersPerSm,
        95 => A::CooperativeLaunch,
        97 => A::MaxSharedMemoryPerBlockOptin,
        106 => A::MaxBlocksPerSm,
        111 => A::ReservedSharedMemoryPerBlock,
        120 => A::ClusterLaunch,
        139 => A::PciVendorDeviceId,
        140 => A::PciSubsystemId,
        _ => return None,
    })
}

/// The value of attribute `attrib` on `d`; None where `attrib` is not an attribute.
pub fn attribute(d: &core::Device, attrib: i32) -> Option<i32> {
    let fallback = table(d, attrib)?;
    if let Some(a) = core_attribute(attrib) {
        if let Ok(v) = d.attribute(a) {
            return Some(v.clamp(i32::MIN as i64, i32::MAX as i64) as i32);
        }
    }
    Some(fallback)
}

/// Per-architecture facts (by SM version).
struct Arch {
    threads_per_sm: i32,
    blocks_per_sm: i32,
    shared_per_sm: i32,
    shared_optin: i32,
    l2_bytes: i32,
    /// Float to double throughput ratio.
    fp64_ratio: i32,
    /// Clusters (sm_90 and later).
    clusters: bool,
}

fn arch(major: u32, minor: u32) -> Arch {
    let (threads_per_sm, blocks_per_sm, shared_per_sm, shared_optin, l2_bytes, fp64_ratio) =
        match (major, minor) {
            (9, _) => (2048, 32, 233472, 232448, 50 << 20, 2),
            (8, 0) => (2048, 32, 167936, 166912, 40 << 20, 2),
            (8, 7) => (1536, 16, 167936, 166912, 4 << 20, 32),
            (8, 9) => (1536, 24, 102400, 101376, 48 << 20, 64),
            (8, _) => (1536, 16, 102400, 101376, 6 << 20, 32),
            (7, 5) => (1024, 16, 65536, 65536, 4 << 20, 32),
            (7, _) => (2048, 32, 98304, 98304, 6 << 20, 2),
            _ => (2048, 32, 233472, 232448, 50 << 20, 2),
        };
    Arch {
        threads_per_sm,
        blocks_per_sm,
        shared_per_sm,
        shared_optin,
        l2_bytes,
        fp64_ratio,
        clusters: major >= 9,
    }
}

/// Per-product facts where the library knows the product (clock rates, memory bus, L2).
struct Product {
    clock_khz: i32,
    mem_clock_khz: i32,
    bus_width: i32,
    l2_bytes: i32,
    persisting_l2: i32,
    ecc: i32,
    multicast: i32,
}

fn product(name: &str, integrated: bool, a: &Arch) -> Product {
    match name {
        "NVIDIA H200" => Product {
            clock_khz: 1980000,
            mem_clock_khz: 3201000,
            bus_width: 6016,
            l2_bytes: 62914560,
            persisting_l2: 39321600,
            ecc: 1,
            multicast: 0,
        },
        n if n.starts_with("NVIDIA H100") => Product {
            clock_khz: 1980000,
            mem_clock_khz: 2619000,
            bus_width: 5120,
            l2_bytes: 52428800,
            persisting_l2: 32768000,
            ecc: 1,
            multicast: 0,
        },
        _ if integrated => Product {
            clock_khz: 1300500,
            mem_clock_khz: 3199000,
            bus_width: 256,
            l2_bytes: a.l2_bytes,
            persisting_l2: a.l2_bytes / 4 * 3,
            ecc: 0,
            multicast: 0,
        },
        _ => Product {
            clock_khz: 1500000,
            mem_clock_khz: 1500000,
            bus_width: 256,
            l2_bytes: a.l2_bytes,
            persisting_l2: a.l2_bytes / 4 * 3,
            ecc: 0,
            multicast: 0,
        },
    }
}

/// This library's value of `attrib` (used where libtegragpu has none); PCI facts are 0 here
/// (libtegragpu reports them where the driver publishes them).
fn table(d: &core::Device, attrib: i32) -> Option<i32> {
    let i = d.info();
    let integrated = i.backend == core::BackendKind::Nvgpu;
    let a = arch(i.sm_major, i.sm_minor);
    let p = product(&i.name, integrated, &a);
    let dgpu = !integrated as i32;
    let b = |x: bool| x as i32;
    Some(match attrib {
        1 => 1024,
        2 | 3 => 1024,
        4 => 64,
        5 => i32::MAX,
        6 | 7 => 65535,
        8 => 49152,
        9 => 65536,
        10 => 32,
        11 => i32::MAX,
        12 => 65536,
        13 => p.clock_khz,
        14 => 512,
        15 => 1,
        16 => i.sm_count as i32,
        17 => 0,
        18 => b(integrated),
        19 => 1,
        20 => 0,
        21 | 22 => 131072,
        23 => 65536,
        24..=26 => 16384,
        27 | 28 => 32768,
        29 => 2048,
        30 => 512,
        31 => 1,
        32 => p.ecc,
        33 => 0,
        34 => 0,
        35 => 0,
        36 => p.mem_clock_khz,
        37 => p.bus_width,
        38 => p.l2_bytes,
        39 => a.threads_per_sm,
        40 => {
            if integrated {
                2
            } else {
                3
            }
        }
        41 => 1,
        42 => 32768,
        43 => 2048,
        44 => 1,
        45 | 46 => 32768,
        47 | 48 => 8192,
        49 => 32768,
        50 => 0,
        51 => 32,
        52 | 53 => 32768,
        54 => 2046,
        55 => 32768,
        56 => 131072,
        57 => 65536,
        58..=60 => 16384,
        61 => 32768,
        62 => 2048,
        63 | 64 => 32768,
        65 => 2048,
        66 | 67 => 32768,
        68 => 2046,
        69 => 268435456,
        70 => 131072,
        71 => 65000,
        72 => 2097120,
        73 | 74 => 32768,
        75 => i.sm_major as i32,
        76 => i.sm_minor as i32,
        77 => 32768,
        78 => 1,
        79 | 80 => 1,
        81 => a.shared_per_sm,
        82 => 65536,
        // Managed memory (managed.rs): the CPU and the GPU reach it at the same address, at any
        // time on desktop GPUs; on Jetson not while a kernel runs, as NVIDIA's reports there.
        83 => 1,
        84 | 85 => 0,
        86 => 0,
        87 => a.fp64_ratio,
        88 => 0,
        89 => dgpu,
        90 => 1,
        // Registered host memory is mapped for the GPU at its own addresses on desktop GPUs
        // (hostreg.rs); on Jetson it is only recorded.
        91 => dgpu,
        92..=94 => 0,
        95 => 1,
        96 => dgpu,
        97 => a.shared_optin,
        98 => 0,
        99 => 1,
        100 | 101 => 0,
        // Virtual memory management (vmm.rs), with POSIX file descriptors as shareable handles.
        102 | 103 => 1,
        104 | 105 => 0,
        106 => a.blocks_per_sm,
        107 => dgpu,
        108 => p.persisting_l2,
        109 => 134217728,
        110 => 0,
        111 => 1024,
        // Arrays: refused.
        112 => 0,
        113 => 1,
        // Timeline semaphore interop: refused. Device memory pools (pools.rs).
        114 => 0,
        115 => 1,
        116 => dgpu,
        117 => dgpu,
        118 => {
            if integrated {
                0
            } else {
                100
            }
        }
        // Pools with shareable handles: POSIX file descriptors (pools.rs).
        119 => 1,
        120 => b(a.clusters),
        // Deferred-mapping arrays: refused.
        121 => 0,
        // Stream memory operations (memops.rs): 64-bit values and the NOR wait.
        122 | 123 => 1,
        // DMA-BUF export (cuMemGetHandleForAddressRange): any page-aligned range on desktop
        // GPUs; Jetson exports whole allocations only, so it reads 0 there. IPC events
        // (ipc.rs): shown on desktop GPUs; on Jetson the handles work between the processes of
        // one device, but the attribute reads 0 (the path is proven only on desktop GPUs).
        124 => dgpu,
        125 => dgpu,
        126 => {
            if a.clusters {
                4
            } else {
                1
            }
        }
        127 => b(a.clusters),
        128 => 0,
        129 => b(a.clusters),
        130 => 0,
        131 => -1,
        132 => p.multicast,
        133 => 0,
        134 => 0,
        135 => 0,
        136 | 137 => 0,
        138 => 0,
        139 => 0,
        140 => 0,
        // Host memory in virtual memory management (vmm.rs: CU_MEM_LOCATION_TYPE_HOST and
        // _HOST_NUMA) and host memory pools (pools.rs), bound to a NUMA node where asked.
        141 | 142 => 1,
        143 => 0,
        144 | 145 => 1,
        146 => 0,
        147 => 0,
        _ => return None,
    })
}
