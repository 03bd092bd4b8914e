//! `cuDeviceGetAttribute`: every `CUdevice_attribute` (1..=147), from what libtegragpu knows of
//! the device (SM count and version, memory, backend) and the facts of its architecture and
//! product.

use tegragpu::core;

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

/// The value of attribute `attrib` on `d`; None where `attrib` is not an attribute.
pub fn attribute(d: &core::Device, attrib: i32, pci: Option<crate::device::Pci>) -> Option<i32> {
    let pci = pci.unwrap_or_default();
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
        33 => pci.bus as i32,
        34 => pci.device as i32,
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
        50 => pci.domain as i32,
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
        83 => 1,
        84 | 85 => 0,
        86 => 0,
        87 => a.fp64_ratio,
        88 => 0,
        89 => dgpu,
        90 => 1,
        91 => 1,
        92..=94 => 0,
        95 => 1,
        96 => dgpu,
        97 => a.shared_optin,
        98 => 0,
        99 => 1,
        100 | 101 => 0,
        102 => 1,
        103 => 1,
        104 | 105 => 0,
        106 => a.blocks_per_sm,
        107 => dgpu,
        108 => p.persisting_l2,
        109 => 134217728,
        110 => dgpu,
        111 => 1024,
        112 => 1,
        113 => 1,
        114 => 1,
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
        119 => 9,
        120 => b(a.clusters),
        121 => 1,
        122 | 123 => 1,
        124 => 1,
        125 => 1,
        126 => {
            if a.clusters {
                4
            } else {
                1
            }
        }
        127 => b(a.clusters),
        128 => b(a.clusters && !integrated),
        129 => b(a.clusters),
        130 => 0,
        131 => -1,
        132 => p.multicast,
        133 => 0,
        134 => 0,
        135 => 0,
        136 | 137 => 0,
        138 => 0,
        139 => pci.id as i32,
        140 => pci.subsystem as i32,
        141 | 142 => dgpu,
        143 => 0,
        144 | 145 => dgpu,
        146 => 0,
        147 => 0,
        _ => return None,
    })
}
