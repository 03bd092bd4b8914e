//! GP entry layout (gpu-programming-interface.md §1.3, NV_PPBDMA_GP_ENTRY) and GpRing behaviour
//! over a plain memory ring with a fake GPU (a `progress` closure that consumes entries).

use std::cell::{Cell, RefCell};
use tegragpu::hw::gpfifo::{self, GpRing};
use tegragpu::{Error, Status};

#[test]
fn gp_entry_layout() {
    let va = 0xAB_1234_5678u64;
    let e = gpfifo::gp_entry(va, 100, false).unwrap();
    let (entry0, entry1) = (e as u32, (e >> 32) as u32);
    assert_eq!(entry0 & 1, 0, "FETCH unconditional");
    assert_eq!(entry0 & !3, 0x1234_5678, "GET = PB address bits 31:2");
    assert_eq!(entry1 & 0xFF, 0xAB, "GET_HI = PB address bits 39:32");
    assert_eq!(
        (entry1 >> 9) & 1,
        1,
        "LEVEL = SUBROUTINE (tinygrad's choice)"
    );
    assert_eq!(
        (entry1 >> 10) & 0x1F_FFFF,
        100,
        "LENGTH in dwords, ENTRY1 30:10"
    );
    assert_eq!(entry1 >> 31, 0, "SYNC = PROCEED");
    // tinygrad's formula: (va//4<<2) | (ndw<<42) | (1<<41).
    assert_eq!(e, ((va / 4) << 2) | (100 << 42) | (1 << 41));
    let s = gpfifo::gp_entry(va, 100, true).unwrap();
    assert_eq!(s, e | (1 << 63), "SYNC is bit 63");
    assert_eq!(
        gpfifo::gp_entry_level(va, 1, false, false).unwrap(),
        va | (1 << 42),
        "LEVEL MAIN"
    );
    assert_eq!(
        gpfifo::gp_entry(0, (1 << 21) - 1, false).unwrap() >> 42 & 0x1F_FFFF,
        (1 << 21) - 1
    );
}

#[test]
fn gp_entry_checks() {
    assert_eq!(
        gpfifo::gp_entry(0x1002, 1, false).unwrap_err().status,
        Status::InvalidArgument
    );
    assert!(gpfifo::gp_entry(1 << 40, 1, false).is_err(), "at 2^40");
    assert!(
        gpfifo::gp_entry((1 << 40) - 4, 2, false).is_err(),
        "crosses 2^40"
    );
    assert!(gpfifo::gp_entry((1 << 40) - 4, 1, false).is_ok());
    assert!(
        gpfifo::gp_entry(0x1000, 0, false).is_err(),
        "length 0 is a control entry"
    );
    assert!(
        gpfifo::gp_entry(0x1000, 1 << 21, false).is_err(),
        "21-bit length"
    );
}

/// A ring in plain memory: entries, USERD (512 bytes) and a doorbell word.
struct Mem {
    ring: Vec<u64>,
    userd: Vec<u32>,
    doorbell: Vec<u32>,
}

const EMPTY: u64 = 0xDEAD_DEAD_DEAD_DEAD;

impl Mem {
    fn new(entries: usize) -> Mem {
        Mem {
            ring: vec![EMPTY; entries],
            userd: vec![0; 128],
            doorbell: vec![0],
        }
    }
    fn gp_ring(&mut self, token: u32) -> GpRing {
        let n = self.ring.len() as u32;
        // SAFETY: the vectors outlive the ring in every test and are not resized.
        unsafe {
            GpRing::new(
                self.ring.as_mut_ptr(),
                n,
                self.userd.as_mut_ptr() as *mut u8,
                self.doorbell.as_mut_ptr(),
                token,
                "test-ring",
            )
        }
        .unwrap()
    }
}

fn read(ring: *const u64, i: u32) -> u64 {
    // SAFETY: i < ring length in every call.
    unsafe { std::ptr::read_volatile(ring.add(i as usize)) }
}

#[test]
fn new_rejects_bad_rings() {
    let mut m = Mem::new(8);
    let (r, u, d) = (
        m.ring.as_mut_ptr(),
        m.userd.as_mut_ptr() as *mut u8,
        m.doorbell.as_mut_ptr(),
    );
    // SAFETY: every call fails its checks before touching memory, or is given valid memory.
    unsafe {
        assert!(
            GpRing::new(r, 6, u, d, 1, "x").is_err(),
            "not a power of two"
        );
        assert!(GpRing::new(r, 1, u, d, 1, "x").is_err(), "one entry");
        assert!(GpRing::new(std::ptr::null_mut(), 8, u, d, 1, "x").is_err());
        assert!(GpRing::new(r, 8, std::ptr::null_mut(), d, 1, "x").is_err());
        assert!(GpRing::new(r, 8, u, std::ptr::null_mut(), 1, "x").is_err());
        assert!(GpRing::new(r, 8, u, d, 1, "x").is_ok());
    }
}

#[test]
fn free_slots_keeps_one_empty() {
    let mut m = Mem::new(8);
    let mut g = m.gp_ring(1);
    assert_eq!(g.free_slots(0), 7);
    let mut never =
        || -> tegragpu::Result<u32> { panic!("progress must not be polled while there is room") };
    for i in 0..7 {
        g.push(i, &mut never, 0).unwrap();
    }
    assert_eq!(g.put(), 7);
    assert_eq!(g.free_slots(0), 0);
    assert_eq!(g.free_slots(3), 3);
    assert_eq!(g.free_slots(7), 7, "put == get is empty");
    assert_eq!(
        g.free_slots(8),
        0,
        "an out-of-range GP_GET never frees slots"
    );
}

#[test]
fn kick_writes_gp_put_then_token() {
    let mut m = Mem::new(16);
    let mut g = m.gp_ring(511);
    let mut never = || -> tegragpu::Result<u32> { Ok(0) };
    g.push(0x1234, &mut never, 0).unwrap();
    g.push(0x5678, &mut never, 0).unwrap();
    assert_eq!(m.userd[0x8C / 4], 0, "push does not publish GP_PUT");
    assert_eq!(m.doorbell[0], 0, "push does not ring");
    g.kick();
    assert_eq!(
        m.userd[0x8C / 4],
        2,
        "GP_PUT at USERD 0x8C = next free entry"
    );
    assert_eq!(m.doorbell[0], 511, "doorbell gets the work-submit token");
    assert_eq!((m.ring[0], m.ring[1], m.ring[2]), (0x1234, 0x5678, EMPTY));
    m.userd[0x88 / 4] = 2;
    assert_eq!(g.userd_gp_get(), 2, "GP_GET read from USERD 0x88");
}

/// Many laps over a small ring with a fake GPU that consumes one entry per poll: every entry
/// arrives in order, and at every poll all unconsumed entries are still intact.
#[test]
fn wraps_many_laps_without_overwriting() {
    const N: u32 = 8;
    const TOTAL: u64 = 1000;
    let mut m = Mem::new(N as usize);
    let ring_ptr = m.ring.as_ptr();
    let mut g = m.gp_ring(7);
    let get = Cell::new(0u32);
    let consumed = Cell::new(0u64);
    let pushed = Cell::new(0u64);
    let polls = Cell::new(0u32);
    let mut gpu = || -> tegragpu::Result<u32> {
        polls.set(polls.get() + 1);
        // All entries between get and put are unconsumed and must hold their own values.
        let inflight = pushed.get() - consumed.get();
        for k in 0..inflight {
            let idx = (get.get() + k as u32) % N;
            assert_eq!(
                read(ring_ptr, idx),
                1000 + consumed.get() + k,
                "unconsumed entry overwritten"
            );
        }
        // Consume one.
        let v = read(ring_ptr, get.get());
        assert_eq!(v, 1000 + consumed.get(), "entries consumed in order");
        consumed.set(consumed.get() + 1);
        get.set((get.get() + 1) % N);
        Ok(get.get())
    };
    for i in 0..TOTAL {
        g.push(1000 + i, &mut gpu, 1_000_000_000).unwrap();
        pushed.set(i + 1);
        assert_eq!(g.put(), ((i + 1) % u64::from(N)) as u32);
    }
    // Ring full every time after the first lap: one poll per push.
    assert_eq!(u64::from(polls.get()), TOTAL - u64::from(N - 1));
    assert_eq!(
        pushed.get() - consumed.get(),
        u64::from(N - 1),
        "the ring ends full"
    );
    g.kick();
    assert_eq!(m.userd[0x8C / 4], (TOTAL % u64::from(N)) as u32);
}

#[test]
fn back_pressure_waits_for_progress() {
    let mut m = Mem::new(4);
    let ring_ptr = m.ring.as_ptr();
    let mut g = m.gp_ring(1);
    let mut none = || -> tegragpu::Result<u32> { Ok(0) };
    for i in 0..3 {
        g.push(10 + i, &mut none, 0).unwrap();
    }
    // Full (3 of 4, one slot kept empty). The fake GPU reports no progress for 50 polls, then
    // consumes one entry.
    let calls = RefCell::new(0u32);
    let mut slow = || -> tegragpu::Result<u32> {
        let mut c = calls.borrow_mut();
        *c += 1;
        assert_eq!(
            read(ring_ptr, 3),
            EMPTY,
            "nothing written while the ring is full"
        );
        Ok(if *c > 50 { 1 } else { 0 })
    };
    g.push(13, &mut slow, 5_000_000_000).unwrap();
    assert_eq!(*calls.borrow(), 51);
    assert_eq!(read(ring_ptr, 3), 13);
    assert_eq!(
        [read(ring_ptr, 0), read(ring_ptr, 1), read(ring_ptr, 2)],
        [10, 11, 12]
    );
    // put = 0 and GP_GET = 1: three entries in flight, the ring is full again. The next push may
    // only write slot 0 once GP_GET reaches 2.
    let mut seen = Vec::new();
    let mut step = || -> tegragpu::Result<u32> {
        seen.push(read(ring_ptr, 0));
        Ok(if seen.len() >= 3 { 2 } else { 1 })
    };
    g.push(14, &mut step, 5_000_000_000).unwrap();
    assert_eq!(seen, [10, 10, 10], "slot 0 kept until GP_GET passed it");
    assert_eq!(read(ring_ptr, 0), 14);
}

#[test]
fn full_ring_times_out_with_ring_name_and_indices() {
    let mut m = Mem::new(2);
    let ring_ptr = m.ring.as_ptr();
    let mut g = m.gp_ring(1);
    let mut stuck = || -> tegragpu::Result<u32> { Ok(0) };
    g.push(1, &mut stuck, 0).unwrap();
    let e = g.push(2, &mut stuck, 2_000_000).unwrap_err();
    assert_eq!(e.status, Status::Timeout);
    assert!(e.message.contains("test-ring"), "{}", e.message);
    assert!(
        e.message.contains("put=1") && e.message.contains("gp_get=0"),
        "{}",
        e.message
    );
    assert_eq!(read(ring_ptr, 1), EMPTY, "timed-out push wrote nothing");
    assert_eq!(g.put(), 1);
    // Zero timeout: one poll, then Timeout.
    assert_eq!(
        g.push(2, &mut stuck, 0).unwrap_err().status,
        Status::Timeout
    );
}

#[test]
fn progress_errors_and_bogus_gp_get() {
    let mut m = Mem::new(2);
    let mut g = m.gp_ring(1);
    let mut none = || -> tegragpu::Result<u32> { Ok(0) };
    g.push(1, &mut none, 0).unwrap();
    let mut fault =
        || -> tegragpu::Result<u32> { Err(Error::new(Status::DeviceFault, "channel error")) };
    assert_eq!(
        g.push(2, &mut fault, 1_000_000).unwrap_err().status,
        Status::DeviceFault
    );
    let mut bogus = || -> tegragpu::Result<u32> { Ok(5) };
    let e = g.push(2, &mut bogus, 1_000_000).unwrap_err();
    assert_eq!(e.status, Status::DeviceFault);
    assert!(e.message.contains("GP_GET 5"), "{}", e.message);
}
