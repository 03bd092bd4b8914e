//! Target (b): `capi_sequence`: the input bytes drive a sequence of C API calls on emulated
//! devices. This file holds the input reader, the world of live objects, the sequence and its
//! final checks; one call is `op` (`capi_sequence/op.rs`), a launch `op_launch`
//! (`capi_sequence/launch.rs`).

use super::*;

#[path = "capi_sequence/launch.rs"]
mod launch;
#[path = "capi_sequence/op.rs"]
mod op;

use op::op;

/// Reads the fuzz input as a stream of choices; zeros once exhausted.
pub struct Input<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Input<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Input { data, pos: 0 }
    }
    pub fn exhausted(&self) -> bool {
        self.pos >= self.data.len()
    }
    pub fn u8(&mut self) -> u8 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }
    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }
    pub fn u32(&mut self) -> u32 {
        u32::from(self.u16()) | (u32::from(self.u16()) << 16)
    }
    pub fn u64(&mut self) -> u64 {
        u64::from(self.u32()) | (u64::from(self.u32()) << 32)
    }
    /// 0..n (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n <= 256 {
            self.u8() as usize % n
        } else {
            self.u32() as usize % n
        }
    }
    pub fn chance(&mut self, one_in: u8) -> bool {
        self.u8() % one_in == 0
    }
    pub fn bytes(&mut self, n: usize) -> &'a [u8] {
        let start = self.pos.min(self.data.len());
        let end = (start + n).min(self.data.len());
        self.pos = start + n;
        &self.data[start..end]
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Dev,
    Buf,
    Module,
    Kernel,
    Queue,
    Signal,
}
const KINDS: [Kind; 6] = [
    Kind::Dev,
    Kind::Buf,
    Kind::Module,
    Kind::Kernel,
    Kind::Queue,
    Kind::Signal,
];

struct BufRec {
    h: usize,
    dev: usize,
    size: u64,
    va: u64,
    cpu: Option<*mut u8>,
}

struct KernRec {
    h: usize,
    name: &'static str,
    params: Vec<(u32, u32)>,
    param_bytes: u32,
    max_threads: u32,
    max_dyn: u32,
}

struct SigRec {
    h: usize,
    /// The smallest value ever written to the signal (initial, CPU or GPU): a GPU wait for at
    /// most this never blocks.
    min_assigned: u64,
    /// The largest target of a non-blocking GPU wait recorded on it: later writes are kept at
    /// or above it so that wait stays satisfied.
    floor: u64,
    gpu_written: bool,
    /// A GPU wait that may block was recorded on it: no GPU writes to it any more; the CPU
    /// sets it to `u64::MAX` ("releases" it) before anything that would wait for the queue.
    blocking: bool,
    released: bool,
}

/// The harness's view of the objects alive in one sequence.
#[derive(Default)]
struct World {
    devs: Vec<usize>,
    bufs: Vec<BufRec>,
    mods: Vec<(usize, bool)>,
    kernels: Vec<KernRec>,
    /// (queue, its device)
    queues: Vec<(usize, usize)>,
    sigs: Vec<SigRec>,
    dead: Vec<usize>,
    /// Ops left before blocking signals are released.
    unblock_in: Option<u32>,
    /// Exported dma-buf descriptors (owned by the caller, as documented) and what
    /// /proc/self/fd showed for them at export; closed at the end, after every device.
    fds: Vec<(std::os::fd::OwnedFd, std::path::PathBuf)>,
}

/// A handle as passed to a call, and whether the harness knows it to be live of the right kind.
#[derive(Clone, Copy)]
struct Pick {
    h: usize,
    live: bool,
}

const MAX_DEVS: usize = 3;
const MAX_BUFS: usize = 12;
const MAX_MODS: usize = 4;
const MAX_KERNELS: usize = 16;
const MAX_QUEUES: usize = 4;
const MAX_SIGS: usize = 12;
const MAX_OPS: usize = 256;
/// Buffers at least this large may be passed to kernels as pointers (the fixture kernels write
/// at most 32 KiB past the pointer with the launch shapes and sizes the harness uses).
const ARENA_MIN: u64 = 64 << 10;

impl World {
    fn live(&self, k: Kind) -> Vec<usize> {
        match k {
            Kind::Dev => self.devs.clone(),
            Kind::Buf => self.bufs.iter().map(|b| b.h).collect(),
            Kind::Module => self.mods.iter().map(|m| m.0).collect(),
            Kind::Kernel => self.kernels.iter().map(|k| k.h).collect(),
            Kind::Queue => self.queues.iter().map(|q| q.0).collect(),
            Kind::Signal => self.sigs.iter().map(|s| s.h).collect(),
        }
    }

    fn is_live_any(&self, h: usize) -> bool {
        KINDS.iter().any(|&k| self.live(k).contains(&h))
    }

    /// A handle for an argument of kind `k`: usually a live one, else NULL, a destroyed one, a
    /// live one of another kind, a misaligned or random integer.
    fn pick(&self, inp: &mut Input, k: Kind) -> Pick {
        let live = self.live(k);
        let sel = inp.u8() % 32;
        if sel < 26 && !live.is_empty() {
            return Pick {
                h: live[inp.below(live.len())],
                live: true,
            };
        }
        let h = match sel % 6 {
            0 => 0,
            1 if !self.dead.is_empty() => self.dead[inp.below(self.dead.len())],
            2 => {
                let others: Vec<usize> = KINDS
                    .iter()
                    .filter(|&&o| o != k)
                    .flat_map(|&o| self.live(o))
                    .collect();
                if others.is_empty() {
                    0
                } else {
                    others[inp.below(others.len())]
                }
            }
            3 if !live.is_empty() => live[inp.below(live.len())] + 1 + inp.below(15),
            4 => 0x10_0000 + 16 * inp.u16() as usize,
            _ => inp.u64() as usize,
        };
        // Never an unknowingly live handle: the bookkeeping must stay exact.
        let h = if h != 0 && self.is_live_any(h) && !live.contains(&h) && sel % 6 != 2 {
            h ^ 1
        } else {
            h
        };
        Pick {
            h,
            live: live.contains(&h),
        }
    }

    fn forget(&mut self, h: usize) {
        self.devs.retain(|&d| d != h);
        self.bufs.retain(|b| b.h != h);
        self.mods.retain(|m| m.0 != h);
        self.kernels.retain(|k| k.h != h);
        self.queues.retain(|q| q.0 != h);
        self.sigs.retain(|s| s.h != h);
        self.dead.push(h);
    }

    fn sig(&mut self, h: usize) -> Option<&mut SigRec> {
        self.sigs.iter_mut().find(|s| s.h == h)
    }

    /// Set every blocking signal to `u64::MAX`, so that no queue waits for the CPU any more.
    fn release_all(&mut self) {
        for s in &mut self.sigs {
            if s.blocking && !s.released {
                let st = c!(tg_signal_set(s.h as *const tg_signal, u64::MAX));
                assert_eq!(st, tg_status::TG_OK, "releasing a signal");
                s.released = true;
            }
        }
        self.unblock_in = None;
    }

    fn release(&mut self, h: usize) {
        if let Some(s) = self.sig(h) {
            if s.blocking && !s.released {
                let st = c!(tg_signal_set(h as *const tg_signal, u64::MAX));
                assert_eq!(st, tg_status::TG_OK, "releasing a signal");
                s.released = true;
            }
        }
    }
}

/// A value from a few interesting classes.
fn value(inp: &mut Input) -> u64 {
    match inp.u8() % 8 {
        0 => 0,
        1 => 1,
        2 => u64::MAX,
        3 => 1 << 63,
        4 => u64::from(inp.u8()),
        5 => u64::from(inp.u32()),
        _ => inp.u64(),
    }
}

/// A short timeout: every wait of the sequence is bounded by 2 ms.
fn short_timeout(inp: &mut Input) -> u64 {
    match inp.u8() % 4 {
        0 => 0,
        1 => 1,
        2 => 1000 * u64::from(inp.u8() % 100),
        _ => u64::from(inp.u32() % 2_000_000),
    }
}

/// Assert the handle contract for a call with handle arguments `picks`: any argument not known
/// to be live of the right kind makes the call fail.
fn expect_fail_if_bad(call: &str, st: tg_status, picks: &[Pick]) {
    if picks.iter().any(|p| !p.live) {
        assert!(
            st != tg_status::TG_OK,
            "{call} accepted a NULL, destroyed, wrong-type or random handle"
        );
    }
}

/// The status of a destroy call: NULL is a no-op, a live handle is destroyed, anything else is
/// INVALID_HANDLE.
fn expect_destroy(call: &str, st: tg_status, p: Pick) {
    if p.h == 0 || p.live {
        assert_eq!(st, tg_status::TG_OK, "{call}({:#x}): {}", p.h, last_error());
    } else {
        assert_eq!(
            st,
            tg_status::TG_ERROR_INVALID_HANDLE,
            "{call}({:#x}) of a handle that is not live",
            p.h
        );
    }
}

/// The module bytes an op loads: mostly the fixtures, sometimes damaged or random.
fn module_bytes<'a>(inp: &mut Input<'a>) -> (Vec<u8>, bool) {
    match inp.u8() % 16 {
        0..=7 => (KERNELS_SM87.to_vec(), true),
        8 => (KERNELS_SM90.to_vec(), false), // another GPU's code: refused
        9..=10 => (GLOBALS_SM87.to_vec(), false),
        11 => (WARP_PTX.to_vec(), false),
        12 if inp.chance(2) => (WARP_FATBIN.to_vec(), false),
        12 => (WARP_HOST_ELF.to_vec(), false), // host object with .nv_fatbin
        13 => {
            let n = inp.below(KERNELS_SM87.len());
            (KERNELS_SM87[..n].to_vec(), false)
        }
        14 => {
            let mut v = KERNELS_SM87.to_vec();
            for _ in 0..1 + inp.below(4) {
                let i = inp.below(v.len());
                v[i] ^= 1 << (inp.u8() % 8);
            }
            (v, false)
        }
        _ => {
            let n = inp.u8() as usize;
            (inp.bytes(n).to_vec(), false)
        }
    }
}

struct SeqState {
    baseline: Option<Counts>,
}

static SEQ: Mutex<SeqState> = Mutex::new(SeqState { baseline: None });

/// Seed sequences that touch every kind of object: run before the baseline is taken, so that
/// lazily created process state (allocator pools, emulator tables) is not counted as a leak.
const WARM_UP: [&[u8]; 3] = [
    include_bytes!("../../seeds/capi_sequence/launch_vector_add.bin"),
    include_bytes!("../../seeds/capi_sequence/copy_engine.bin"),
    include_bytes!("../../seeds/capi_sequence/all_fixture_kernels.bin"),
];

fn run_sequence(data: &[u8]) {
    let mut w = World::default();
    w.devs.push(open_emu());
    let order = data.last().copied().unwrap_or(0);
    let mut inp = Input::new(data);
    let mut n = 0;
    while !inp.exhausted() && n < MAX_OPS {
        op(&mut inp, &mut w);
        n += 1;
        if let Some(u) = w.unblock_in.as_mut() {
            *u -= 1;
            if *u == 0 {
                w.release_all();
            }
        }
    }
    finish(&mut w, order);
}

/// Destroy everything still alive (every destroy must succeed), waiting for the queues first.
fn finish(w: &mut World, order: u8) {
    w.release_all();
    for &(q, _) in &w.queues {
        c!(tg_queue_submit(q as *const tg_queue));
        let st = c!(tg_queue_synchronize(q as *const tg_queue, HANG_NS));
        assert!(
            st != tg_status::TG_ERROR_TIMEOUT,
            "HANG: a queue did not finish in {} s with every signal released: {}",
            HANG_NS / 1_000_000_000,
            last_error()
        );
    }
    let mut all: Vec<(Kind, usize)> = Vec::new();
    all.extend(w.sigs.iter().map(|s| (Kind::Signal, s.h)));
    all.extend(w.kernels.iter().map(|k| (Kind::Kernel, k.h)));
    all.extend(w.mods.iter().map(|m| (Kind::Module, m.0)));
    all.extend(w.queues.iter().map(|q| (Kind::Queue, q.0)));
    all.extend(w.bufs.iter().map(|b| (Kind::Buf, b.h)));
    all.extend(w.devs.iter().map(|&d| (Kind::Dev, d)));
    match order % 3 {
        0 => {}
        1 => all.reverse(),
        _ => {
            let n = all.len();
            if n > 0 {
                all.rotate_left(usize::from(order) % n);
            }
        }
    }
    for (k, h) in all {
        let st = match k {
            Kind::Signal => c!(tg_signal_destroy(h as *mut tg_signal)),
            Kind::Kernel => c!(tg_kernel_destroy(h as *mut tg_kernel)),
            Kind::Module => c!(tg_module_destroy(h as *mut tg_module)),
            Kind::Queue => c!(tg_queue_destroy(h as *mut tg_queue)),
            Kind::Buf => c!(tg_buf_free(h as *mut tg_buf)),
            Kind::Dev => c!(tg_device_close(h as *mut tg_device)),
        };
        assert_eq!(
            st,
            tg_status::TG_OK,
            "destroying a live {k:?}: {}",
            last_error()
        );
    }
    // The exported dma-buf descriptors belong to the application: destroying the buffers and
    // closing the devices must leave them open.
    for (fd, target) in std::mem::take(&mut w.fds) {
        use std::os::fd::{AsRawFd, IntoRawFd};
        let n = fd.as_raw_fd();
        let now = std::fs::read_link(format!("/proc/self/fd/{n}")).ok();
        if now.as_ref() != Some(&target) {
            // Not ours any more: never close it (it may be someone else's descriptor now).
            let _ = fd.into_raw_fd();
            if !tolerated("emu-dmabuf-fd") {
                panic!(
                    "BUG (emu-dmabuf-fd): the dma-buf fd {n} that tg_buf_export_dmabuf gave the \
                     caller ({}) is {} after its buffer and device were destroyed",
                    target.display(),
                    now.map_or("closed".to_string(), |p| format!("now {}", p.display()))
                );
            }
        }
    }
    *w = World::default();
}

/// Known, reported bugs the harness steps around instead of failing on (see docs/fuzzing.md):
/// `TEGRAGPU_FUZZ_TOLERATE=id,id` or [`set_tolerated`]. Ids: `emu-dmabuf-fd`.
static TOLERATED: Mutex<Option<Vec<String>>> = Mutex::new(None);

/// Replace the tolerated bug ids (the smoke test's list; the fuzz targets read the environment).
pub fn set_tolerated(ids: &[&str]) {
    *TOLERATED.lock().unwrap_or_else(|e| e.into_inner()) =
        Some(ids.iter().map(|s| s.to_string()).collect());
}

fn tolerated(id: &str) -> bool {
    let mut t = TOLERATED.lock().unwrap_or_else(|e| e.into_inner());
    t.get_or_insert_with(|| {
        std::env::var("TEGRAGPU_FUZZ_TOLERATE")
            .unwrap_or_default()
            .split(',')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    })
    .iter()
    .any(|s| s == id)
}

/// Target (b): the input bytes drive up to 256 C API calls on emulated devices (one is opened
/// first), with handles drawn from live, destroyed and random values; then everything is
/// destroyed and the counts must be back at their baseline.
pub fn capi_sequence(data: &[u8]) {
    let mut st = SEQ.lock().unwrap_or_else(|e| e.into_inner());
    if st.baseline.is_none() {
        // The loader's lazily loaded state too (the PTX compiler library, when one is found).
        let dev = open_emu();
        for data in [WARP_PTX, WARP_FATBIN, GLOBALS_SM87, KERNELS_SM87] {
            let mut m = null_mut::<tg_module>();
            let st = c!(tg_module_load(
                dev as *const tg_device,
                data.as_ptr() as *const c_void,
                data.len(),
                &mut m
            ));
            if st == tg_status::TG_OK {
                assert_eq!(c!(tg_module_destroy(m)), tg_status::TG_OK);
            }
        }
        assert_eq!(c!(tg_device_close(dev as *mut tg_device)), tg_status::TG_OK);
        for _ in 0..2 {
            for seq in WARM_UP {
                run_sequence(seq);
            }
        }
        st.baseline = Some(counts());
    }
    run_sequence(data);
    assert_counts(
        "destroying every object of the sequence",
        st.baseline.as_ref().expect("baseline"),
    );
}
