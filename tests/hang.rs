//! A kernel that does not end (issue #15 item 3): waits return `TIMEOUT` with the value reached,
//! other queues and devices keep working meanwhile, `Queue::abort` / `tg_queue_abort` tears the
//! queue down at once, what the abandoned work held is released, and a new queue on the same
//! device then runs a kernel correctly. The spinning kernel is `spin_until` from
//! tests/fixtures/kernels.cu: it ends by itself after `max_ns` of %globaltimer (60 s here), so a
//! failed recovery never leaves a GPU spinning for long. Runs on the device under test (default
//! the emulated Orin; `TEGRAGPU_TEST_DEVICE=rm` on the H100/H200) and prints the timings.

mod common;

use common::{data_flags as host_words, params_of as params};

use std::time::{Duration, Instant};
use tegragpu::core::{Device, Kernel, QueueKind};
use tegragpu::Status;

const SPIN_NS: u64 = 60_000_000_000;
const SHORT_NS: u64 = 300_000_000;
const LONG_NS: u64 = 10_000_000_000;

/// A queue with fill_u32 ready to run: made before the hang, run during or after it.
struct Filler {
    k: Kernel,
    q: tegragpu::core::Queue,
    b: tegragpu::core::Buffer,
    s: tegragpu::core::Signal,
    runs: u64,
    _m: tegragpu::core::Module,
}

impl Filler {
    fn new(dev: &Device) -> Result<Filler, String> {
        let m = common::fixtures(dev);
        let k = m.kernel("fill_u32").map_err(|e| e.to_string())?;
        let q = dev
            .create_queue(QueueKind::Compute)
            .map_err(|e| e.to_string())?;
        let b = dev
            .alloc(4 * 4096, host_words())
            .map_err(|e| e.to_string())?;
        let s = dev.create_signal(0).map_err(|e| e.to_string())?;
        Ok(Filler {
            k,
            q,
            b,
            s,
            runs: 0,
            _m: m,
        })
    }

    /// Fill 4,096 words with `value`; waits up to `timeout_ns` and checks every word.
    fn run(&mut self, value: u32, timeout_ns: u64) -> Result<(), String> {
        let n = 4096u32;
        let p = params(&self.k, &[self.b.gpu_va(), u64::from(value), u64::from(n)]);
        self.runs += 1;
        self.q
            .launch(&self.k, &common::cfg(n / 256, 256), &p)
            .map_err(|e| e.to_string())?;
        self.q
            .signal(&self.s, self.runs)
            .map_err(|e| e.to_string())?;
        self.q.submit().map_err(|e| e.to_string())?;
        self.s
            .wait(self.runs, timeout_ns)
            .map_err(|e| e.to_string())?;
        self.check(value)
    }

    fn check(&self, value: u32) -> Result<(), String> {
        let w = self.b.map_cpu().map_err(|e| e.to_string())? as *const u32;
        for i in 0..4096 {
            // SAFETY: 4,096 words, mapped.
            let v = unsafe { w.add(i).read_volatile() };
            if v != value {
                return Err(format!("word {i} = {v:#x}, expected {value:#x}"));
            }
        }
        Ok(())
    }
}

/// fill_u32 on a new queue of `dev`; returns whether every word came out right.
fn fill_works(dev: &Device, value: u32) -> Result<(), String> {
    Filler::new(dev)?.run(value, LONG_NS)
}

fn on_emulator() -> bool {
    std::env::var("TEGRAGPU_TEST_DEVICE").map_or(true, |d| d == "emu")
}

#[test]
fn a_kernel_that_does_not_end_times_out_and_abort_recovers() {
    let dev = common::device();
    let name = dev.info().name.clone();
    let m = common::fixtures(&dev);
    let spin = m.kernel("spin_until").expect("spin_until in the fixture");
    let flag = dev.alloc(4096, host_words()).unwrap();
    let mut q = dev.create_queue(QueueKind::Compute).unwrap();
    let mut other_q = Filler::new(&dev).unwrap();
    let dev2 = common::device();
    let mut other_dev_fill = Filler::new(&dev2).unwrap();
    let done = dev.create_signal(0).unwrap();
    q.launch(
        &spin,
        &common::cfg(1, 32),
        &params(&spin, &[flag.gpu_va(), SPIN_NS]),
    )
    .unwrap();
    q.signal(&done, 1).unwrap();
    // Also recorded behind the spin: a buffer freed before the abort is held until then.
    let victim = dev.alloc(1 << 20, host_words()).unwrap();
    let fk = m.kernel("fill_u32").unwrap();
    q.launch(
        &fk,
        &common::cfg(1, 256),
        &params(&fk, &[victim.gpu_va(), 7, 256]),
    )
    .unwrap();
    q.submit().unwrap();
    drop(victim);

    // 1. The waits time out and say how far the work got.
    let t = Instant::now();
    let e = done.wait(1, SHORT_NS).unwrap_err();
    let to_timeout = t.elapsed();
    assert_eq!(e.status, Status::Timeout, "{e}");
    assert!(
        done.value() == 0,
        "the spin ended early: signal {}",
        done.value()
    );
    let e = q.synchronize(SHORT_NS).unwrap_err();
    assert_eq!(e.status, Status::Timeout, "{e}");
    assert!(e.to_string().contains("reached"), "{e}");

    // 2. Other queues of the device, and another device, made before the hang, while it spins.
    //    The emulated GPU runs them; on the RM backend a spinning kernel that cannot be
    //    preempted holds the GR engine (reported, then checked to complete after the abort).
    let t = Instant::now();
    let other_queue = other_q.run(0x1111_0001, 2_000_000_000);
    let other_queue_t = t.elapsed();
    let t = Instant::now();
    let other_device = other_dev_fill.run(0x2222_0002, 2_000_000_000);
    let other_device_t = t.elapsed();
    println!(
        "hang: during the hang: another queue {other_queue:?} in {:.2} ms, another device \
         {other_device:?} in {:.2} ms",
        other_queue_t.as_secs_f64() * 1e3,
        other_device_t.as_secs_f64() * 1e3
    );
    if on_emulator() {
        other_queue
            .as_ref()
            .expect("another queue of the same device during the hang");
        other_device
            .as_ref()
            .expect("another device during the hang");
    }
    assert_eq!(done.value(), 0, "still spinning");
    assert!(
        dev.held_for_queued_work().0 >= 1,
        "the freed buffer is held for the hung work"
    );

    // 3. Abort: at once, the memory the work held is released, the signal keeps its value.
    let t = Instant::now();
    q.abort();
    let to_abort = t.elapsed();
    println!("hang: abort took {:.3} ms", to_abort.as_secs_f64() * 1e3);
    let t = Instant::now();
    let r1 = other_q.s.wait(other_q.runs, LONG_NS);
    let r2 = other_dev_fill.s.wait(other_dev_fill.runs, LONG_NS);
    println!(
        "hang: after the abort, {:.1} ms: other queue {r1:?}, other device {r2:?}, fault {:?}",
        t.elapsed().as_secs_f64() * 1e3,
        dev.fault_report()
    );
    // Another device is never harmed: its work completes correctly.
    r2.expect("the other device's fill after the abort");
    other_dev_fill
        .check(0x2222_0002)
        .expect("the other device's fill");
    // The device either stays usable (the abort preempted the channel) or the kernel driver
    // stopped the device's channels because the spinning context could not be switched out
    // (RM: Xid 109, CTX SWITCH TIMEOUT, when another context wants the GPU): a sticky
    // TG_ERROR_DEVICE_FAULT, recovered by closing and reopening the device.
    let fault = dev.fault_report();
    if on_emulator() {
        assert!(fault.is_none(), "{fault:?}");
    }
    let t = Instant::now();
    let mut held = dev.held_for_queued_work().0;
    while held != 0 && t.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(1));
        held = dev.held_for_queued_work().0;
    }
    assert_eq!(held, 0, "allocations still held after the abort");
    assert_eq!(done.value(), 0, "the abandoned work wrote its signal");
    let t = Instant::now();
    let recovery = if fault.is_none() {
        // 4a. A new queue on the same device runs a kernel correctly; so did the other queue.
        r1.expect("the other queue's fill after the abort");
        other_q.check(0x1111_0001).expect("the other queue's fill");
        fill_works(&dev, 0x3333_0003).expect("a new queue after the abort");
        assert!(dev.fault_report().is_none(), "{:?}", dev.fault_report());
        // The flag the spin polls: setting it now must not matter (nothing runs it any more).
        // SAFETY: 4 KiB mapped buffer.
        unsafe { (flag.map_cpu().unwrap() as *mut u32).write_volatile(1) };
        dev.synchronize(LONG_NS)
            .expect("device idle after the abort");
        "new queue"
    } else {
        // 4b. New work on the faulted device is refused; a reopened device works.
        let e = dev.create_queue(QueueKind::Compute).err();
        assert!(
            e.as_ref().is_some_and(|e| e.status == Status::DeviceFault) || {
                let mut f = Filler::new(&dev).unwrap();
                f.run(1, SHORT_NS).is_err()
            },
            "the faulted device accepted work"
        );
        drop((other_q, flag, done, spin, m));
        drop(dev);
        fill_works(&common::device(), 0x3333_0003).expect("a reopened device after the fault");
        "device faulted; closed and reopened"
    };
    let after = t.elapsed();
    println!(
        "hang: {name} — TIMEOUT after {:.1} ms (asked {} ms); abort {:.3} ms; recovery: \
         {recovery}, then a correct kernel in {:.2} ms",
        to_timeout.as_secs_f64() * 1e3,
        SHORT_NS / 1_000_000,
        to_abort.as_secs_f64() * 1e3,
        after.as_secs_f64() * 1e3
    );
}

#[test]
fn closing_the_device_with_a_kernel_that_does_not_end_and_reopening_it_recovers() {
    let t0 = Instant::now();
    {
        let dev = common::device();
        let m = common::fixtures(&dev);
        let spin = m.kernel("spin_until").unwrap();
        let flag = dev.alloc(4096, host_words()).unwrap();
        let mut q = dev.create_queue(QueueKind::Compute).unwrap();
        let done = dev.create_signal(0).unwrap();
        q.launch(
            &spin,
            &common::cfg(1, 32),
            &params(&spin, &[flag.gpu_va(), SPIN_NS]),
        )
        .unwrap();
        q.signal(&done, 1).unwrap();
        q.submit().unwrap();
        assert_eq!(done.wait(1, SHORT_NS).unwrap_err().status, Status::Timeout);
        // Closing everything: a queue dropped normally drains with its own timeout; make it
        // short, as an application that gives up on the work would.
        q.set_timeout_ns(SHORT_NS);
    }
    let close = t0.elapsed();
    let t = Instant::now();
    let dev = common::device();
    fill_works(&dev, 0x4444_0004).expect("a device opened after closing the hung one");
    println!(
        "hang: close with a spinning kernel {:.1} ms (queue timeout {} ms); reopen + kernel {:.2} ms",
        close.as_secs_f64() * 1e3,
        SHORT_NS / 1_000_000,
        t.elapsed().as_secs_f64() * 1e3
    );
}
