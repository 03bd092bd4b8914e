//! The emulated Orin and the process's RLIMIT_NOFILE (issue item 10): opening "emu" used to raise
//! the soft limit silently. Now it leaves the limit alone, and when the process runs out of file
//! descriptors an allocation fails with EMFILE and a message that says what to do (live buffers
//! hold no descriptor, issue item 9, so that takes other open files). The limit is
//! process-wide, so this file holds a single test and runs as its own process.

use tegragpu::core::{Device, MemFlags};
use tegragpu::Status;

fn nofile() -> (u64, u64) {
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: rl is a valid out-pointer.
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) }, 0);
    (rl.rlim_cur, rl.rlim_max)
}

fn set_soft(cur: u64) {
    let (_, max) = nofile();
    let rl = libc::rlimit {
        rlim_cur: cur,
        rlim_max: max,
    };
    // SAFETY: rl is a valid rlimit.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &rl) }, 0);
}

#[test]
fn emu_leaves_rlimit_nofile_alone_and_running_out_fails_clearly() {
    let (orig, max) = nofile();
    let soft = max.min(256);
    set_soft(soft);
    let flags = MemFlags {
        cpu_cached: true,
        ..Default::default()
    };

    let dev = Device::open(Some("emu")).expect("opening the emulated Orin");
    let first = dev.alloc(4096, flags).expect("one buffer");
    assert_eq!(
        nofile().0,
        soft,
        "opening \"emu\" and allocating changed the RLIMIT_NOFILE soft limit"
    );

    // Live buffers hold no fd (issue item 9): twice as many buffers as the soft limit.
    let mut bufs = vec![first];
    for i in 1..2 * soft as usize {
        bufs.push(
            dev.alloc(4096, flags)
                .unwrap_or_else(|e| panic!("buffer {i} (soft limit {soft}): {e:?}")),
        );
    }
    // Creating a buffer still needs one fd for a moment (GET_FD): with every fd number taken,
    // the allocation fails with EMFILE, saying what to do (it used to say ENOMEM).
    let mut files = Vec::new();
    while let Ok(f) = std::fs::File::open("/dev/null") {
        files.push(f);
        assert!(
            files.len() < 10_000,
            "no limit reached with soft limit {soft}"
        );
    }
    let err = dev.alloc(4096, flags).unwrap_err();
    assert_eq!(err.status, Status::Os, "{err:?}");
    assert_eq!(err.errno, Some(libc::EMFILE), "{err:?}");
    assert!(
        err.message.contains("EMFILE") && err.message.contains("ulimit -n"),
        "{}",
        err.message
    );
    assert_eq!(nofile().0, soft);
    // A free fd makes room again.
    files.pop();
    bufs.push(
        dev.alloc(4096, flags)
            .expect("allocation after closing one file"),
    );
    drop(files);
    drop(bufs);
    drop(dev);
    set_soft(orig);
}
