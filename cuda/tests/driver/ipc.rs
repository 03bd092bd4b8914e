//! Interprocess handles of memory and events: the rules NVIDIA's libcuda follows (observed on
//! an H200 with driver 580: the answers below), and on a GPU, a second process (this test binary
//! again) that opens the memory and the event, sees the event pending while the first process's
//! stream waits for a word of the shared memory, writes that word and waits for the event.

use crate::*;
use std::ffi::c_void;
use std::ptr::null_mut;

#[repr(C)]
#[derive(Clone, Copy)]
struct IpcHandle {
    reserved: [u8; 64],
}

const ZERO: IpcHandle = IpcHandle { reserved: [0; 64] };
/// The environment variable that makes [`ipc_child`] the second process: the two handles in
/// hex.
const CHILD_ENV: &str = "TG_TEST_IPC_CHILD";

fn mem_handle(d: u64) -> (CUresult, IpcHandle) {
    let mut h = ZERO;
    let r = cu!(cuIpcGetMemHandle(&mut h, d): *mut IpcHandle, u64);
    (r, h)
}

fn open_mem(h: IpcHandle, flags: u32) -> (CUresult, u64) {
    let mut d = 0u64;
    let r = cu!(cuIpcOpenMemHandle_v2(&mut d, h, flags): *mut u64, IpcHandle, u32);
    (r, d)
}

fn close_mem(d: u64) -> CUresult {
    cu!(cuIpcCloseMemHandle(d): u64)
}

fn event(flags: u32) -> (CUresult, *mut c_void) {
    let mut e = null_mut();
    let r = cu!(cuEventCreate(&mut e, flags): *mut *mut c_void, u32);
    (r, e)
}

fn event_handle(e: *mut c_void) -> (CUresult, IpcHandle) {
    let mut h = ZERO;
    let r = cu!(cuIpcGetEventHandle(&mut h, e): *mut IpcHandle, *mut c_void);
    (r, h)
}

fn open_event(h: IpcHandle) -> (CUresult, *mut c_void) {
    let mut e = null_mut();
    let r = cu!(cuIpcOpenEventHandle(&mut e, h): *mut *mut c_void, IpcHandle);
    (r, e)
}

fn hex(h: &IpcHandle) -> String {
    h.reserved.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> IpcHandle {
    let mut h = ZERO;
    for (i, b) in h.reserved.iter_mut().enumerate() {
        *b = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).expect("hex");
    }
    h
}

fn pointer_u32(attr: i32, d: u64) -> (CUresult, u32) {
    let mut v = 9u32;
    let r = cu!(cuPointerGetAttribute(ptr(&mut v), attr, d): *mut c_void, i32, u64);
    (r, v)
}

#[test]
fn ipc_handles_follow_nvidias_rules_in_one_process() {
    setup();
    let mut v = -1;
    check(
        cu!(cuDeviceGetAttribute(&mut v, 125, 0): *mut i32, i32, i32),
        "IPC_EVENT_SUPPORTED",
    );
    assert_eq!(
        v,
        !emulated() as i32,
        "IPC_EVENT_SUPPORTED: desktop GPUs only"
    );
    let d = alloc(1 << 20);
    let (r, h) = mem_handle(d);
    assert_eq!(r, 0, "cuIpcGetMemHandle");
    assert_eq!(
        mem_handle(d).1.reserved,
        h.reserved,
        "one handle per allocation"
    );
    assert_eq!(
        mem_handle(d + 256).1.reserved,
        h.reserved,
        "a pointer inside names the whole allocation"
    );
    assert_eq!(mem_handle(0).0, 1);
    assert_eq!(
        cu!(cuIpcGetMemHandle(null_mut(), d): *mut IpcHandle, u64),
        1
    );
    assert_eq!(pointer_u32(10, d), (0, 1), "IS_LEGACY_CUDA_IPC_CAPABLE");
    // Host, managed and stream-ordered memory have no handles.
    let mut host: *mut c_void = null_mut();
    check(
        cu!(cuMemAllocHost_v2(&mut host, 4096): *mut *mut c_void, usize),
        "cuMemAllocHost",
    );
    assert_eq!(mem_handle(host as u64).0, 1, "pinned host memory");
    let mut m = 0u64;
    check(
        cu!(cuMemAllocManaged(&mut m, 4096, 1): *mut u64, usize, u32),
        "cuMemAllocManaged",
    );
    assert_eq!(mem_handle(m).0, 1, "managed memory");
    assert_eq!(pointer_u32(10, m), (0, 0), "IS_LEGACY_CUDA_IPC_CAPABLE");
    let mut pa = 0u64;
    check(
        cu!(cuMemAllocAsync(&mut pa, 4096, null_mut()): *mut u64, usize, *mut c_void),
        "cuMemAllocAsync",
    );
    assert_eq!(mem_handle(pa).0, 1, "pool memory");
    // Opening: not in the exporting process; bad handles and flags.
    assert_eq!(
        open_mem(h, 1),
        (201, 0),
        "own handle: CUDA_ERROR_INVALID_CONTEXT"
    );
    assert_eq!(open_mem(ZERO, 1).0, 1, "zero handle");
    assert_eq!(
        open_mem(
            IpcHandle {
                reserved: [0x5a; 64]
            },
            1
        )
        .0,
        1,
        "garbage handle"
    );
    assert_eq!(open_mem(h, 0).0, 1, "flags 0");
    assert_eq!(
        cu!(cuIpcOpenMemHandle_v2(null_mut(), h, 1): *mut u64, IpcHandle, u32),
        1
    );
    assert_eq!(close_mem(d), 1, "not opened");
    assert_eq!(close_mem(0), 1);
    // Events: CU_EVENT_INTERPROCESS needs CU_EVENT_DISABLE_TIMING.
    assert_eq!(event(4).0, 1);
    let (r, e) = event(4 | 2);
    assert_eq!(r, 0);
    let (_, plain) = event(2);
    assert_eq!(event_handle(plain).0, 400, "not an interprocess event");
    assert_eq!(
        cu!(cuIpcGetEventHandle(null_mut(), e): *mut IpcHandle, *mut c_void),
        1
    );
    let (r, eh) = event_handle(e);
    assert_eq!(r, 0, "cuIpcGetEventHandle");
    assert_eq!(event_handle(e).1.reserved, eh.reserved);
    assert_ne!(eh.reserved, h.reserved);
    assert_eq!(open_event(eh).0, 201, "own handle");
    assert_eq!(
        open_event(ZERO).0,
        205,
        "zero handle: CUDA_ERROR_MAP_FAILED"
    );
    assert_eq!(open_event(h).0, 205, "a memory handle");
    // The interprocess event works as an event here.
    assert_eq!(cu!(cuEventQuery(e): *mut c_void), 0, "never recorded");
    let m2 = load_fixture("kernels");
    let fill = function(m2, "fill_u32");
    let (mut p, mut val, mut n) = (d, 0x77u32, 1024u32);
    launch(
        fill,
        8,
        128,
        null_mut(),
        &mut [ptr(&mut p), ptr(&mut val), ptr(&mut n)],
    );
    check(
        cu!(cuEventRecord(e, null_mut()): *mut c_void, *mut c_void),
        "record",
    );
    check(cu!(cuEventSynchronize(e): *mut c_void), "sync");
    assert_eq!(cu!(cuEventQuery(e): *mut c_void), 0);
    assert_eq!(dtoh::<u32>(d, 4), [0x77; 4]);
    let mut ms = 0f32;
    assert_eq!(
        cu!(cuEventElapsedTime(&mut ms, e, e): *mut f32, *mut c_void, *mut c_void),
        400,
        "no timing"
    );
    for x in [e, plain] {
        check(cu!(cuEventDestroy_v2(x): *mut c_void), "destroy");
    }
    check(cu!(cuMemFree_v2(d): u64), "free");
    check(cu!(cuMemFree_v2(m): u64), "free");
    check(cu!(cuMemFreeHost(host): *mut c_void), "free host");
}

/// On a GPU: a second process opens this one's memory and event. The event is recorded after a
/// stream wait (`cuStreamWaitValue32`) for a word of the shared memory; the child sees it
/// pending, sets the word through its own mapping, and waits for the event; this process then
/// sees the child's writes.
#[test]
fn a_second_process_opens_the_memory_and_the_event() {
    if emulated() {
        // Each process has an emulated GPU of its own: nothing to share.
        eprintln!("NOTICE: the emulated GPU runs in one process; the two-process test needs a GPU");
        return;
    }
    setup();
    let d = alloc(1 << 20);
    htod(d, &[1u32, 2, 3, 4]);
    htod(d + 4096, &[0u32]);
    let (r, h) = mem_handle(d);
    assert_eq!(r, 0);
    let (r, e) = event(4 | 2);
    assert_eq!(r, 0);
    let (r, eh) = event_handle(e);
    assert_eq!(r, 0);
    let mut s = null_mut();
    check(
        cu!(cuStreamCreate(&mut s, 1): *mut *mut c_void, u32),
        "stream",
    );
    // CU_STREAM_WAIT_VALUE_GEQ (0): the stream waits, in the GPU's front end, for the word.
    check(
        cu!(cuStreamWaitValue32_v2(s, d + 4096, 1, 0): *mut c_void, u64, u32, u32),
        "cuStreamWaitValue32",
    );
    check(cu!(cuEventRecord(e, s): *mut c_void, *mut c_void), "record");
    let out = std::process::Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            "ipc::ipc_child",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, format!("{} {}", hex(&h), hex(&eh)))
        .output()
        .expect("running the child");
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    // Whatever the child did, the wait ends: set the word here too.
    htod(d + 4096, &[1u32]);
    check(cu!(cuStreamSynchronize(s): *mut c_void), "sync");
    assert!(
        out.status.success() && text.contains("1 passed"),
        "child: {text}"
    );
    assert!(text.contains("child saw the event pending"), "{text}");
    assert_eq!(dtoh::<u32>(d, 4), [1, 2, 3, 4], "the child's reads left it");
    assert_eq!(dtoh::<u32>(d + 16, 4), [9, 8, 7, 6], "the child's writes");
    check(cu!(cuEventDestroy_v2(e): *mut c_void), "destroy");
    check(cu!(cuStreamDestroy_v2(s): *mut c_void), "stream");
    check(cu!(cuMemFree_v2(d): u64), "free");
}

/// The second process of [`a_second_process_opens_the_memory_and_the_event`] (run by it).
#[test]
#[ignore = "the child process of a_second_process_opens_the_memory_and_the_event"]
fn ipc_child() {
    let arg =
        std::env::var(CHILD_ENV).expect("run by a_second_process_opens_the_memory_and_the_event");
    let mut parts = arg.split(' ');
    let h = unhex(parts.next().expect("memory handle"));
    let eh = unhex(parts.next().expect("event handle"));
    setup();
    let (r, d) = open_mem(h, 1);
    assert_eq!(r, 0, "cuIpcOpenMemHandle");
    assert_eq!(open_mem(h, 1), (0, d), "opened twice: the same address");
    assert_eq!(dtoh::<u32>(d, 4), [1, 2, 3, 4]);
    htod(d + 16, &[9u32, 8, 7, 6]);
    let (mut base, mut size) = (0u64, 0usize);
    check(
        cu!(cuMemGetAddressRange_v2(&mut base, &mut size, d + 4): *mut u64, *mut usize, u64),
        "range",
    );
    assert_eq!((base, size), (d, 1 << 20));
    assert_eq!(pointer_u32(2, d), (0, 2), "MEMORY_TYPE device");
    assert_eq!(
        pointer_u32(10, d),
        (0, 0),
        "an opened handle is not exported again"
    );
    assert_eq!(mem_handle(d).0, 1, "no handle of an opened handle");
    assert_eq!(cu!(cuMemFree_v2(d): u64), 1, "closed, not freed");
    let (r, e) = open_event(eh);
    assert_eq!(r, 0, "cuIpcOpenEventHandle");
    // The parent's stream waits until the word at +4096 is set: the event is pending.
    assert_eq!(
        cu!(cuEventQuery(e): *mut c_void),
        600,
        "CUDA_ERROR_NOT_READY"
    );
    println!("child saw the event pending");
    let mut s = null_mut();
    check(
        cu!(cuStreamCreate(&mut s, 1): *mut *mut c_void, u32),
        "stream",
    );
    check(
        cu!(cuStreamWaitEvent(s, e, 0): *mut c_void, *mut c_void, u32),
        "wait",
    );
    htod(d + 4096, &[1u32]);
    check(cu!(cuEventSynchronize(e): *mut c_void), "event sync");
    check(cu!(cuStreamSynchronize(s): *mut c_void), "stream sync");
    assert_eq!(cu!(cuEventQuery(e): *mut c_void), 0);
    // Recorded here, waited for here.
    check(cu!(cuEventRecord(e, s): *mut c_void, *mut c_void), "record");
    check(cu!(cuEventSynchronize(e): *mut c_void), "event sync");
    check(cu!(cuEventDestroy_v2(e): *mut c_void), "destroy");
    check(close_mem(d), "close");
    check(close_mem(d), "close the second open");
    assert_eq!(close_mem(d), 1, "closed twice already");
}

fn shareable_pool(handle_types: i32) -> (CUresult, *mut c_void) {
    let mut p = crate::pools::props(0);
    p.handle_types = handle_types;
    crate::pools::create(&p)
}

fn pool_alloc(pool: *mut c_void, n: usize, s: *mut c_void) -> u64 {
    let mut d = 0u64;
    check(
        cu!(cuMemAllocFromPoolAsync(&mut d, n, pool, s): *mut u64, usize, *mut c_void, *mut c_void),
        "cuMemAllocFromPoolAsync",
    );
    d
}

fn export_pointer(d: u64) -> (CUresult, IpcHandle) {
    let mut h = ZERO;
    let r = cu!(cuMemPoolExportPointer(&mut h, d): *mut IpcHandle, u64);
    (r, h)
}

fn export_pool(pool: *mut c_void, ty: i32) -> (CUresult, i32) {
    let mut fd = -1i32;
    let r = cu!(cuMemPoolExportToShareableHandle(ptr(&mut fd), pool, ty, 0): *mut c_void, *mut c_void, i32, u64);
    (r, fd)
}

fn import_pool(fd: i32) -> (CUresult, *mut c_void) {
    let mut pool = null_mut();
    let r = cu!(cuMemPoolImportFromShareableHandle(&mut pool, fd as usize as *mut c_void, 1, 0):
        *mut *mut c_void, *mut c_void, i32, u64);
    (r, pool)
}

fn import_pointer(pool: *mut c_void, h: &IpcHandle) -> (CUresult, u64) {
    let mut d = 0u64;
    let r = cu!(cuMemPoolImportPointer(&mut d, pool, h): *mut u64, *mut c_void, *const IpcHandle);
    (r, d)
}

const POOL_CHILD_ENV: &str = "TG_TEST_IPC_POOL_CHILD";

/// Pools with shareable handles (`CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR`): the pool's
/// descriptor and an allocation's export data, refusals in one process, and on a GPU a second
/// process that imports the pool and the allocation (not one of another pool), reads and writes
/// it, and frees its import with `cuMemFreeAsync`; this process then sees the writes.
#[test]
fn pools_share_allocations_with_another_process() {
    setup();
    let mut s = null_mut();
    check(
        cu!(cuStreamCreate(&mut s, 1): *mut *mut c_void, u32),
        "stream",
    );
    let (r, pool) = shareable_pool(1);
    check(r, "a pool with POSIX file descriptor handles");
    let (r, other) = shareable_pool(1);
    check(r, "another");
    let (r, plain) = shareable_pool(0);
    check(r, "a pool without handles");
    let d = pool_alloc(pool, 1 << 16, s);
    let d2 = pool_alloc(other, 4096, s);
    let d3 = pool_alloc(plain, 4096, s);
    check(cu!(cuStreamSynchronize(s): *mut c_void), "sync");
    htod(d, &[1u32, 2, 3, 4]);
    // NVIDIA's libcuda exports a pool's allocations once the pool was exported.
    assert_eq!(export_pointer(d).0, 1, "before the pool's descriptor");
    let (r, fd) = export_pool(pool, 1);
    check(r, "cuMemPoolExportToShareableHandle");
    assert!(fd >= 0, "a descriptor: {fd}");
    let (r, fd2) = export_pool(other, 1);
    check(r, "cuMemPoolExportToShareableHandle of the other pool");
    assert_eq!(export_pool(pool, 8).0, 1, "fabric handle type");
    assert_eq!(export_pool(plain, 1).0, 1, "a pool without handles");
    let (r, data) = export_pointer(d);
    check(r, "cuMemPoolExportPointer");
    let (r, data2) = export_pointer(d2);
    check(r, "cuMemPoolExportPointer of the other pool");
    assert_eq!(
        export_pointer(d3).0,
        1,
        "an allocation of a pool without handles"
    );
    assert_eq!(export_pointer(d + 4).0, 1, "not the allocation's start");
    // In this process too: the pool imports, its allocations import (another mapping of the
    // same memory) and the pool is not destroyed while they are mapped; it makes no
    // allocations of its own.
    let (r, imported) = import_pool(fd);
    check(r, "cuMemPoolImportFromShareableHandle");
    let mut x = 0u64;
    assert_eq!(
        cu!(cuMemAllocFromPoolAsync(&mut x, 64, imported, s): *mut u64, usize, *mut c_void, *mut c_void),
        1,
        "allocating from an imported pool"
    );
    assert_eq!(import_pointer(imported, &data2).0, 1, "another pool's data");
    assert_eq!(
        import_pointer(pool, &data).0,
        1,
        "a pool that was not imported"
    );
    let (r, own) = import_pointer(imported, &data);
    if emulated() {
        // nvgpu maps the buffer again at its own address: refused, the import would be the
        // allocation itself.
        assert_eq!(
            r, 801,
            "cuMemPoolImportPointer in the exporting process (nvgpu)"
        );
    } else {
        check(r, "cuMemPoolImportPointer in the exporting process");
        assert_ne!(own, d, "another mapping");
        assert_eq!(dtoh::<u32>(own, 4), [1, 2, 3, 4], "the same memory");
        assert_eq!(
            cu!(cuMemPoolDestroy(imported): *mut c_void),
            1,
            "an imported pool with an import mapped"
        );
        check(cu!(cuMemFree_v2(own): u64), "cuMemFree of the import");
    }
    let null = std::fs::File::open("/dev/null").expect("/dev/null");
    use std::os::fd::AsRawFd;
    assert_eq!(
        import_pool(null.as_raw_fd()).0,
        1,
        "not a pool's descriptor"
    );
    check(
        cu!(cuMemPoolDestroy(imported): *mut c_void),
        "destroy the import",
    );
    // SAFETY: closes the other pool's descriptor, made above.
    unsafe { libc::close(fd2) };

    if emulated() {
        eprintln!("NOTICE: the emulated GPU runs in one process; the second process needs a GPU");
    } else {
        // The child inherits the descriptor.
        // SAFETY: clears close-on-exec of a descriptor this test owns.
        unsafe { libc::fcntl(fd, libc::F_SETFD, 0) };
        let out = std::process::Command::new(std::env::current_exe().expect("test binary"))
            .args([
                "--exact",
                "ipc::pool_child",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(
                POOL_CHILD_ENV,
                format!("{fd} {} {}", hex(&data), hex(&data2)),
            )
            .output()
            .expect("running the child");
        let text = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && text.contains("1 passed"),
            "child: {text}"
        );
        assert_eq!(dtoh::<u32>(d, 4), [1, 2, 3, 4], "the child's reads left it");
        assert_eq!(dtoh::<u32>(d + 16, 4), [9, 8, 7, 6], "the child's writes");
    }
    // SAFETY: closes the descriptor the export made.
    unsafe { libc::close(fd) };
    for x in [d, d2, d3] {
        check(
            cu!(cuMemFreeAsync(x, s): u64, *mut c_void),
            "cuMemFreeAsync",
        );
    }
    check(cu!(cuStreamSynchronize(s): *mut c_void), "sync");
    for p in [pool, other, plain] {
        check(cu!(cuMemPoolDestroy(p): *mut c_void), "destroy");
    }
    check(cu!(cuStreamDestroy_v2(s): *mut c_void), "stream");
}

/// The second process of [`pools_share_allocations_with_another_process`] (run by it).
#[test]
#[ignore = "the child process of pools_share_allocations_with_another_process"]
fn pool_child() {
    let arg =
        std::env::var(POOL_CHILD_ENV).expect("run by pools_share_allocations_with_another_process");
    let mut parts = arg.split(' ');
    let fd: i32 = parts.next().expect("fd").parse().expect("fd number");
    let data = unhex(parts.next().expect("export data"));
    let data2 = unhex(parts.next().expect("export data of the other pool"));
    setup();
    let (r, pool) = import_pool(fd);
    check(r, "cuMemPoolImportFromShareableHandle");
    let mut flags = -1i32;
    let loc = [1i32, 0];
    check(
        cu!(cuMemPoolGetAccess(&mut flags, pool, loc.as_ptr()): *mut i32, *mut c_void, *const i32),
        "cuMemPoolGetAccess",
    );
    assert_eq!(flags, 3, "read-write for the pool's device");
    assert_eq!(
        import_pointer(pool, &data2).0,
        1,
        "an allocation of another pool"
    );
    let (r, d) = import_pointer(pool, &data);
    check(r, "cuMemPoolImportPointer");
    assert_eq!(dtoh::<u32>(d, 4), [1, 2, 3, 4]);
    htod(d + 16, &[9u32, 8, 7, 6]);
    let mut s = null_mut();
    check(
        cu!(cuStreamCreate(&mut s, 1): *mut *mut c_void, u32),
        "stream",
    );
    check(
        cu!(cuMemFreeAsync(d, s): u64, *mut c_void),
        "free the import",
    );
    check(cu!(cuStreamSynchronize(s): *mut c_void), "sync");
    assert_eq!(cu!(cuMemFree_v2(d): u64), 1, "freed already");
    check(cu!(cuMemPoolDestroy(pool): *mut c_void), "destroy");
    check(cu!(cuStreamDestroy_v2(s): *mut c_void), "stream");
}
