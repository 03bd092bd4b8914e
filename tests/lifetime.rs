//! Work that is recorded on a queue but not yet submitted holds what it uses exactly as
//! submitted work does: freeing a buffer, destroying a signal, or dropping a kernel and its module
//! between the launch and the submit never lets the GPU touch memory handed to someone else.
//! Runs on the device under test (default: the emulated Orin).

mod common;

use tegragpu::core::{MemFlags, QueueKind};

const TIMEOUT: u64 = 10_000_000_000;

fn zeroed() -> MemFlags {
    MemFlags {
        zeroed: true,
        ..Default::default()
    }
}

fn fill_params(k: &tegragpu::core::Kernel, va: u64, value: u32, n: u32) -> Vec<u8> {
    let a = k.attributes();
    let mut p = vec![0u8; a.param_bytes as usize];
    let at = |i: usize| a.params[i].offset as usize;
    p[at(0)..at(0) + 8].copy_from_slice(&va.to_le_bytes());
    p[at(1)..at(1) + 4].copy_from_slice(&value.to_le_bytes());
    p[at(2)..at(2) + 4].copy_from_slice(&n.to_le_bytes());
    p
}

fn words(b: &tegragpu::core::Buffer, n: usize) -> Vec<u32> {
    let p = b.map_cpu().expect("CPU mapping") as *const u32;
    // SAFETY: the buffer is at least n words and mapped.
    (0..n)
        .map(|i| unsafe { p.add(i).read_volatile() })
        .collect()
}

#[test]
fn freeing_a_buffer_between_launch_and_submit_keeps_its_memory_for_the_launch() {
    let dev = common::device();
    let m = common::fixtures(&dev);
    let k = m.kernel("fill_u32").unwrap();
    let mut q = dev.create_queue(QueueKind::Compute).unwrap();
    // Start from an idle queue: only the recorded (unsubmitted) work below may hold anything.
    q.synchronize(TIMEOUT).unwrap();
    dev.synchronize(TIMEOUT).unwrap();
    let done = dev.create_signal(0).unwrap();
    let n = 1024u32;
    let first = dev.alloc(4 * n as u64, zeroed()).unwrap();
    let first_va = first.gpu_va();
    q.launch(
        &k,
        &common::cfg(n / 256, 256),
        &fill_params(&k, first_va, 0xAB, n),
    )
    .unwrap();
    drop(first); // tg_buf_free before tg_queue_submit
    assert_eq!(
        dev.held_for_queued_work().0,
        1,
        "the freed buffer is held for the recorded launch"
    );
    // New buffers of the same size must not get the memory the recorded launch writes.
    let fresh: Vec<_> = (0..4)
        .map(|_| dev.alloc(4 * n as u64, zeroed()).unwrap())
        .collect();
    assert!(
        fresh.iter().all(|b| b.gpu_va() != first_va),
        "freed memory reused while a recorded launch uses it"
    );
    q.signal(&done, 1).unwrap();
    q.submit().unwrap();
    done.wait(1, TIMEOUT).unwrap();
    for b in &fresh {
        assert!(
            words(b, n as usize).iter().all(|&w| w == 0),
            "a new buffer received the launch's writes"
        );
    }
    // Once the work is done the memory is free again.
    dev.synchronize(TIMEOUT).unwrap();
    assert_eq!(dev.held_for_queued_work().0, 0);
}

#[test]
fn destroying_a_signal_between_record_and_submit_keeps_its_slot() {
    let dev = common::device();
    let mut q = dev.create_queue(QueueKind::Compute).unwrap();
    // Start from an idle queue: only the recorded (unsubmitted) work below may hold anything.
    q.synchronize(TIMEOUT).unwrap();
    dev.synchronize(TIMEOUT).unwrap();
    let s = dev.create_signal(0).unwrap();
    let slot = s.gpu_va();
    q.signal(&s, 77).unwrap();
    drop(s); // tg_signal_destroy before tg_queue_submit
    assert_eq!(
        dev.held_for_queued_work().1,
        1,
        "the slot is held for the recorded signal"
    );
    let fresh: Vec<_> = (0..8).map(|_| dev.create_signal(0).unwrap()).collect();
    assert!(
        fresh.iter().all(|f| f.gpu_va() != slot),
        "the slot went to a new signal"
    );
    q.submit().unwrap();
    q.synchronize(TIMEOUT).unwrap();
    assert!(
        fresh.iter().all(|f| f.value() == 0),
        "a new signal received the stale write"
    );
    assert_eq!(dev.held_for_queued_work().1, 0);
}

#[test]
fn dropping_kernel_and_module_between_launch_and_submit_keeps_the_code() {
    let dev = common::device();
    let mut q = dev.create_queue(QueueKind::Compute).unwrap();
    // Start from an idle queue: only the recorded (unsubmitted) work below may hold anything.
    q.synchronize(TIMEOUT).unwrap();
    dev.synchronize(TIMEOUT).unwrap();
    let done = dev.create_signal(0).unwrap();
    let n = 1024u32;
    let out = dev.alloc(4 * n as u64, zeroed()).unwrap();
    let code_va;
    {
        let m = common::fixtures(&dev);
        let k = m.kernel("fill_u32").unwrap();
        code_va = k.program_va();
        q.launch(
            &k,
            &common::cfg(n / 256, 256),
            &fill_params(&k, out.gpu_va(), 0x5A5A, n),
        )
        .unwrap();
    } // tg_kernel_destroy + tg_module_destroy before tg_queue_submit
    assert_eq!(
        dev.held_for_queued_work().0,
        1,
        "the code is held for the recorded launch"
    );
    // Load more code: none of it may land where the recorded launch's code is.
    let others: Vec<_> = (0..4).map(|_| common::fixtures(&dev)).collect();
    for o in &others {
        let k = o.kernel("fill_u32").unwrap();
        assert_ne!(
            k.program_va(),
            code_va,
            "code memory reused while a recorded launch uses it"
        );
    }
    q.signal(&done, 1).unwrap();
    q.submit().unwrap();
    done.wait(1, TIMEOUT).unwrap();
    assert!(words(&out, n as usize).iter().all(|&w| w == 0x5A5A));
}

#[test]
fn raising_the_stack_limit_does_not_wait_for_other_queues() {
    // A queue blocked on a signal nobody sets must not make the local-memory growth wait (it
    // used to synchronize the whole device and time out after 10 s).
    let dev = common::device();
    let blocked_on = dev.create_signal(0).unwrap();
    let mut blocked = dev.create_queue(QueueKind::Compute).unwrap();
    blocked.wait(&blocked_on, 1).unwrap();
    blocked.submit().unwrap();
    dev.set_stack_limit(16 * 1024)
        .expect("grow the stack while another queue waits");
    let m = common::fixtures(&dev);
    m.kernel("uses_local")
        .expect("a stack-using kernel while another queue waits");
    blocked_on.set(1);
    blocked.synchronize(TIMEOUT).unwrap();
    dev.set_stack_limit(1024).unwrap();
}
