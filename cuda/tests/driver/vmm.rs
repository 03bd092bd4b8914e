//! Virtual memory management: reserved ranges, physical memory, mappings at chosen addresses.

use crate::*;
use std::ffi::c_void;
use std::ptr::null_mut;

#[repr(C)]
#[derive(Clone, Copy)]
struct Prop {
    type_: i32,
    handle_types: i32,
    loc_type: i32,
    loc_id: i32,
    win32: *mut c_void,
    compression: u8,
    rdma: u8,
    usage: u16,
    reserved: [u8; 4],
}

const MIB: usize = 1 << 20;

fn prop() -> Prop {
    Prop {
        type_: 1,
        handle_types: 0,
        loc_type: 1,
        loc_id: 0,
        win32: null_mut(),
        compression: 0,
        rdma: 0,
        usage: 0,
        reserved: [0; 4],
    }
}

fn create(size: usize, p: &Prop) -> (u32, u64) {
    let mut h = 0u64;
    let r = cu!(cuMemCreate(&mut h, size, p, 0): *mut u64, usize, *const Prop, u64);
    (r, h)
}

/// A fresh 2 MiB allocation without shareable handle types.
fn h_plain() -> u64 {
    let (r, h) = create(2 * MIB, &prop());
    assert_eq!(r, 0);
    h
}

fn set_access(ptr: u64, size: usize, flags: i32) -> u32 {
    let desc = [1i32, 0, flags];
    cu!(cuMemSetAccess(ptr, size, desc.as_ptr() as *const c_void, 1): u64, usize, *const c_void, usize)
}

fn get_access(ptr: u64) -> (u32, u64) {
    let loc = [1i32, 0];
    let mut f = 99u64;
    let r = cu!(cuMemGetAccess(&mut f, loc.as_ptr() as *const c_void, ptr): *mut u64, *const c_void, u64);
    (r, f)
}

#[test]
fn memory_mapped_at_reserved_addresses() {
    setup();
    let mut v = -1;
    check(
        cu!(cuDeviceGetAttribute(&mut v, 102, 0): *mut i32, i32, i32),
        "VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED",
    );
    assert_eq!(v, 1);
    // Granularity.
    for option in [0, 1] {
        let mut g = 0usize;
        check(
            cu!(cuMemGetAllocationGranularity(&mut g, &prop(), option): *mut usize, *const Prop, i32),
            "granularity",
        );
        assert_eq!(g, 2 * MIB);
    }
    let mut g = 0usize;
    assert_eq!(
        cu!(cuMemGetAllocationGranularity(&mut g, &prop(), 2): *mut usize, *const Prop, i32),
        1
    );
    let mut host = prop();
    host.loc_type = 2;

    // Physical memory.
    let (r, h) = create(4 * MIB, &prop());
    assert_eq!(r, 0);
    assert_ne!(h, 0);
    assert_eq!(
        create(MIB, &prop()).0,
        1,
        "not a multiple of the granularity"
    );
    assert_eq!(create(0, &prop()).0, 1);
    let mut fabric = prop();
    fabric.handle_types = 8;
    assert_eq!(create(2 * MIB, &fabric).0, 801, "fabric handles");
    let mut got = host;
    check(
        cu!(cuMemGetAllocationPropertiesFromHandle(&mut got, h): *mut Prop, u64),
        "properties",
    );
    assert_eq!((got.type_, got.loc_type, got.loc_id), (1, 1, 0));
    // Compression (the sample cudaCompressibleMemory) is a request the driver may decline: the
    // allocation is made, and its properties say it is not compressed. Usage flags are refused,
    // a compression type that is not one is invalid.
    let mut comp = prop();
    comp.compression = 1;
    let (r, hc) = create(2 * MIB, &comp);
    check(r, "cuMemCreate with CU_MEM_ALLOCATION_COMP_GENERIC");
    let mut gotc = comp;
    check(
        cu!(cuMemGetAllocationPropertiesFromHandle(&mut gotc, hc): *mut Prop, u64),
        "properties of the compression request",
    );
    assert_eq!(gotc.compression, 0, "compression declined");
    check(cu!(cuMemRelease(hc): u64), "release");
    comp.compression = 2;
    assert_eq!(create(2 * MIB, &comp).0, 1, "compressionType 2");
    let mut usage = prop();
    usage.usage = 1;
    let (r, ht) = create(2 * MIB, &usage);
    assert_eq!(r, 0, "CU_MEM_CREATE_USAGE_TILE_POOL");
    let mut gott = prop();
    check(
        cu!(cuMemGetAllocationPropertiesFromHandle(&mut gott, ht): *mut Prop, u64),
        "properties of the tile pool",
    );
    assert_eq!(gott.usage, 1, "the usage flag stays");
    check(cu!(cuMemRelease(ht): u64), "release");
    usage.usage = 2;
    let (r, hd) = create(2 * MIB, &usage);
    assert_eq!(r, 0, "CU_MEM_CREATE_USAGE_HW_DECOMPRESS");
    check(cu!(cuMemRelease(hd): u64), "release");
    usage.usage = 4;
    assert_eq!(create(2 * MIB, &usage).0, 1, "usage flag 4");

    // A reserved range, with the allocation mapped at its start and again 4 MiB in.
    let mut p = 0u64;
    check(
        cu!(cuMemAddressReserve(&mut p, 12 * MIB, 0, 0, 0): *mut u64, usize, usize, u64, u64),
        "reserve",
    );
    assert_eq!(p % (2 * MIB as u64), 0);
    let mut q = 0u64;
    assert_eq!(
        cu!(cuMemAddressReserve(&mut q, MIB, 0, 0, 0): *mut u64, usize, usize, u64, u64),
        1
    );
    check(
        cu!(cuMemMap(p, 4 * MIB, 0, h, 0): u64, usize, usize, u64, u64),
        "map",
    );
    let alias = p + 4 * MIB as u64;
    assert_eq!(
        cu!(cuMemMap(p + 2 * MIB as u64, 4 * MIB, 0, h, 0): u64, usize, usize, u64, u64),
        1,
        "overlaps the first mapping"
    );
    assert_eq!(
        cu!(cuMemMap(alias, 2 * MIB, 2 * MIB, h, 0): u64, usize, usize, u64, u64),
        801,
        "an offset into the allocation"
    );
    assert_eq!(
        cu!(cuMemMap(p + 10 * MIB as u64, 4 * MIB, 0, h, 0): u64, usize, usize, u64, u64),
        1,
        "past the reservation"
    );
    assert_eq!(
        cu!(cuMemMap(alias, 2 * MIB, 0, h, 0): u64, usize, usize, u64, u64),
        801,
        "part of the allocation"
    );
    check(
        cu!(cuMemMap(alias, 4 * MIB, 0, h, 0): u64, usize, usize, u64, u64),
        "map the allocation again",
    );
    assert_eq!(get_access(p), (0, 0), "no access granted yet");
    check(set_access(p, 8 * MIB, 3), "set access over both mappings");
    assert_eq!(get_access(p + 100), (0, 3));
    assert_eq!(get_access(alias + 100), (0, 3));
    assert_eq!(get_access(p + 8 * MIB as u64).0, 1, "not mapped");
    assert_eq!(set_access(p, 4 * MIB, 1), 801, "read-only access");
    assert_eq!(set_access(p, 2 * MIB, 3), 1, "part of a mapping");
    assert_eq!(set_access(p, 10 * MIB, 3), 1, "beyond the mappings");

    // The GPU writes through one address and reads through the other.
    let words = 2 * MIB / 4;
    check(
        cu!(cuMemsetD32_v2(p + 2 * MIB as u64, 0xabcd, words): u64, u32, usize),
        "memset",
    );
    assert!(dtoh::<u32>(alias + 2 * MIB as u64, words)
        .iter()
        .all(|&x| x == 0xabcd));
    let src: Vec<u32> = (0..4096u32).map(|i| i.wrapping_mul(2654435761)).collect();
    htod(alias + 4096, &src);
    assert_eq!(dtoh::<u32>(p + 4096, 4096), src);
    let m = load_fixture("kernels");
    let fill = function(m, "fill_u32");
    let (mut fp, mut fv, mut fnn) = (p + 2 * MIB as u64, 7u32, 256u32);
    launch(
        fill,
        2,
        128,
        null_mut(),
        &mut [ptr(&mut fp), ptr(&mut fv), ptr(&mut fnn)],
    );
    check(cu!(cuCtxSynchronize(): ), "sync");
    let back = dtoh::<u32>(alias + 2 * MIB as u64, 260);
    assert!(back[..256].iter().all(|&x| x == 7));
    assert_eq!(&back[256..], &[0xabcd; 4]);

    // The handle of mapped memory; released handles keep mapped memory.
    let mut h2 = 0u64;
    check(
        cu!(cuMemRetainAllocationHandle(&mut h2, (p + 100) as *mut c_void): *mut u64, *mut c_void),
        "retain",
    );
    assert_eq!(h2, h);
    check(cu!(cuMemRelease(h2): u64), "release the retained handle");
    check(cu!(cuMemRelease(h): u64), "release");
    assert_eq!(cu!(cuMemRelease(h): u64), 1, "released twice");
    assert_eq!(
        dtoh::<u32>(alias + 2 * MIB as u64, 1),
        vec![7],
        "still mapped"
    );

    // Unmapping whole mappings only; the range is freed once empty.
    assert_eq!(cu!(cuMemUnmap(p, 2 * MIB): u64, usize), 1);
    assert_eq!(cu!(cuMemAddressFree(p, 12 * MIB): u64, usize), 1, "mapped");
    check(cu!(cuMemUnmap(p, 8 * MIB): u64, usize), "unmap both");
    assert_eq!(cu!(cuMemUnmap(alias, 4 * MIB): u64, usize), 1, "unmapped");
    assert_eq!(cu!(cuMemAddressFree(p, 4 * MIB): u64, usize), 1, "size");
    check(cu!(cuMemAddressFree(p, 12 * MIB): u64, usize), "free");
    assert_eq!(cu!(cuMemAddressFree(p, 12 * MIB): u64, usize), 1, "twice");

    // Shareable as a POSIX file descriptor: imported, mapped elsewhere, the same memory.
    let mut shared = prop();
    shared.handle_types = 1;
    let (r, hs) = create(2 * MIB, &shared);
    assert_eq!(r, 0);
    let mut fd = -1i32;
    assert_eq!(
        cu!(cuMemExportToShareableHandle(ptr(&mut fd), h_plain(), 1, 0): *mut c_void, u64, i32, u64),
        1,
        "created without the POSIX fd type"
    );
    check(
        cu!(cuMemExportToShareableHandle(ptr(&mut fd), hs, 1, 0): *mut c_void, u64, i32, u64),
        "export",
    );
    assert!(fd >= 0);
    let mut hi = 0u64;
    check(
        cu!(cuMemImportFromShareableHandle(&mut hi, fd as usize as *mut c_void, 1): *mut u64, *mut c_void, i32),
        "import",
    );
    unsafe { libc::close(fd) };
    assert_ne!(hi, hs);
    let mut pa = 0u64;
    check(
        cu!(cuMemAddressReserve(&mut pa, 4 * MIB, 0, 0, 0): *mut u64, usize, usize, u64, u64),
        "reserve",
    );
    check(
        cu!(cuMemMap(pa, 2 * MIB, 0, hs, 0): u64, usize, usize, u64, u64),
        "map the original",
    );
    check(
        cu!(cuMemMap(pa + 2 * MIB as u64, 2 * MIB, 0, hi, 0): u64, usize, usize, u64, u64),
        "map the import",
    );
    check(set_access(pa, 4 * MIB, 3), "access");
    htod(pa + 4096, &src);
    assert_eq!(dtoh::<u32>(pa + 2 * MIB as u64 + 4096, 4096), src);
    check(cu!(cuMemRelease(hs): u64), "release");
    check(cu!(cuMemRelease(hi): u64), "release the import");
    check(cu!(cuMemUnmap(pa, 4 * MIB): u64, usize), "unmap");
    check(cu!(cuMemAddressFree(pa, 4 * MIB): u64, usize), "free");
    let mut bad = 0u64;
    assert_ne!(
        cu!(cuMemImportFromShareableHandle(&mut bad, 987654usize as *mut c_void, 1): *mut u64, *mut c_void, i32),
        0,
        "not a file descriptor"
    );

    // Again, many times (tests/mem_accounting.rs counts what stays behind).
    for i in 0..10u32 {
        let (r, h) = create(2 * MIB, &prop());
        assert_eq!(r, 0);
        let mut p = 0u64;
        check(
            cu!(cuMemAddressReserve(&mut p, 2 * MIB, 0, 0, 0): *mut u64, usize, usize, u64, u64),
            "reserve",
        );
        check(
            cu!(cuMemMap(p, 2 * MIB, 0, h, 0): u64, usize, usize, u64, u64),
            "map",
        );
        check(cu!(cuMemRelease(h): u64), "release");
        check(set_access(p, 2 * MIB, 3), "access");
        htod(p + 64, &[i]);
        assert_eq!(dtoh::<u32>(p + 64, 1), vec![i]);
        check(cu!(cuMemUnmap(p, 2 * MIB): u64, usize), "unmap");
        check(cu!(cuMemAddressFree(p, 2 * MIB): u64, usize), "free");
    }
}

fn set_access_at(ptr: u64, size: usize, loc: [i32; 2], flags: i32) -> u32 {
    let desc = [loc[0], loc[1], flags];
    cu!(cuMemSetAccess(ptr, size, desc.as_ptr() as *const c_void, 1): u64, usize, *const c_void, usize)
}

fn get_access_at(ptr: u64, loc: [i32; 2]) -> (u32, u64) {
    let mut f = 99u64;
    let r = cu!(cuMemGetAccess(&mut f, loc.as_ptr() as *const c_void, ptr): *mut u64, *const c_void, u64);
    (r, f)
}

/// How the CPU may access `addr` (`/proc/self/maps`: "r--s", "rw-s", ...); `None` where the
/// process maps nothing there or only a placeholder without access.
fn cpu_perms(addr: u64) -> Option<String> {
    let maps = std::fs::read_to_string("/proc/self/maps").expect("maps");
    maps.lines().find_map(|l| {
        let (range, rest) = l.split_once(' ')?;
        let (a, b) = range.split_once('-')?;
        let (a, b) = (
            u64::from_str_radix(a, 16).ok()?,
            u64::from_str_radix(b, 16).ok()?,
        );
        (a <= addr && addr < b && !rest.starts_with("---")).then(|| rest[..4].to_string())
    })
}

/// Host memory (`CU_MEM_LOCATION_TYPE_HOST`, `_HOST_NUMA`): mapped for the GPU like device
/// memory, and for the CPU at the same address once `cuMemSetAccess` names the host.
#[test]
fn host_memory_mapped_for_gpu_and_cpu() {
    setup();
    for a in [141, 145] {
        let mut v = -1;
        check(
            cu!(cuDeviceGetAttribute(&mut v, a, 0): *mut i32, i32, i32),
            "host VMM attribute",
        );
        assert_eq!(v, 1, "attribute {a}");
    }
    let mut host = prop();
    host.loc_type = 2;
    host.loc_id = 12345; // ignored for CU_MEM_LOCATION_TYPE_HOST
    let mut numa = prop();
    numa.loc_type = 3;
    let mut current = prop();
    current.loc_type = 4;
    for p in [&host, &numa, &current] {
        let mut g = 0usize;
        check(
            cu!(cuMemGetAllocationGranularity(&mut g, p, 0): *mut usize, *const Prop, i32),
            "granularity",
        );
        assert_eq!(g, 2 * MIB);
    }
    // What NVIDIA's libcuda refuses (CUDA 13.0 on an H200).
    assert_eq!(create(2 * MIB, &current).0, 1, "HOST_NUMA_CURRENT");
    assert_eq!(create(64 << 10, &host).0, 1, "below the granularity");
    let mut bad = numa;
    bad.loc_id = 999;
    assert_eq!(create(2 * MIB, &bad).0, 1, "no NUMA node 999");
    bad = host;
    bad.handle_types = 1;
    assert_eq!(create(2 * MIB, &bad).0, 1, "HOST memory has no handles");
    bad.rdma = 1;
    bad.handle_types = 0;
    assert_eq!(create(2 * MIB, &bad).0, 1, "RDMA-capable host memory");

    let (r, h) = create(2 * MIB, &host);
    assert_eq!(r, 0, "cuMemCreate of host memory");
    let (r, hn) = create(2 * MIB, &numa);
    assert_eq!(r, 0, "cuMemCreate of host NUMA node 0 memory");
    let mut got = prop();
    check(
        cu!(cuMemGetAllocationPropertiesFromHandle(&mut got, h): *mut Prop, u64),
        "properties",
    );
    assert_eq!(
        (got.type_, got.loc_type, got.loc_id, got.handle_types),
        (1, 3, 0, 0)
    );
    let hd = h_plain();

    let mut p = 0u64;
    check(
        cu!(cuMemAddressReserve(&mut p, 6 * MIB, 0, 0, 0): *mut u64, usize, usize, u64, u64),
        "reserve",
    );
    let (q, d) = (p + 2 * MIB as u64, p + 4 * MIB as u64);
    for (at, hh) in [(p, h), (q, hn), (d, hd)] {
        check(
            cu!(cuMemMap(at, 2 * MIB, 0, hh, 0): u64, usize, usize, u64, u64),
            "map",
        );
    }
    assert_eq!(get_access_at(p, [3, 0]), (0, 0), "no CPU access yet");
    assert_eq!(get_access_at(p, [4, 0]).0, 101, "HOST_NUMA_CURRENT");
    assert_eq!(cpu_perms(p), None, "no CPU view yet");
    check(set_access(p, 6 * MIB, 3), "device access");
    assert_eq!(set_access_at(p, 4 * MIB, [4, 0], 3), 1, "HOST_NUMA_CURRENT");
    assert_eq!(set_access_at(d, 2 * MIB, [3, 0], 3), 801, "device memory");
    assert_eq!(
        set_access_at(p, 6 * MIB, [3, 0], 3),
        801,
        "a run with device memory"
    );
    check(
        set_access_at(p, 4 * MIB, [3, 7], 1),
        "read-only for the CPU",
    );
    assert_eq!(cpu_perms(q + 4096).as_deref(), Some("r--s"));
    assert_eq!(get_access_at(p, [2, 0]), (0, 1));
    check(
        set_access_at(p, 4 * MIB, [2, 0], 3),
        "read-write for the CPU",
    );
    assert_eq!(cpu_perms(p).as_deref(), Some("rw-s"));
    assert_eq!(get_access_at(q + 100, [3, 5]), (0, 3));

    // The GPU writes; the CPU reads at the same address; and the other way round.
    let words = 4 * MIB / 4;
    assert_eq!(
        cu!(cuMemsetD32_v2(p, 0x11223344, words): u64, u32, usize),
        1,
        "a memset over two allocations"
    );
    for at in [p, q] {
        check(
            cu!(cuMemsetD32_v2(at, 0x11223344, words / 2): u64, u32, usize),
            "memset",
        );
    }
    check(cu!(cuCtxSynchronize(): ), "sync");
    let cpu = unsafe { std::slice::from_raw_parts_mut(p as *mut u32, words) };
    assert!(cpu.iter().all(|&x| x == 0x11223344));
    cpu[5] = 0xdead_beef;
    cpu[words - 1] = 42;
    assert_eq!(dtoh::<u32>(p + 20, 1), vec![0xdead_beef]);
    assert_eq!(dtoh::<u32>(q + 2 * MIB as u64 - 4, 1), vec![42]);
    let m = load_fixture("kernels");
    let fill = function(m, "fill_u32");
    let (mut fp, mut fv, mut fnn) = (q + 64, 9u32, 256u32);
    launch(
        fill,
        2,
        128,
        null_mut(),
        &mut [ptr(&mut fp), ptr(&mut fv), ptr(&mut fnn)],
    );
    check(cu!(cuCtxSynchronize(): ), "sync");
    let half = 2 * MIB / 4;
    assert!(cpu[half + 16..half + 16 + 256].iter().all(|&x| x == 9));
    // Device to host-VMM copies reach the CPU view.
    htod(d, &[1u32, 2, 3, 4]);
    check(
        cu!(cuMemcpyDtoD_v2(p + 4096, d, 16): u64, u64, usize),
        "copy",
    );
    check(cu!(cuCtxSynchronize(): ), "sync");
    assert_eq!(&cpu[1024..1028], &[1, 2, 3, 4]);

    // Pointer attributes: host memory at its own address.
    let mut mt = 0u32;
    check(
        cu!(cuPointerGetAttribute(ptr(&mut mt), 2, p + 8): *mut c_void, i32, u64),
        "memory type",
    );
    assert_eq!(mt, 1, "CU_MEMORYTYPE_HOST");
    check(
        cu!(cuPointerGetAttribute(ptr(&mut mt), 2, d + 8): *mut c_void, i32, u64),
        "memory type",
    );
    assert_eq!(mt, 2, "CU_MEMORYTYPE_DEVICE");
    let mut hp = 0u64;
    check(
        cu!(cuPointerGetAttribute(ptr(&mut hp), 4, q + 8): *mut c_void, i32, u64),
        "host pointer",
    );
    assert_eq!(hp, q + 8);
    let (mut base, mut size) = (0u64, 0usize);
    check(
        cu!(cuMemGetAddressRange_v2(&mut base, &mut size, q + 100): *mut u64, *mut usize, u64),
        "address range",
    );
    assert_eq!((base, size), (q, 2 * MIB));

    // A retained handle reports host memory; no access for the CPU takes the view away.
    let mut h2 = 0u64;
    check(
        cu!(cuMemRetainAllocationHandle(&mut h2, (q + 100) as *mut c_void): *mut u64, *mut c_void),
        "retain",
    );
    assert_eq!(h2, hn);
    check(cu!(cuMemRelease(h2): u64), "release the retained handle");
    check(set_access_at(q, 2 * MIB, [3, 0], 0), "no CPU access");
    assert_eq!(cpu_perms(q), None);
    assert_eq!(get_access_at(q, [3, 0]), (0, 0));
    assert_eq!(
        get_access_at(p, [3, 0]),
        (0, 3),
        "the other mapping keeps its view"
    );
    for hh in [h, hn, hd] {
        check(cu!(cuMemRelease(hh): u64), "release");
    }
    assert_eq!(cpu[5], 0xdead_beef, "released handles keep mapped memory");
    check(cu!(cuMemUnmap(p, 6 * MIB): u64, usize), "unmap");
    assert_eq!(cpu_perms(p), None, "the CPU view goes with the mapping");
    check(cu!(cuMemAddressFree(p, 6 * MIB): u64, usize), "free");
    // Rounds of create, map, use and release: tests/mem_accounting.rs.
}
