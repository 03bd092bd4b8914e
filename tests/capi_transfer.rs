//! The C API's fills, host transfers, device listing, attributes and free memory
//! (`tg_queue_fill`, `tg_queue_write`, `tg_queue_read`, `tg_device_count`, `tg_device_list`,
//! `tg_device_get_attribute`, `tg_device_memory_info`) on the emulated Orin.

mod common;

use std::ffi::{c_void, CStr};
use std::ptr::{null, null_mut};
use tegragpu::capi::*;
use tegragpu::core::DeviceAttribute;

fn last_error() -> String {
    // SAFETY: tg_last_error_message returns a NUL-terminated string valid until the next failing
    // call on this thread.
    unsafe { CStr::from_ptr(tg_last_error_message()) }
        .to_string_lossy()
        .into_owned()
}

fn open_emu() -> *mut tg_device {
    let mut dev = null_mut();
    // SAFETY: valid C string and out-pointer.
    let st = unsafe { tg_device_open(c"emu".as_ptr(), &mut dev) };
    assert_eq!(st, tg_status::TG_OK, "{}", last_error());
    dev
}

/// A zeroed CPU-cached buffer of `size` bytes and its CPU pointer.
unsafe fn buffer(dev: *mut tg_device, size: u64) -> (*mut tg_buf, *mut u8) {
    let mut b = null_mut();
    let st = tg_buf_alloc(dev, size, TG_BUF_CPU_CACHED | TG_BUF_ZEROED, &mut b);
    assert_eq!(st, tg_status::TG_OK, "{}", last_error());
    let mut p = null_mut();
    assert_eq!(tg_buf_cpu_ptr(b, &mut p), tg_status::TG_OK);
    (b, p as *mut u8)
}

#[test]
fn fill_write_and_read_on_every_queue_kind_shared_and_owned() {
    let dev = open_emu();
    for kind in [0, 1] {
        for owned in [false, true] {
            // SAFETY: handles from this test; pointers valid for the sizes passed.
            unsafe {
                let mut q = null_mut();
                let st = if owned {
                    tg_queue_create_owned(dev, tg_queue_kind_arg(kind), 0, &mut q)
                } else {
                    tg_queue_create(dev, tg_queue_kind_arg(kind), &mut q)
                };
                assert_eq!(st, tg_status::TG_OK, "{}", last_error());
                let size = 70_000u64;
                let (b, cpu) = buffer(dev, size);
                // 2-byte fill of 0xBEEF over [2, 2 + 2*30001), then 1001 host bytes at 5001.
                assert_eq!(
                    tg_queue_fill(q, b, 2, 0xBEEF, 2, 30_001),
                    tg_status::TG_OK,
                    "{}",
                    last_error()
                );
                let src: Vec<u8> = (0..1001u32).map(|i| (i * 7 + 3) as u8).collect();
                assert_eq!(
                    tg_queue_write(q, b, 5001, src.as_ptr() as *const c_void, src.len() as u64),
                    tg_status::TG_OK,
                    "{}",
                    last_error()
                );
                let mut back = vec![0u8; size as usize];
                assert_eq!(
                    tg_queue_read(q, back.as_mut_ptr() as *mut c_void, b, 0, size),
                    tg_status::TG_OK,
                    "{}",
                    last_error()
                );
                for (i, &v) in back.iter().enumerate() {
                    let want = if (5001..6002).contains(&i) {
                        src[i - 5001]
                    } else if (2..2 + 2 * 30_001).contains(&i) {
                        if i % 2 == 0 {
                            0xEF
                        } else {
                            0xBE
                        }
                    } else {
                        0
                    };
                    assert_eq!(v, want, "kind {kind} owned {owned}: byte {i}");
                }
                // The read returned after the work: the buffer itself holds the same bytes.
                assert!(std::slice::from_raw_parts(cpu, size as usize) == &back[..]);
                assert_eq!(tg_queue_destroy(q), tg_status::TG_OK);
                assert_eq!(tg_buf_free(b), tg_status::TG_OK);
            }
        }
    }
    // SAFETY: handle from open_emu.
    unsafe { tg_device_close(dev) };
}

#[test]
fn transfers_refuse_bad_arguments_with_clear_errors() {
    let dev = open_emu();
    // SAFETY: handles from this test; every pointer is valid or deliberately NULL.
    unsafe {
        let mut q = null_mut();
        assert_eq!(
            tg_queue_create(dev, tg_queue_kind_arg(1), &mut q),
            tg_status::TG_OK
        );
        let (b, _) = buffer(dev, 4096);
        let mut x = [0u8; 64];
        let p = x.as_mut_ptr() as *mut c_void;
        let st = tg_queue_write(q, b, 0, null(), 8);
        assert_eq!(st, tg_status::TG_ERROR_NULL_POINTER);
        assert!(
            last_error().starts_with("tg_queue_write: src is NULL"),
            "{}",
            last_error()
        );
        let st = tg_queue_read(q, null_mut(), b, 0, 8);
        assert_eq!(st, tg_status::TG_ERROR_NULL_POINTER);
        assert!(
            last_error().starts_with("tg_queue_read: dst is NULL"),
            "{}",
            last_error()
        );
        // Ranges outside the buffer, also sizes no memory could hold: refused before any copy.
        for (off, n) in [(4090u64, 8u64), (0, u64::MAX), (u64::MAX, 1)] {
            assert_eq!(
                tg_queue_write(q, b, off, p, n),
                tg_status::TG_ERROR_INVALID_ARGUMENT
            );
            assert!(
                last_error().contains("outside the buffer of 4096 bytes"),
                "{}",
                last_error()
            );
            assert_eq!(
                tg_queue_read(q, p, b, off, n),
                tg_status::TG_ERROR_INVALID_ARGUMENT
            );
            assert!(
                last_error().starts_with("tg_queue_read: src: range"),
                "{}",
                last_error()
            );
        }
        assert_eq!(
            tg_queue_fill(q, b, 0, 0, 3, 1),
            tg_status::TG_ERROR_INVALID_ARGUMENT
        );
        assert!(
            last_error().contains("elem_bytes 3 must be 1, 2 or 4"),
            "{}",
            last_error()
        );
        assert_eq!(
            tg_queue_fill(q, b, 1, 0, 4, 1),
            tg_status::TG_ERROR_INVALID_ARGUMENT
        );
        assert!(last_error().contains("not aligned"), "{}", last_error());
        assert_eq!(
            tg_queue_fill(q, b, 0, 0x1FF, 1, 1),
            tg_status::TG_ERROR_INVALID_ARGUMENT
        );
        assert_eq!(
            tg_queue_fill(q, b, 4092, 1, 4, 2),
            tg_status::TG_ERROR_INVALID_ARGUMENT
        );
        // Wrong handles.
        assert_eq!(
            tg_queue_write(q, q as *const tg_buf, 0, p, 1),
            tg_status::TG_ERROR_INVALID_HANDLE
        );
        assert_eq!(
            tg_queue_read(b as *const tg_queue, p, b, 0, 1),
            tg_status::TG_ERROR_INVALID_HANDLE
        );
        assert_eq!(
            tg_queue_fill(null(), b, 0, 0, 1, 1),
            tg_status::TG_ERROR_INVALID_HANDLE
        );
        // Zero sizes are no-ops, NULL pointers allowed.
        assert_eq!(tg_queue_write(q, b, 4096, null(), 0), tg_status::TG_OK);
        assert_eq!(tg_queue_read(q, null_mut(), b, 4096, 0), tg_status::TG_OK);
        assert_eq!(tg_queue_fill(q, b, 4096, 0, 4, 0), tg_status::TG_OK);
        // A buffer of another device.
        let other = open_emu();
        let (ob, _) = buffer(other, 4096);
        assert_eq!(
            tg_queue_write(q, ob, 0, p, 1),
            tg_status::TG_ERROR_INVALID_ARGUMENT
        );
        assert!(last_error().contains("another device"), "{}", last_error());
        tg_buf_free(ob);
        tg_device_close(other);
        tg_queue_destroy(q);
        tg_buf_free(b);
        tg_device_close(dev);
    }
}

fn empty_listing() -> tg_device_listing {
    tg_device_listing {
        struct_size: 0,
        name: [0; 64],
        uuid: [0xEE; 16],
        pci_bus_id: [0; 32],
        backend: tg_backend::TG_BACKEND_RM,
        emulated: false,
        spec: [0; 32],
    }
}

fn c_field(f: &[std::ffi::c_char]) -> String {
    // SAFETY: the library NUL-terminates the fields it fills.
    unsafe { CStr::from_ptr(f.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

#[test]
fn device_count_and_list_without_opening() {
    // SAFETY: pointers valid or deliberately NULL.
    unsafe {
        let mut n = 99u32;
        assert_eq!(tg_device_count(c"emu".as_ptr(), &mut n), tg_status::TG_OK);
        assert_eq!(n, 1);
        assert_eq!(
            tg_device_count(c"emu".as_ptr(), null_mut()),
            tg_status::TG_ERROR_NULL_POINTER
        );
        let st = tg_device_count(c"gpu0".as_ptr(), &mut n);
        assert_eq!(st, tg_status::TG_ERROR_INVALID_ARGUMENT);
        assert!(last_error().contains("gpu0"), "{}", last_error());
        assert_eq!(n, 1, "untouched on failure");

        // Ask for the count only.
        let mut count = 0u32;
        assert_eq!(
            tg_device_list(c"emu".as_ptr(), null_mut(), 0, &mut count),
            tg_status::TG_OK
        );
        assert_eq!(count, 1);
        // Two slots, one GPU: the second slot stays as it was.
        let mut out = [empty_listing(), empty_listing()];
        out[0].struct_size = std::mem::size_of::<tg_device_listing>() as u32;
        count = 0;
        assert_eq!(
            tg_device_list(c"emu".as_ptr(), out.as_mut_ptr(), 2, &mut count),
            tg_status::TG_OK,
            "{}",
            last_error()
        );
        assert_eq!(count, 1);
        let l = &out[0];
        assert_eq!(
            l.struct_size as usize,
            std::mem::size_of::<tg_device_listing>()
        );
        assert_eq!(c_field(&l.spec), "emu");
        assert_eq!(c_field(&l.name), "ga10b");
        assert_eq!(c_field(&l.pci_bus_id), "0000:00:00.0");
        assert_eq!(l.backend, tg_backend::TG_BACKEND_NVGPU);
        assert!(l.emulated);
        assert_eq!(&l.uuid[8..12], &0x17bu32.to_le_bytes());
        assert_eq!(out[1].struct_size, 0);
        assert_eq!(out[1].uuid, [0xEE; 16]);
        // The listed spec opens the GPU, whose info names it the same.
        let mut dev = null_mut();
        assert_eq!(tg_device_open(l.spec.as_ptr(), &mut dev), tg_status::TG_OK);
        let mut info: tg_device_info = std::mem::zeroed();
        info.struct_size = std::mem::size_of::<tg_device_info>() as u32;
        assert_eq!(tg_device_get_info(dev, &mut info), tg_status::TG_OK);
        assert_eq!(c_field(&info.name), c_field(&l.name));
        tg_device_close(dev);

        // Refusals: struct_size, NULL out with a capacity, NULL count.
        let mut small = [empty_listing()];
        small[0].struct_size = 8;
        let st = tg_device_list(c"emu".as_ptr(), small.as_mut_ptr(), 1, &mut count);
        assert_eq!(st, tg_status::TG_ERROR_INVALID_ARGUMENT);
        assert!(
            last_error().contains("sizeof(tg_device_listing)"),
            "{}",
            last_error()
        );
        assert_eq!(small[0].uuid, [0xEE; 16]);
        let st = tg_device_list(c"emu".as_ptr(), null_mut(), 1, &mut count);
        assert_eq!(st, tg_status::TG_ERROR_NULL_POINTER);
        let st = tg_device_list(c"emu".as_ptr(), out.as_mut_ptr(), 2, null_mut());
        assert_eq!(st, tg_status::TG_ERROR_NULL_POINTER);
    }
}

#[test]
fn attributes_and_memory_info() {
    let dev = open_emu();
    // SAFETY: handles from this test; pointers valid or deliberately NULL.
    unsafe {
        let mut info: tg_device_info = std::mem::zeroed();
        info.struct_size = std::mem::size_of::<tg_device_info>() as u32;
        assert_eq!(tg_device_get_info(dev, &mut info), tg_status::TG_OK);
        let get = |a: u32| {
            let mut v = -1i64;
            let st = tg_device_get_attribute(dev, a, &mut v);
            (st, v)
        };
        assert_eq!(
            get(TG_DEVICE_ATTR_SM_COUNT),
            (tg_status::TG_OK, i64::from(info.sm_count))
        );
        assert_eq!(
            get(TG_DEVICE_ATTR_COMPUTE_CAPABILITY_MAJOR),
            (tg_status::TG_OK, 8)
        );
        assert_eq!(get(TG_DEVICE_ATTR_INTEGRATED), (tg_status::TG_OK, 1));
        assert_eq!(
            get(TG_DEVICE_ATTR_TOTAL_MEMORY_BYTES),
            (tg_status::TG_OK, info.memory_bytes as i64)
        );
        let (st, v) = get(TG_DEVICE_ATTR_MEMORY_CLOCK_RATE_KHZ);
        assert_eq!(
            (st, v),
            (tg_status::TG_ERROR_NOT_SUPPORTED, -1),
            "value untouched"
        );
        assert!(
            last_error().starts_with("tg_device_get_attribute: memory_clock_rate_khz"),
            "{}",
            last_error()
        );
        for bad in [0, DeviceAttribute::ALL.len() as u32 + 1, u32::MAX] {
            assert_eq!(get(bad).0, tg_status::TG_ERROR_INVALID_ARGUMENT);
            assert!(
                last_error().contains(&format!("attr {bad}")),
                "{}",
                last_error()
            );
        }
        assert_eq!(
            tg_device_get_attribute(dev, TG_DEVICE_ATTR_WARP_SIZE, null_mut()),
            tg_status::TG_ERROR_NULL_POINTER
        );
        assert_eq!(
            tg_device_get_attribute(null(), TG_DEVICE_ATTR_WARP_SIZE, &mut 0),
            tg_status::TG_ERROR_INVALID_HANDLE
        );

        let (mut free, mut total) = (0u64, 0u64);
        assert_eq!(
            tg_device_memory_info(dev, &mut free, &mut total),
            tg_status::TG_OK
        );
        assert!(total > 0 && free <= total, "free {free} total {total}");
        assert_eq!(
            tg_device_memory_info(dev, null_mut(), &mut total),
            tg_status::TG_ERROR_NULL_POINTER
        );
        assert_eq!(
            tg_device_memory_info(dev, &mut free, null_mut()),
            tg_status::TG_ERROR_NULL_POINTER
        );
        tg_device_close(dev);
    }
}

/// The header's attribute constants are the Rust API's values, and cover every attribute.
#[test]
fn attribute_constants_match_the_rust_api() {
    let pairs = [
        (
            TG_DEVICE_ATTR_MAX_THREADS_PER_BLOCK,
            DeviceAttribute::MaxThreadsPerBlock,
        ),
        (
            TG_DEVICE_ATTR_MAX_BLOCK_DIM_X,
            DeviceAttribute::MaxBlockDimX,
        ),
        (
            TG_DEVICE_ATTR_MAX_BLOCK_DIM_Y,
            DeviceAttribute::MaxBlockDimY,
        ),
        (
            TG_DEVICE_ATTR_MAX_BLOCK_DIM_Z,
            DeviceAttribute::MaxBlockDimZ,
        ),
        (TG_DEVICE_ATTR_MAX_GRID_DIM_X, DeviceAttribute::MaxGridDimX),
        (TG_DEVICE_ATTR_MAX_GRID_DIM_Y, DeviceAttribute::MaxGridDimY),
        (TG_DEVICE_ATTR_MAX_GRID_DIM_Z, DeviceAttribute::MaxGridDimZ),
        (
            TG_DEVICE_ATTR_MAX_SHARED_MEMORY_PER_BLOCK,
            DeviceAttribute::MaxSharedMemoryPerBlock,
        ),
        (
            TG_DEVICE_ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            DeviceAttribute::MaxSharedMemoryPerBlockOptin,
        ),
        (
            TG_DEVICE_ATTR_RESERVED_SHARED_MEMORY_PER_BLOCK,
            DeviceAttribute::ReservedSharedMemoryPerBlock,
        ),
        (
            TG_DEVICE_ATTR_MAX_SHARED_MEMORY_PER_SM,
            DeviceAttribute::MaxSharedMemoryPerSm,
        ),
        (
            TG_DEVICE_ATTR_TOTAL_CONSTANT_MEMORY,
            DeviceAttribute::TotalConstantMemory,
        ),
        (TG_DEVICE_ATTR_WARP_SIZE, DeviceAttribute::WarpSize),
        (
            TG_DEVICE_ATTR_MAX_REGISTERS_PER_BLOCK,
            DeviceAttribute::MaxRegistersPerBlock,
        ),
        (
            TG_DEVICE_ATTR_MAX_REGISTERS_PER_SM,
            DeviceAttribute::MaxRegistersPerSm,
        ),
        (
            TG_DEVICE_ATTR_MAX_THREADS_PER_SM,
            DeviceAttribute::MaxThreadsPerSm,
        ),
        (
            TG_DEVICE_ATTR_MAX_BLOCKS_PER_SM,
            DeviceAttribute::MaxBlocksPerSm,
        ),
        (TG_DEVICE_ATTR_SM_COUNT, DeviceAttribute::SmCount),
        (
            TG_DEVICE_ATTR_COMPUTE_CAPABILITY_MAJOR,
            DeviceAttribute::ComputeCapabilityMajor,
        ),
        (
            TG_DEVICE_ATTR_COMPUTE_CAPABILITY_MINOR,
            DeviceAttribute::ComputeCapabilityMinor,
        ),
        (TG_DEVICE_ATTR_CLOCK_RATE_KHZ, DeviceAttribute::ClockRateKhz),
        (
            TG_DEVICE_ATTR_MEMORY_CLOCK_RATE_KHZ,
            DeviceAttribute::MemoryClockRateKhz,
        ),
        (
            TG_DEVICE_ATTR_MEMORY_BUS_WIDTH_BITS,
            DeviceAttribute::MemoryBusWidthBits,
        ),
        (TG_DEVICE_ATTR_L2_CACHE_BYTES, DeviceAttribute::L2CacheBytes),
        (
            TG_DEVICE_ATTR_TOTAL_MEMORY_BYTES,
            DeviceAttribute::TotalMemoryBytes,
        ),
        (TG_DEVICE_ATTR_INTEGRATED, DeviceAttribute::Integrated),
        (
            TG_DEVICE_ATTR_CAN_MAP_HOST_MEMORY,
            DeviceAttribute::CanMapHostMemory,
        ),
        (
            TG_DEVICE_ATTR_UNIFIED_ADDRESSING,
            DeviceAttribute::UnifiedAddressing,
        ),
        (
            TG_DEVICE_ATTR_CONCURRENT_KERNELS,
            DeviceAttribute::ConcurrentKernels,
        ),
        (
            TG_DEVICE_ATTR_ASYNC_ENGINE_COUNT,
            DeviceAttribute::AsyncEngineCount,
        ),
        (TG_DEVICE_ATTR_ECC_ENABLED, DeviceAttribute::EccEnabled),
        (TG_DEVICE_ATTR_PCI_DOMAIN_ID, DeviceAttribute::PciDomainId),
        (TG_DEVICE_ATTR_PCI_BUS_ID, DeviceAttribute::PciBusId),
        (TG_DEVICE_ATTR_PCI_DEVICE_ID, DeviceAttribute::PciDeviceId),
        (
            TG_DEVICE_ATTR_PCI_VENDOR_DEVICE_ID,
            DeviceAttribute::PciVendorDeviceId,
        ),
        (
            TG_DEVICE_ATTR_PCI_SUBSYSTEM_ID,
            DeviceAttribute::PciSubsystemId,
        ),
        (
            TG_DEVICE_ATTR_COOPERATIVE_LAUNCH,
            DeviceAttribute::CooperativeLaunch,
        ),
        (
            TG_DEVICE_ATTR_CLUSTER_LAUNCH,
            DeviceAttribute::ClusterLaunch,
        ),
        (
            TG_DEVICE_ATTR_KERNEL_EXEC_TIMEOUT,
            DeviceAttribute::KernelExecTimeout,
        ),
        (TG_DEVICE_ATTR_COMPUTE_MODE, DeviceAttribute::ComputeMode),
        (TG_DEVICE_ATTR_MAX_PITCH, DeviceAttribute::MaxPitch),
        (
            TG_DEVICE_ATTR_TEXTURE_ALIGNMENT,
            DeviceAttribute::TextureAlignment,
        ),
        (
            TG_DEVICE_ATTR_TEXTURE_PITCH_ALIGNMENT,
            DeviceAttribute::TexturePitchAlignment,
        ),
        (
            TG_DEVICE_ATTR_MAX_TEXTURE_1D_LINEAR_WIDTH,
            DeviceAttribute::MaxTexture1dLinearWidth,
        ),
        (
            TG_DEVICE_ATTR_MAX_TEXTURE_2D_LINEAR_WIDTH,
            DeviceAttribute::MaxTexture2dLinearWidth,
        ),
        (
            TG_DEVICE_ATTR_MAX_TEXTURE_2D_LINEAR_HEIGHT,
            DeviceAttribute::MaxTexture2dLinearHeight,
        ),
        (
            TG_DEVICE_ATTR_MAX_TEXTURE_2D_LINEAR_PITCH,
            DeviceAttribute::MaxTexture2dLinearPitch,
        ),
        (
            TG_DEVICE_ATTR_GLOBAL_L1_CACHE_SUPPORTED,
            DeviceAttribute::GlobalL1CacheSupported,
        ),
        (
            TG_DEVICE_ATTR_LOCAL_L1_CACHE_SUPPORTED,
            DeviceAttribute::LocalL1CacheSupported,
        ),
        (
            TG_DEVICE_ATTR_VIRTUAL_ADDRESS_BITS,
            DeviceAttribute::VirtualAddressBits,
        ),
    ];
    assert_eq!(pairs.len(), DeviceAttribute::ALL.len());
    for (c, a) in pairs {
        assert_eq!(c, a as u32, "{a:?}");
    }
}
