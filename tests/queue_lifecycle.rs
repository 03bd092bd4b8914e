//! Creating and destroying queues while another queue of the device runs a long kernel, on the
//! device under test (default the emulated Orin; `TEGRAGPU_TEST_DEVICE=rm` on the H100/H200):
//! the long kernel is neither stopped nor faulted, the new queue works, and the device stays
//! usable. On nvgpu a channel's setup and teardown preempt the device's whole channel group, so
//! the queues take channels made when the device opened. RM times out adding a channel to the
//! group while its kernel runs, so there queue creation is refused at once while the device is
//! busy (`TG_ERROR_NOT_SUPPORTED`), and destroying queues does not disturb the kernel. Prints
//! the timings seen.

mod common;

use common::{data_flags as host_words, params_of as params};

use std::time::{Duration, Instant};
use tegragpu::core::{BackendKind, QueueKind};
use tegragpu::Status;

#[test]
fn queues_made_and_destroyed_while_a_long_kernel_runs() {
    let dev = common::device();
    let m = common::fixtures(&dev);
    let spin = m.kernel("spin_until").unwrap();
    let fill = m.kernel("fill_u32").unwrap();
    let flag = dev.alloc(4096, host_words()).unwrap();
    let out = dev.alloc(4 * 1024, host_words()).unwrap();
    let done = dev.create_signal(0).unwrap();
    let mut long = dev.create_queue(QueueKind::Compute).unwrap();
    // Made before the long kernel, destroyed while it runs.
    let idle_q = dev.create_queue(QueueKind::Compute).unwrap();
    let copy_q = dev.create_queue(QueueKind::Copy).unwrap();
    // Ends when the flag is set, or after 60 s of GPU time.
    long.launch(
        &spin,
        &common::cfg(1, 32),
        &params(&spin, &[flag.gpu_va(), 60_000_000_000]),
    )
    .unwrap();
    long.signal(&done, 1).unwrap();
    long.submit().unwrap();
    std::thread::sleep(Duration::from_millis(150)); // running well past nvgpu's 100-ms preempt

    let t = Instant::now();
    let made = dev.create_queue(QueueKind::Compute);
    let made_t = t.elapsed();
    let mut busy_q = if dev.info().backend == BackendKind::Rm {
        let e = made.expect_err("RM: a queue made while a kernel runs");
        assert_eq!(e.status, Status::NotSupported, "{e}");
        assert!(e.message.contains("idle"), "{e}");
        None
    } else {
        Some(made.unwrap_or_else(|e| panic!("queue creation while a kernel runs: {e}")))
    };
    if let Some(q) = busy_q.as_mut() {
        q.launch(
            &fill,
            &common::cfg(4, 256),
            &params(&fill, &[out.gpu_va(), 0x5a5a, 1024]),
        )
        .unwrap();
        q.submit().unwrap();
    }
    // The long kernel ends in 300 ms, from another thread: a destroy that waits for the group
    // (RM) returns then.
    let f = flag.map_cpu().unwrap() as usize;
    let ender = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        // SAFETY: the flag word stays mapped until the test joins this thread.
        unsafe { (f as *mut u32).write_volatile(1) };
    });
    let t = Instant::now();
    drop(idle_q);
    drop(copy_q);
    let destroyed = t.elapsed();
    ender.join().unwrap();
    done.wait(1, 30_000_000_000)
        .unwrap_or_else(|e| panic!("the long kernel did not complete: {e}"));
    let mut busy_q = match busy_q {
        Some(q) => q,
        // RM: the device is idle again, so a queue can be made.
        None => {
            let mut q = dev.create_queue(QueueKind::Compute).unwrap();
            q.launch(
                &fill,
                &common::cfg(4, 256),
                &params(&fill, &[out.gpu_va(), 0x5a5a, 1024]),
            )
            .unwrap();
            q
        }
    };
    busy_q.synchronize(30_000_000_000).unwrap();
    let w = out.map_cpu().unwrap() as *const u32;
    for i in 0..1024 {
        // SAFETY: 1,024 mapped words.
        assert_eq!(unsafe { w.add(i).read_volatile() }, 0x5a5a, "word {i}");
    }
    assert!(dev.fault_report().is_none(), "{:?}", dev.fault_report());
    // The device goes on: the long queue and a new one run work.
    long.launch(
        &fill,
        &common::cfg(4, 256),
        &params(&fill, &[out.gpu_va(), 7, 1024]),
    )
    .unwrap();
    long.synchronize(10_000_000_000).unwrap();
    // SAFETY: as above.
    assert_eq!(unsafe { w.add(1023).read_volatile() }, 7);
    eprintln!(
        "{}: while a kernel ran, queue creation took {made_t:?}; destroying two queues {destroyed:?}",
        dev.info().name
    );
}
