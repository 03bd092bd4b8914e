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
    assert_eq!(
        cu!(cuMemGetAllocationGranularity(&mut g, &host, 0): *mut usize, *const Prop, i32),
        801,
        "host memory"
    );

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

    // Again, many times: nothing leaks.
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
