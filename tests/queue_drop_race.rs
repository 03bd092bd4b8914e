//! A queue's last reference can go while another thread checks fences (a signal created or
//! dropped, memory freed): the queue, and with it its timeline signal, is then dropped in that
//! thread, possibly inside the device's signal pool or queue list. Threads that create and drop
//! queues and signals at once must never deadlock (runs on the device under test).

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tegragpu::core::QueueKind;

#[test]
fn queues_and_signals_dropped_concurrently_never_deadlock() {
    let dev = common::device();
    let stop = Arc::new(AtomicBool::new(false));
    let progress = Arc::new(AtomicU64::new(0));
    let mut threads = Vec::new();
    for i in 0..3 {
        let (dev, stop, progress) = (dev.clone(), stop.clone(), progress.clone());
        threads.push(std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                if i == 0 {
                    // Queues with work submitted, dropped (their last reference may be another
                    // thread's fence check).
                    let mut q = dev.create_queue(QueueKind::Compute).unwrap();
                    let s = dev.create_signal(0).unwrap();
                    q.signal(&s, 1).unwrap();
                    q.submit().unwrap();
                    drop(q);
                } else {
                    // Signals made and dropped: fence checks over every queue of the device.
                    let s = dev.create_signal(0).unwrap();
                    drop(s);
                    let b = dev.alloc(4096, common::data_flags()).unwrap();
                    drop(b);
                }
                progress.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    let t0 = Instant::now();
    let mut last = (0, Instant::now());
    while t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(100));
        let p = progress.load(Ordering::Relaxed);
        if p != last.0 {
            last = (p, Instant::now());
        }
        assert!(
            last.1.elapsed() < Duration::from_secs(20),
            "no thread made progress for 20 s: deadlocked after {p} operations"
        );
    }
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    assert!(progress.load(Ordering::Relaxed) > 0);
}
