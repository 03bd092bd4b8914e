//! With `TEGRAGPU_QUEUE_OVERLAP=1`, a compute queue tells that its own work is done without
//! waiting for the whole engine to be idle (so the queues of a device can run side by side):
//! every launch's QMD releases the launch's number to the queue's launch counter, except that
//! a submit ending with a launch has that launch's QMD release the queue's timeline itself; a
//! release or launch after it first acquires what the last launch releases. On the emulated Orin (or `TEGRAGPU_TEST_DEVICE`): the counter reaches
//! the number of every launch, through both ways a launch is built (a new QMD, and a launch
//! image whose QMD is reused with a new payload), the work is correct and in order, and a
//! concurrent launch makes the queue fall back to waiting for idle once.

mod common;
use common::{cfg, data_flags, fixtures, params_of, SEC};
use tegragpu::core::{Device, LaunchConfig, QueueConfig, QueueKind};

/// A device whose compute queues take the launch counter (`TEGRAGPU_QUEUE_OVERLAP=1`, read
/// when a queue is created; both tests set the same value).
fn open() -> Device {
    std::env::set_var("TEGRAGPU_QUEUE_OVERLAP", "1");
    Device::open(Some(
        &std::env::var("TEGRAGPU_TEST_DEVICE").unwrap_or_else(|_| "emu".into()),
    ))
    .unwrap()
}

#[test]
fn launches_release_their_numbers_and_submits_wait_for_them() {
    let dev = open();
    let m = fixtures(&dev);
    let inc = m.kernel("increment").unwrap();
    let fill = m.kernel("fill_u32").unwrap();
    let counter = dev.alloc(4096, data_flags()).unwrap();
    let out = dev.alloc(4096 * 4, data_flags()).unwrap();
    let mut q = dev.create_queue(QueueKind::Compute).unwrap();
    assert_eq!(q.launch_counter(), Some((0, 0, true)));

    // 25 launches of one kernel and configuration (the launch image path after the first),
    // then one of another kernel (a new QMD), a submit after each fifth.
    for i in 1..=25u64 {
        let p = params_of(&inc, &[counter.gpu_va(), i]);
        q.launch(&inc, &cfg(1, 1), &p).unwrap();
        if i % 5 == 0 {
            q.submit().unwrap();
        }
    }
    let p = params_of(&fill, &[out.gpu_va(), 7, 4096]);
    q.launch(&fill, &cfg(16, 256), &p).unwrap();
    q.synchronize(30 * SEC).unwrap();
    // Launches 5, 10, ..., 25 and 26 ended their submits: their QMDs released the timeline
    // instead of the counter (the submit added no method), so the counter holds 24.
    assert_eq!(q.launch_counter(), Some((24, 26, true)));
    let sum = u64::from_le_bytes(unsafe { counter.as_slice() }[..8].try_into().unwrap());
    assert_eq!(sum, (1..=25).sum::<u64>(), "increments lost or reordered");
    assert!(unsafe { out.as_slice() }
        .chunks(4)
        .all(|w| u32::from_le_bytes(w.try_into().unwrap()) == 7));

    // A signal after a launch follows it (acquire, then release without wait-for-idle).
    let sig = dev.create_signal(0).unwrap();
    let p = params_of(&inc, &[counter.gpu_va(), 100]);
    q.launch(&inc, &cfg(1, 1), &p).unwrap();
    q.signal(&sig, 1).unwrap();
    q.submit().unwrap();
    sig.wait(1, 30 * SEC).unwrap();
    let sum = u64::from_le_bytes(unsafe { counter.as_slice() }[..8].try_into().unwrap());
    assert_eq!(
        sum,
        (1..=25).sum::<u64>() + 100,
        "the signal passed its launch"
    );
    assert_eq!(q.launch_counter().map(|c| c.1), Some(27));

    // A signal in a submit of its own, after a submit its launch's QMD closed, still follows
    // the launch; so does the next launch.
    let p = params_of(&inc, &[counter.gpu_va(), 1000]);
    q.launch(&inc, &cfg(1, 1), &p).unwrap();
    q.submit().unwrap();
    q.signal(&sig, 2).unwrap();
    q.submit().unwrap();
    sig.wait(2, 30 * SEC).unwrap();
    let sum = u64::from_le_bytes(unsafe { counter.as_slice() }[..8].try_into().unwrap());
    assert_eq!(
        sum,
        (1..=25).sum::<u64>() + 1100,
        "the signal passed its launch"
    );
    let p = params_of(&inc, &[counter.gpu_va(), 10_000]);
    q.launch(&inc, &cfg(1, 1), &p).unwrap();
    q.submit().unwrap();
    q.synchronize(30 * SEC).unwrap();
    let sum = u64::from_le_bytes(unsafe { counter.as_slice() }[..8].try_into().unwrap());
    assert_eq!(sum, (1..=25).sum::<u64>() + 11_100);
    assert_eq!(q.launch_counter().map(|c| c.1), Some(29));

    // A concurrent launch may complete before the one before it: the queue is not ordered
    // until the next release waits for idle, then it is again.
    let conc = LaunchConfig {
        concurrent: true,
        ..cfg(1, 1)
    };
    // (The two launches add to different words: they may run at the same time.)
    let p = params_of(&inc, &[counter.gpu_va(), 1]);
    q.launch(&inc, &cfg(1, 1), &p).unwrap();
    let p = params_of(&inc, &[counter.gpu_va() + 8, 1]);
    q.launch(&inc, &conc, &p).unwrap();
    assert_eq!(q.launch_counter().map(|c| (c.1, c.2)), Some((31, false)));
    q.synchronize(30 * SEC).unwrap();
    assert_eq!(q.launch_counter().map(|c| c.2), Some(true));
    let sum = u64::from_le_bytes(unsafe { counter.as_slice() }[..8].try_into().unwrap());
    assert_eq!(sum, (1..=25).sum::<u64>() + 11_101);
    let other = u64::from_le_bytes(unsafe { counter.as_slice() }[8..16].try_into().unwrap());
    assert_eq!(other, 1);
}

#[test]
fn copy_queues_have_no_launch_counter() {
    let dev = open();
    let q = dev.create_queue(QueueKind::Copy).unwrap();
    assert_eq!(q.launch_counter(), None);
}

/// A signal released on two queues keeps the newest value whichever queue finishes first:
/// queue P's release of 1 waits for a gate the CPU opens later, queue Q then records a release
/// of 2. Q's release must wait for P's (else P's 1 would land after Q's 2 and the signal would go
/// back, as an event recorded again on a second stream would under CUDA).
#[test]
fn a_signal_released_on_two_queues_does_not_go_back() {
    let dev = open();
    let gate = dev.create_signal(0).unwrap();
    let s = dev.create_signal(0).unwrap();
    let mut p = dev.create_queue(QueueKind::Compute).unwrap();
    let mut q = dev.create_queue(QueueKind::Compute).unwrap();
    p.wait(&gate, 1).unwrap();
    p.signal(&s, 1).unwrap();
    p.submit().unwrap();
    q.signal(&s, 2).unwrap();
    q.submit().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(s.value(), 0, "Q's release passed P's earlier one");
    gate.set(1);
    p.synchronize(30 * SEC).unwrap();
    q.synchronize(30 * SEC).unwrap();
    assert_eq!(s.value(), 2);
}

/// A release recorded on another queue but not submitted there is not waited for: that queue
/// may never submit it, and the second queue must still finish.
#[test]
fn a_release_only_recorded_elsewhere_is_not_waited_for() {
    let dev = open();
    let s = dev.create_signal(0).unwrap();
    let mut p = dev.create_queue(QueueKind::Compute).unwrap();
    let mut q = dev.create_queue(QueueKind::Compute).unwrap();
    p.signal(&s, 1).unwrap();
    q.signal(&s, 2).unwrap();
    q.submit().unwrap();
    q.synchronize(30 * SEC).unwrap();
    assert_eq!(s.value(), 2);
    p.abort();
}

/// A signal directly after a launch adds no method: the launch's QMD releases it (release slot
/// 1, with a timestamp) when its grid completes. The QMD slot keeps its QMD for later launches
/// of the same kernel, which must not release the signal again.
#[test]
fn a_signal_after_a_launch_rides_on_its_qmd_once() {
    let dev = open();
    let m = fixtures(&dev);
    let inc = m.kernel("increment").unwrap();
    let counter = dev.alloc(4096, data_flags()).unwrap();
    // 16 QMD slots: the launches below come back to the signal's slot.
    let mut q = dev
        .create_queue_with(QueueKind::Compute, QueueConfig { depth: 16 })
        .unwrap();
    let early = dev.create_signal(0).unwrap();
    let s = dev.create_signal(0).unwrap();
    q.signal(&early, 1).unwrap();
    q.submit().unwrap();
    early.wait(1, 30 * SEC).unwrap();
    let sum = || u64::from_le_bytes(unsafe { counter.as_slice() }[..8].try_into().unwrap());
    for i in 1..=3u64 {
        let p = params_of(&inc, &[counter.gpu_va(), 1]);
        q.launch(&inc, &cfg(1, 1), &p).unwrap();
        let before = q.command_dwords();
        q.signal(&s, 10 * i).unwrap();
        assert_eq!(q.command_dwords(), before, "the signal added methods");
        q.submit().unwrap();
        s.wait(10 * i, 30 * SEC).unwrap();
        assert_eq!(sum(), i, "the signal came before its launch's work");
        assert!(
            s.timestamp() >= early.timestamp() && s.timestamp() != 0,
            "no timestamp: {} (an earlier release: {})",
            s.timestamp(),
            early.timestamp()
        );
    }
    // A second signal after the same launch takes the method path (slot 1 is taken).
    let p = params_of(&inc, &[counter.gpu_va(), 1]);
    q.launch(&inc, &cfg(1, 1), &p).unwrap();
    q.signal(&s, 40).unwrap();
    let before = q.command_dwords();
    q.signal(&early, 2).unwrap();
    assert!(q.command_dwords() > before);
    q.synchronize(30 * SEC).unwrap();
    assert_eq!((s.value(), early.value(), sum()), (40, 2, 4));
    // Every slot again, the same kernel and configuration (the QMDs are reused): none may
    // release the signal.
    s.set(0);
    for _ in 0..40 {
        let p = params_of(&inc, &[counter.gpu_va(), 1]);
        q.launch(&inc, &cfg(1, 1), &p).unwrap();
        q.submit().unwrap();
    }
    q.synchronize(30 * SEC).unwrap();
    assert_eq!(sum(), 44);
    assert_eq!(s.value(), 0, "a reused QMD released the signal again");
}

/// A wait recorded after a launch is passed before what follows it counts as done: a signal
/// or a submit after the wait must not ride on the launch's QMD.
#[test]
fn a_wait_after_a_launch_holds_back_the_signal_and_the_submit() {
    let dev = open();
    let m = fixtures(&dev);
    let inc = m.kernel("increment").unwrap();
    let counter = dev.alloc(4096, data_flags()).unwrap();
    let gate = dev.create_signal(0).unwrap();
    let s = dev.create_signal(0).unwrap();
    let mut q = dev.create_queue(QueueKind::Compute).unwrap();
    let mut r = dev.create_queue(QueueKind::Compute).unwrap();
    let p = params_of(&inc, &[counter.gpu_va(), 1]);
    q.launch(&inc, &cfg(1, 1), &p).unwrap();
    q.wait(&gate, 1).unwrap();
    q.signal(&s, 1).unwrap();
    q.submit().unwrap();
    r.launch(&inc, &cfg(1, 1), &p).unwrap();
    r.wait(&gate, 2).unwrap();
    r.submit().unwrap();
    let done = r.submitted_point();
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(s.value(), 0, "the signal passed the wait before it");
    assert!(!done.reached(), "the submit passed the wait before it");
    gate.set(2);
    q.synchronize(30 * SEC).unwrap();
    r.synchronize(30 * SEC).unwrap();
    assert_eq!(s.value(), 1);
    let sum = u64::from_le_bytes(unsafe { counter.as_slice() }[..8].try_into().unwrap());
    assert_eq!(sum, 2);
}

/// The same for a command buffer's signal node: a replay whose node releases 2 waits for
/// another queue's submitted release of 1 (queues run side by side, so the replay could
/// otherwise finish first and the older 1 land after its 2).
#[test]
fn a_replayed_signal_node_does_not_go_back() {
    let dev = open();
    let gate = dev.create_signal(0).unwrap();
    let s = std::sync::Arc::new(dev.create_signal(0).unwrap());
    let mut cb = dev.create_cmdbuf().unwrap();
    cb.signal(&s, 2).unwrap();
    cb.finish().unwrap();
    let mut p = dev.create_queue(QueueKind::Compute).unwrap();
    let mut q = dev.create_queue(QueueKind::Compute).unwrap();
    p.wait(&gate, 1).unwrap();
    p.signal(&s, 1).unwrap();
    p.submit().unwrap();
    q.replay(&mut cb).unwrap();
    q.submit().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(s.value(), 0, "the replay's release passed P's earlier one");
    gate.set(1);
    p.synchronize(30 * SEC).unwrap();
    q.synchronize(30 * SEC).unwrap();
    assert_eq!(s.value(), 2);
}

/// A cooperative launch needs all of its blocks resident at once: it is sent after a wait for
/// the engine to be idle (which also waits for the other queues' kernels), not after the
/// acquire a plain launch after a launch gets.
#[test]
fn a_cooperative_launch_starts_on_an_idle_engine() {
    let dev = open();
    let m = fixtures(&dev);
    let inc = m.kernel("increment").unwrap();
    let counter = dev.alloc(4096, data_flags()).unwrap();
    let mut q = dev.create_queue(QueueKind::Compute).unwrap();
    let mut w = [0u32; 4];
    let mut pb = tegragpu::hw::pushbuf::PushBuf::for_arch(&mut w, dev.arch());
    pb.wait_for_idle().unwrap();
    let n = pb.len();
    let wfi = w[..n].to_vec();
    let has_wfi = |words: &[u32]| words.windows(wfi.len()).any(|x| x == &wfi[..]);
    let p = params_of(&inc, &[counter.gpu_va(), 1]);
    q.launch(&inc, &cfg(1, 1), &p).unwrap();
    // A plain launch after a launch: no wait for idle.
    let before = q.command_dwords();
    q.launch(&inc, &cfg(1, 1), &p).unwrap();
    let words = q.recent_command_words(q.command_dwords() - before);
    assert!(!has_wfi(&words), "plain launch: {words:x?}");
    // A cooperative one: a wait for idle, also as the first command after a submit.
    let coop = LaunchConfig {
        cooperative: true,
        ..cfg(1, 1)
    };
    for submit_first in [false, true] {
        if submit_first {
            q.submit().unwrap();
        }
        let before = q.command_dwords();
        q.launch(&inc, &coop, &p).unwrap();
        let words = q.recent_command_words(q.command_dwords() - before);
        assert!(has_wfi(&words), "cooperative launch: {words:x?}");
    }
    q.synchronize(30 * SEC).unwrap();
    let sum = u64::from_le_bytes(unsafe { counter.as_slice() }[..8].try_into().unwrap());
    assert_eq!(sum, 4);
}
