//! Memory: allocations, copies, memsets, pointer attributes.

use crate::*;
use std::ffi::c_void;
use std::ptr::null_mut;

#[test]
fn memory_copies_and_memsets() {
    setup();
    let n = 1000usize;
    let d = alloc(n * 4);
    let src: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(2654435761)).collect();
    htod(d, &src);
    assert_eq!(dtoh::<u32>(d, n), src);
    // Device to device, at an offset.
    let d2 = alloc(n * 4);
    check(
        cu!(cuMemcpyDtoD_v2(d2 + 40, d, (n - 10) * 4): u64, u64, usize),
        "DtoD",
    );
    let back = dtoh::<u32>(d2, n);
    assert_eq!(&back[10..], &src[..n - 10]);
    // Memsets.
    check(
        cu!(cuMemsetD32_v2(d, 0xdeadbeef, n): u64, u32, usize),
        "D32",
    );
    assert!(dtoh::<u32>(d, n).iter().all(|&x| x == 0xdeadbeef));
    check(
        cu!(cuMemsetD16_v2(d + 2, 0x1234, 3): u64, u16, usize),
        "D16",
    );
    let b = dtoh::<u16>(d, 5);
    assert_eq!(b, vec![0xbeef, 0x1234, 0x1234, 0x1234, 0xbeef]);
    check(cu!(cuMemsetD8_v2(d + 1, 0x5a, 2): u64, u8, usize), "D8");
    let b = dtoh::<u8>(d, 4);
    assert_eq!(b, vec![0xef, 0x5a, 0x5a, 0x12]);
    // Pinned host memory: async copies through it.
    let mut h: *mut c_void = null_mut();
    check(
        cu!(cuMemHostAlloc(&mut h, n * 4, 0): *mut *mut c_void, usize, u32),
        "host alloc",
    );
    let hs = unsafe { std::slice::from_raw_parts_mut(h as *mut u32, n) };
    for (i, x) in hs.iter_mut().enumerate() {
        *x = i as u32 + 7;
    }
    check(
        cu!(cuMemcpyHtoDAsync_v2(d, h, n * 4, null_mut()): u64, *const c_void, usize, *mut c_void),
        "HtoDAsync",
    );
    check(cu!(cuStreamSynchronize(null_mut()): *mut c_void), "sync");
    assert_eq!(dtoh::<u32>(d, 3), vec![7, 8, 9]);
    hs.fill(0);
    check(
        cu!(cuMemcpyDtoHAsync_v2(h, d, n * 4, null_mut()): *mut c_void, u64, usize, *mut c_void),
        "DtoHAsync",
    );
    check(cu!(cuStreamSynchronize(null_mut()): *mut c_void), "sync");
    assert!(hs.iter().enumerate().all(|(i, &x)| x == i as u32 + 7));
    let mut dp = 0u64;
    check(
        cu!(cuMemHostGetDevicePointer_v2(&mut dp, h, 0): *mut u64, *mut c_void, u32),
        "device pointer",
    );
    assert_ne!(dp, 0);
    check(cu!(cuMemFreeHost(h): *mut c_void), "free host");
    // Address range.
    let (mut base, mut size) = (0u64, 0usize);
    check(
        cu!(cuMemGetAddressRange_v2(&mut base, &mut size, d + 100): *mut u64, *mut usize, u64),
        "range",
    );
    assert_eq!((base, size), (d, n * 4));
    // Out of range and bad frees.
    let mut big = vec![0u8; n * 4 + 1];
    assert_eq!(
        cu!(cuMemcpyHtoD_v2(d, big.as_mut_ptr() as *const c_void, n * 4 + 1): u64, *const c_void, usize),
        1
    );
    // NULL device pointers are refused (not copied to, which would fault the device).
    assert_eq!(
        cu!(cuMemcpyHtoD_v2(0, big.as_ptr() as *const c_void, 16): u64, *const c_void, usize),
        1
    );
    assert_eq!(
        cu!(cuMemcpyDtoH_v2(big.as_mut_ptr() as *mut c_void, 0, 16): *mut c_void, u64, usize),
        1
    );
    assert_eq!(cu!(cuMemcpyDtoD_v2(d, 0, 16): u64, u64, usize), 1);
    assert_eq!(cu!(cuMemsetD8_v2(0, 1, 16): u64, u8, usize), 1);
    assert_eq!(dtoh::<u32>(d, 3), vec![7, 8, 9], "the device still works");
    assert_eq!(cu!(cuMemFree_v2(d + 4): u64), 1);
    check(cu!(cuMemFree_v2(d): u64), "free");
    assert_eq!(cu!(cuMemFree_v2(d): u64), 1, "double free");
    check(cu!(cuMemFree_v2(d2): u64), "free");
    let (mut free, mut total) = (0usize, 0usize);
    check(
        cu!(cuMemGetInfo_v2(&mut free, &mut total): *mut usize, *mut usize),
        "info",
    );
    assert!(free <= total && total > 0);
}

#[test]
fn pointer_attributes() {
    let ctx = setup();
    let d = alloc(100);
    let mut t = 0u32;
    check(
        cu!(cuPointerGetAttribute(ptr(&mut t), 2, d + 10): *mut c_void, i32, u64),
        "memory type",
    );
    assert_eq!(t, 2);
    let mut c = null_mut::<c_void>();
    check(
        cu!(cuPointerGetAttribute(ptr(&mut c), 1, d): *mut c_void, i32, u64),
        "context",
    );
    assert_eq!(c, ctx);
    let mut start = 0u64;
    check(
        cu!(cuPointerGetAttribute(ptr(&mut start), 11, d + 99): *mut c_void, i32, u64),
        "start",
    );
    assert_eq!(start, d);
    assert_eq!(
        cu!(cuPointerGetAttribute(ptr(&mut t), 2, d + 100): *mut c_void, i32, u64),
        1
    );
}

/// Memsets and pageable host-to-device copies are recorded in stream order without waiting
/// for the stream's earlier work: behind a kernel that spins until a host flag is set, they
/// return while the stream is still busy, and land after the kernel's writes and before the
/// stream's later work.
#[test]
fn memsets_and_pageable_copies_wait_for_nothing_and_keep_stream_order() {
    setup();
    let m = load_fixture("kernels");
    let spin = function(m, "spin_until");
    let fill = function(m, "fill_u32");
    let n = 4096usize;
    let d = alloc(n * 4);
    let mut s = null_mut();
    check(
        cu!(cuStreamCreate(&mut s, 1): *mut *mut c_void, u32),
        "stream",
    );
    let (flag, flag_dev) = host_flag();
    // The stream: fill with 1, spin (at most 60 s of GPU time) until the flag is set, ...
    let (mut p, mut v, mut cnt) = (d, 1u32, n as u32);
    launch(
        fill,
        (n / 128) as u32,
        128,
        s,
        &mut [ptr(&mut p), ptr(&mut v), ptr(&mut cnt)],
    );
    let (mut fp, mut max_ns) = (flag_dev, 60_000_000_000u64);
    launch(spin, 1, 32, s, &mut [ptr(&mut fp), ptr(&mut max_ns)]);
    // ... memset words [0, n) to 7, bytes of words [1, 3) to 0x5a, ...
    check(
        cu!(cuMemsetD32Async(d, 7, n, s): u64, u32, usize, *mut c_void),
        "memset D32",
    );
    check(
        cu!(cuMemsetD8Async(d + 4, 0x5a, 8, s): u64, u8, usize, *mut c_void),
        "memset D8",
    );
    // ... a pageable copy over words [10, 14) (the source is reused at once: it was staged), ...
    let mut src = [0xc0de_0000u32, 0xc0de_0001, 0xc0de_0002, 0xc0de_0003];
    check(
        cu!(cuMemcpyHtoDAsync_v2(d + 40, src.as_ptr() as *const c_void, 16, s): u64, *const c_void, usize, *mut c_void),
        "pageable HtoD",
    );
    src.fill(0);
    // ... and 16-bit 9s over the last word.
    check(
        cu!(cuMemsetD16Async(d + (n as u64 - 1) * 4, 9, 2, s): u64, u16, usize, *mut c_void),
        "memset D16",
    );
    // None of it waited for the spinning kernel.
    assert_eq!(
        cu!(cuStreamQuery(s): *mut c_void),
        600,
        "the stream is still spinning"
    );
    unsafe { (flag as *mut u32).write_volatile(1) };
    check(cu!(cuStreamSynchronize(s): *mut c_void), "sync");
    let got = dtoh::<u32>(d, n);
    let mut want = vec![7u32; n];
    want[1] = 0x5a5a_5a5a;
    want[2] = 0x5a5a_5a5a;
    want[10..14].copy_from_slice(&[0xc0de_0000, 0xc0de_0001, 0xc0de_0002, 0xc0de_0003]);
    want[n - 1] = 0x0009_0009;
    assert_eq!(got, want);
    check(cu!(cuStreamDestroy_v2(s): *mut c_void), "destroy");
    check(cu!(cuMemFreeHost(flag): *mut c_void), "free flag");
}

/// cuMemGetInfo answers what libtegragpu's `Device::memory_info` answers (the total; the free
/// bytes change as memory is allocated).
#[test]
fn memory_info_is_libtegragpus() {
    setup();
    let (mut free, mut total) = (0usize, 0usize);
    check(
        cu!(cuMemGetInfo_v2(&mut free, &mut total): *mut usize, *mut usize),
        "info",
    );
    let mut mem = 0usize;
    check(
        cu!(cuDeviceTotalMem_v2(&mut mem, 0): *mut usize, i32),
        "total mem",
    );
    assert_eq!(total, mem);
    assert!(free > 0 && free <= total, "{free} {total}");
}

/// Registered host memory: recorded, copies to and from it work (through staging), and what
/// needs a device address of it is refused by name.
#[test]
fn registered_host_memory() {
    setup();
    let n = 5000usize;
    let mut host: Vec<u32> = (0..n as u32).map(|i| i * 3 + 1).collect();
    let p = host.as_mut_ptr() as *mut c_void;
    check(
        cu!(cuMemHostRegister_v2(p, n * 4, 1): *mut c_void, usize, u32),
        "register",
    );
    let mut flags = 0u32;
    check(
        cu!(cuMemHostGetFlags(&mut flags, p): *mut u32, *mut c_void),
        "flags",
    );
    assert_eq!(flags, 1);
    // Overlapping ranges, and a range inside it, are refused.
    assert_eq!(
        cu!(cuMemHostRegister_v2((p as *mut u8).wrapping_add(8) as *mut c_void, 16, 0): *mut c_void, usize, u32),
        712
    );
    // Copies through it, on a stream.
    let d = alloc(n * 4);
    let mut s = null_mut();
    check(
        cu!(cuStreamCreate(&mut s, 0): *mut *mut c_void, u32),
        "stream",
    );
    check(
        cu!(cuMemcpyHtoDAsync_v2(d, p, n * 4, s): u64, *const c_void, usize, *mut c_void),
        "HtoDAsync from registered memory",
    );
    check(
        cu!(cuMemsetD32Async(d, 9, 10, s): u64, u32, usize, *mut c_void),
        "memset",
    );
    check(
        cu!(cuMemcpyDtoHAsync_v2(p, d, n * 4, s): *mut c_void, u64, usize, *mut c_void),
        "DtoHAsync into registered memory",
    );
    check(cu!(cuStreamSynchronize(s): *mut c_void), "sync");
    assert!(host[..10].iter().all(|&x| x == 9));
    assert!(host[10..]
        .iter()
        .enumerate()
        .all(|(i, &x)| x == (i as u32 + 10) * 3 + 1));
    let mut dp = 0u64;
    let mut t = 0u32;
    check(
        cu!(cuPointerGetAttribute(ptr(&mut t), 2, p as u64 + 40): *mut c_void, i32, u64),
        "memory type",
    );
    assert_eq!(t, 1, "host memory");
    let mut can = -1;
    check(
        cu!(cuDeviceGetAttribute(&mut can, 91, 0): *mut i32, i32, i32),
        "CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM",
    );
    // A page-aligned range of its own (a registration maps whole pages).
    let layout = std::alloc::Layout::from_size_align(8192, 4096).unwrap();
    let other = unsafe { std::alloc::alloc_zeroed(layout) };
    if emulated() {
        // Jetson: recorded only. No device address: refused with the reason.
        assert_eq!(can, 0);
        assert_eq!(
            cu!(cuMemHostGetDevicePointer_v2(&mut dp, p, 0): *mut u64, *mut c_void, u32),
            801
        );
        assert_eq!(
            cu!(cuMemHostRegister_v2(other as *mut c_void, 8192, 2): *mut c_void, usize, u32),
            801,
            "DEVICEMAP"
        );
    } else {
        // Desktop GPUs: mapped at its own addresses; a kernel writes through the host pointer.
        assert_eq!(can, 1);
        check(
            cu!(cuMemHostGetDevicePointer_v2(&mut dp, p, 0): *mut u64, *mut c_void, u32),
            "device pointer",
        );
        assert_eq!(dp, p as u64, "the device pointer is the host pointer");
        let mut va = 0u64;
        check(
            cu!(cuPointerGetAttribute(ptr(&mut va), 3, p as u64 + 40): *mut c_void, i32, u64),
            "device pointer attribute",
        );
        assert_eq!(va, p as u64 + 40);
        check(
            cu!(cuMemHostRegister_v2(other as *mut c_void, 8192, 2): *mut c_void, usize, u32),
            "DEVICEMAP",
        );
        let m = load_fixture("kernels");
        let fill = function(m, "fill_u32");
        let (mut a, mut v, mut cnt) = (p as u64 + 400, 77u32, 16u32);
        launch(
            fill,
            1,
            32,
            s,
            &mut [ptr(&mut a), ptr(&mut v), ptr(&mut cnt)],
        );
        let (mut a2, mut v2) = (other as u64 + 4096, 78u32);
        launch(
            fill,
            1,
            32,
            s,
            &mut [ptr(&mut a2), ptr(&mut v2), ptr(&mut cnt)],
        );
        check(cu!(cuStreamSynchronize(s): *mut c_void), "sync");
        let hp = host.as_ptr();
        let h: Vec<u32> = (0..n)
            .map(|i| unsafe { hp.add(i).read_volatile() })
            .collect();
        assert!(
            h[100..116].iter().all(|&x| x == 77),
            "the kernel wrote the host memory"
        );
        assert_eq!(h[116], 116 * 3 + 1, "and nothing after it");
        let op = unsafe { other.add(4096) } as *const u32;
        let o: Vec<u32> = (0..17)
            .map(|i| unsafe { op.add(i).read_volatile() })
            .collect();
        assert!(o[..16].iter().all(|&x| x == 78) && o[16] == 0);
        check(
            cu!(cuMemHostUnregister(other as *mut c_void): *mut c_void),
            "unregister other",
        );
        check(cu!(cuModuleUnload(m): *mut c_void), "unload");
    }
    unsafe { std::alloc::dealloc(other, layout) };
    check(cu!(cuMemHostUnregister(p): *mut c_void), "unregister");
    assert_eq!(cu!(cuMemHostUnregister(p): *mut c_void), 713);
    assert_eq!(
        cu!(cuMemHostRegister_v2(null_mut(), 64, 0): *mut c_void, usize, u32),
        1
    );
    check(cu!(cuStreamDestroy_v2(s): *mut c_void), "destroy");
}

/// cuMemGetHandleForAddressRange: a dma-buf fd for a page-aligned range of a device allocation.
/// `CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED` (124) says whether ranges work (desktop GPUs); where
/// it reads 0 (Jetson, the emulated Orin) the whole allocation still exports and a part of it
/// is CUDA_ERROR_NOT_SUPPORTED. Bad arguments are CUDA_ERROR_INVALID_VALUE (1).
#[test]
fn dma_buf_handles_for_address_ranges() {
    setup();
    const INVALID: CUresult = 1;
    const NOT_SUPPORTED: CUresult = 801;
    let mut supported = -1;
    check(
        cu!(cuDeviceGetAttribute(&mut supported, 124, 0): *mut i32, i32, i32),
        "DMA_BUF_SUPPORTED",
    );
    assert!(supported == 0 || supported == 1, "{supported}");
    let d = alloc(3 * 4096);
    let mut base = 0u64;
    let mut size = 0usize;
    check(
        cu!(cuMemGetAddressRange_v2(&mut base, &mut size, d): *mut u64, *mut usize, u64),
        "range",
    );
    let get = |h: *mut c_void, p: u64, n: usize, t: i32, fl: u64| -> CUresult {
        cu!(cuMemGetHandleForAddressRange(h, p, n, t, fl): *mut c_void, u64, usize, i32, u64)
    };
    let mut fd: i32 = -1;
    let h = &mut fd as *mut i32 as *mut c_void;
    // Bad arguments, nothing written.
    assert_eq!(get(null_mut(), d, 4096, 1, 0), INVALID, "NULL handle");
    assert_eq!(get(h, d, 4096, 2, 0), INVALID, "handle type 2");
    assert_eq!(get(h, d, 4096, 1, 2), INVALID, "flags 2");
    assert_eq!(get(h, d + 1, 4096, 1, 0), INVALID, "unaligned address");
    assert_eq!(get(h, d, 100, 1, 0), INVALID, "unaligned size");
    assert_eq!(get(h, d, 0, 1, 0), INVALID, "size 0");
    assert_eq!(get(h, 0x10, 4096, 1, 0), INVALID, "not an allocation");
    assert_eq!(get(h, d, size + 4096, 1, 0), INVALID, "past the allocation");
    assert_eq!(fd, -1, "a failed call wrote the handle");
    let is_dmabuf = |fd: i32, bytes: usize| {
        let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}")).unwrap_or_default();
        assert!(
            info.contains("exp_name:") && info.contains(&format!("size:\t{bytes}")),
            "fd {fd} is not a dma-buf of {bytes} bytes: {info}"
        );
    };
    let whole = get(h, base, size, 1, 0);
    if emulated() {
        // The emulated kernel's dma-buf fds are not the kernel's.
        assert_eq!(whole, OK, "whole allocation");
        assert!(fd >= 0);
    } else {
        check(whole, "whole allocation");
        is_dmabuf(fd, size);
    }
    unsafe { libc::close(fd) };
    fd = -1;
    let part = get(h, base + 4096, 4096, 1, 0);
    if supported == 1 {
        check(part, "one page");
        is_dmabuf(fd, 4096);
        unsafe { libc::close(fd) };
        fd = -1;
        // The PCIe mapping type: a dma-buf where the platform maps it so, else
        // CUDA_ERROR_NOT_SUPPORTED (NVIDIA's libcuda answers the same on an H100 in a virtual
        // machine).
        match get(h, base, 2 * 4096, 1, 1) {
            OK => {
                is_dmabuf(fd, 2 * 4096);
                unsafe { libc::close(fd) };
            }
            r => assert_eq!(r, NOT_SUPPORTED, "PCIe mapping type"),
        }
    } else {
        assert_eq!(part, NOT_SUPPORTED, "a part of the allocation");
        assert_eq!(fd, -1);
    }
}
