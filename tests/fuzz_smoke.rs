//! A short, deterministic run of the two fuzz targets of `fuzz/` (docs/fuzzing.md) on the stable
//! toolchain, so that CI exercises them on every run: the target bodies are the same file the
//! cargo-fuzz binaries use (`fuzz/src/harness.rs`), driven here by a seeded mutator (bit flips,
//! byte and word overwrites, inserts, deletes, splices of the seed corpus) for a fixed number of
//! iterations instead of libFuzzer.
//!
//! Every input of `fuzz/regressions/<target>/` is replayed first. A failing input is written to
//! the system temporary directory (the message names the file): copy it to
//! `fuzz/regressions/<target>/` and replay it with
//! `cargo +nightly fuzz run <target> <file>` (in `fuzz/`).
//!
//! `TEGRAGPU_FUZZ_SMOKE_ITERS` scales the iteration counts and time budgets (e.g. 10 for a
//! longer local run).

mod common;
#[path = "../fuzz/src/harness.rs"]
mod harness;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::time::{Duration, Instant};

/// Reported library bugs the mutation campaigns step around (ids as in `fuzz/src/harness.rs`,
/// inputs in `fuzz/regressions/`): remove an id once its bug is fixed, and its regression inputs
/// are then replayed strictly.
const TOLERATED: &[&str] = &[];

/// Both targets measure process-wide counts (fds, mappings): one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// Set by the panic hook: a panic on any thread, even one the C API or the emulated GPU
/// caught, is a bug.
static PANICKED: AtomicBool = AtomicBool::new(false);
static PANIC_MESSAGE: Mutex<String> = Mutex::new(String::new());

fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICKED.store(true, Ordering::SeqCst);
            if let Ok(mut m) = PANIC_MESSAGE.lock() {
                if m.is_empty() {
                    *m = format!(
                        "{info} (thread {:?})",
                        std::thread::current().name().unwrap_or("unnamed")
                    );
                }
            }
            default(info);
        }));
    });
}

/// splitmix64: deterministic, dependency-free.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

const INTERESTING: [u64; 12] = [
    0,
    1,
    2,
    0x7f,
    0x80,
    0xff,
    0xffff,
    0x7fff_ffff,
    0xffff_ffff,
    0x8000_0000_0000_0000,
    u64::MAX,
    0x1000,
];

/// One mutant of `base`: 1 to 4 of bit flip, byte overwrite, word overwrite (interesting or
/// random values), insert, delete, duplicate, splice with another seed, truncate.
fn mutate(rng: &mut Rng, base: &[u8], corpus: &[Vec<u8>], max_len: usize) -> Vec<u8> {
    let mut v = base.to_vec();
    for _ in 0..1 + rng.below(4) {
        if v.is_empty() {
            v.push(rng.next() as u8);
            continue;
        }
        let pos = rng.below(v.len());
        match rng.below(9) {
            0 => v[pos] ^= 1 << rng.below(8),
            1 => v[pos] = rng.next() as u8,
            2 => {
                let w = [1usize, 2, 4, 8][rng.below(4)];
                let x = if rng.below(2) == 0 {
                    INTERESTING[rng.below(INTERESTING.len())]
                } else {
                    rng.next() % (v.len() as u64 * 2 + 1)
                };
                let at = pos & !(w - 1);
                if at + w <= v.len() {
                    v[at..at + w].copy_from_slice(&x.to_le_bytes()[..w]);
                }
            }
            3 => {
                let n = 1 + rng.below(16);
                let bytes: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
                v.splice(pos..pos, bytes);
            }
            4 => {
                let n = 1 + rng.below(64.min(v.len() - pos));
                v.drain(pos..pos + n);
            }
            5 => {
                let n = 1 + rng.below(64.min(v.len() - pos));
                let piece = v[pos..pos + n].to_vec();
                let at = rng.below(v.len() + 1);
                v.splice(at..at, piece);
            }
            6 | 7 => {
                let other = &corpus[rng.below(corpus.len())];
                if !other.is_empty() {
                    let from = rng.below(other.len());
                    let n = 1 + rng.below(other.len() - from);
                    let end = (pos + n).min(v.len());
                    v.splice(pos..end, other[from..from + n].iter().copied());
                }
            }
            _ => v.truncate(pos),
        }
    }
    v.truncate(max_len);
    v
}

fn repo() -> PathBuf {
    common::repo_root()
}

/// Files of `dir` (sorted) whose names pass `keep`.
fn files(dir: &Path, keep: impl Fn(&str) -> bool) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.is_file())
                .filter(|p| keep(&p.file_name().unwrap_or_default().to_string_lossy()))
                .filter_map(|p| Some((p.display().to_string(), std::fs::read(&p).ok()?)))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// The module_load seeds: the fixture cubins, fatbins, host objects and PTX texts.
fn module_seeds() -> Vec<(String, Vec<u8>)> {
    let r = repo();
    let mut v = files(&r.join("tests/fixtures/cubin"), |n| n.ends_with(".cubin"));
    v.extend(files(&r.join("tests/fixtures/fatbin"), |n| {
        [".cubin", ".fatbin", ".nv_fatbin", ".o", ".ptx"]
            .iter()
            .any(|s| n.ends_with(s))
    }));
    // Every fourth conformance cubin (the directory has ~100 sm_87 ones): variety, bounded time.
    let conf = files(&r.join("tests/conformance/fixtures"), |n| {
        n.ends_with(".sm_87.cubin")
    });
    v.extend(conf.into_iter().step_by(4));
    v.extend(files(&r.join("fuzz/seeds/module_load"), |_| true));
    assert!(
        v.len() >= 10,
        "module_load seeds not found under {}",
        r.display()
    );
    v
}

fn sequence_seeds() -> Vec<(String, Vec<u8>)> {
    let v = files(&repo().join("fuzz/seeds/capi_sequence"), |_| true);
    assert!(!v.is_empty(), "fuzz/seeds/capi_sequence is empty");
    v
}

/// Run `target` on one input: a panic (in the harness or anywhere else in the process) fails
/// the test after the input is saved; the watchdog aborts the process when one input runs
/// longer than `HANG`.
struct Runner {
    name: &'static str,
    target: fn(&[u8]),
    current: Arc<Mutex<Vec<u8>>>,
    /// Milliseconds after `t0` at which the current input started, plus 1; 0 when idle.
    started: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    t0: Instant,
}

const HANG: Duration = Duration::from_secs(120);

impl Runner {
    fn new(name: &'static str, target: fn(&[u8])) -> Runner {
        let r = Runner {
            name,
            target,
            current: Arc::new(Mutex::new(Vec::new())),
            started: Arc::new(AtomicU64::new(0)),
            stop: Arc::new(AtomicBool::new(false)),
            t0: Instant::now(),
        };
        let (current, started, stop) = (r.current.clone(), r.started.clone(), r.stop.clone());
        let t0 = r.t0;
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(200));
                let s = started.load(Ordering::SeqCst);
                let now = t0.elapsed().as_millis() as u64;
                if s != 0 && now.saturating_sub(s) > HANG.as_millis() as u64 {
                    let input = current.lock().map(|c| c.clone()).unwrap_or_default();
                    let path = save(name, "hang", &input);
                    eprintln!(
                        "HANG: {name} ran one input for more than {} s; input saved to {}",
                        HANG.as_secs(),
                        path.display()
                    );
                    std::process::abort();
                }
            }
        });
        r
    }

    fn run(&self, what: &str, input: &[u8]) {
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = input.to_vec();
        self.started
            .store(self.t0.elapsed().as_millis() as u64 + 1, Ordering::SeqCst);
        let r = catch_unwind(AssertUnwindSafe(|| (self.target)(input)));
        self.started.store(0, Ordering::SeqCst);
        let panicked = PANICKED.load(Ordering::SeqCst);
        if r.is_err() || panicked {
            let path = save(self.name, "crash", input);
            let msg = PANIC_MESSAGE.lock().map(|m| m.clone()).unwrap_or_default();
            panic!(
                "{}: {what} failed ({msg}); input ({} bytes) saved to {}",
                self.name,
                input.len(),
                path.display()
            );
        }
    }
}

impl Drop for Runner {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

fn save(target: &str, kind: &str, input: &[u8]) -> PathBuf {
    let path = std::env::temp_dir().join(format!(
        "tegragpu-fuzz-{target}-{kind}-{}.bin",
        std::process::id()
    ));
    let _ = std::fs::write(&path, input);
    path
}

/// `TEGRAGPU_FUZZ_SMOKE_ITERS` (default 1): multiplies the mutant counts and time budgets.
fn scale() -> u32 {
    std::env::var("TEGRAGPU_FUZZ_SMOKE_ITERS")
        .ok()
        .and_then(|s| s.parse::<u32>().ok())
        .unwrap_or(1)
        .max(1)
}

fn iterations(base: usize) -> usize {
    base * scale() as usize
}

fn budget(base: Duration) -> Duration {
    base * scale()
}

/// The emulated Orin is what both targets open; another device under test (the H200 runs) has
/// its own suites.
fn on_emu() -> bool {
    match std::env::var("TEGRAGPU_DEVICE") {
        Ok(v) if !v.is_empty() && v != "emu" => {
            eprintln!("fuzz_smoke: TEGRAGPU_DEVICE={v}: skipped (the targets run on \"emu\")");
            false
        }
        _ => true,
    }
}

fn regressions(target: &str) -> Vec<(String, Vec<u8>)> {
    files(&repo().join("fuzz/regressions").join(target), |n| {
        !n.ends_with(".md")
    })
}

/// `TEGRAGPU_FUZZ_REPLAY=<target>:<file>`: run just that input through that target instead of
/// the campaigns (`TEGRAGPU_FUZZ_TRACE=1` prints every call; `TEGRAGPU_FUZZ_REPLAY_TIMES=n`
/// runs it n times; known bugs are tolerated only as `TEGRAGPU_FUZZ_TOLERATE` says).
fn replay(name: &str, target: fn(&[u8])) -> bool {
    let Ok(spec) = std::env::var("TEGRAGPU_FUZZ_REPLAY") else {
        return false;
    };
    if let Some(path) = spec.strip_prefix(&format!("{name}:")) {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let input = std::fs::read(path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
        let times = std::env::var("TEGRAGPU_FUZZ_REPLAY_TIMES")
            .ok()
            .and_then(|s| s.parse::<usize>().ok())
            .unwrap_or(1);
        eprintln!(
            "{name}: replaying {path} ({} bytes) {times} times",
            input.len()
        );
        for _ in 0..times {
            target(&input);
        }
        eprintln!("{name}: {path} passed");
    }
    true
}

/// Regression inputs, then seeds, then `n` mutants (stops early, with a note, past `budget`),
/// then `done_fn` (still holding the lock).
#[allow(clippy::too_many_arguments)]
fn campaign(
    name: &'static str,
    target: fn(&[u8]),
    seeds: Vec<(String, Vec<u8>)>,
    seed: u64,
    n: usize,
    max_len: usize,
    budget: Duration,
    done_fn: fn(),
) {
    if replay(name, target) {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    install_panic_hook();
    PANICKED.store(false, Ordering::SeqCst);
    PANIC_MESSAGE
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clear();
    let runner = Runner::new(name, target);
    let t0 = Instant::now();
    // Regression inputs first, strictly, except those of a tolerated bug (named after its id).
    for (path, bytes) in regressions(name) {
        let file = Path::new(&path)
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let open_bug: Vec<&str> = TOLERATED
            .iter()
            .copied()
            .filter(|id| file.starts_with(id))
            .collect();
        harness::set_tolerated(&open_bug);
        runner.run(&path, &bytes);
    }
    harness::set_tolerated(TOLERATED);
    for (path, bytes) in &seeds {
        runner.run(path, bytes);
    }
    let corpus: Vec<Vec<u8>> = seeds.into_iter().map(|(_, b)| b).collect();
    let mut rng = Rng(seed);
    let mut done = 0;
    for i in 0..n {
        if t0.elapsed() > budget {
            eprintln!("{name}: time budget {budget:?} reached after {i} of {n} mutants");
            break;
        }
        let base = &corpus[rng.below(corpus.len())];
        let input = mutate(&mut rng, base, &corpus, max_len);
        runner.run(&format!("mutant {i} (seed {seed:#x})"), &input);
        done += 1;
    }
    done_fn();
    eprintln!(
        "{name}: {} seeds + {done} mutants in {:.1} s",
        corpus.len(),
        t0.elapsed().as_secs_f64()
    );
}

#[test]
fn module_load_mutants() {
    if !on_emu() {
        return;
    }
    campaign(
        "module_load",
        harness::module_load,
        module_seeds(),
        0x7e67_a6b0_f022_0001,
        iterations(10000),
        1 << 20,
        budget(Duration::from_secs(25)),
        harness::module_load_reset,
    );
}

#[test]
fn capi_sequence_mutants() {
    if !on_emu() {
        return;
    }
    campaign(
        "capi_sequence",
        harness::capi_sequence,
        sequence_seeds(),
        0x7e67_a6b0_f022_0002,
        iterations(3000),
        4096,
        budget(Duration::from_secs(25)),
        || {},
    );
}
