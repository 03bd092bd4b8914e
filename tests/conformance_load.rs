//! The conformance corpus (tests/conformance/) through the cubin loader, without a GPU.
//!
//! The differential suite itself (tests/conformance/run.py) needs a GPU, libcuda and nvcc. This
//! test checks on any machine what can be checked without them:
//! - every corpus case that nvrtc can build for sm_87 compiles and `cubin::Module::parse`s for
//!   (8, 7) with its kernel present and not refused; cases marked may_refuse (printf, malloc,
//!   dynamic parallelism, textures, surfaces) may instead fail with `Status::NotSupported`;
//! - the same for the committed nvcc-built fixtures tests/conformance/fixtures/*.sm_87.cubin
//!   (skipped when that directory does not exist);
//! - tests/conformance/cases.txt (the plain-text form of corpus.py that this test reads) is
//!   consistent with the kernel sources, and, when python3 is installed, up to date with
//!   corpus.py.
//!
//! Kernels that `#include <...>` CUDA headers (cuda_fp16.h, mma.h, cooperative_groups.h,
//! cuda_pipeline.h, cuda/barrier) need them on nvrtc's include path: from
//! `$TEGRAGPU_CUDA_INCLUDE` (':'-separated), else the include directories of the pip wheels
//! nvidia-cuda-runtime-cu12 / nvidia-cuda-cccl-cu12 / nvidia-cuda-nvcc-cu12 installed next to
//! the libnvrtc in use, else /usr/local/cuda/include. Without any, those cases are skipped with
//! a notice. Without libnvrtc the nvrtc test prints why and passes, unless
//! `TEGRAGPU_REQUIRE_NVRTC` is set (as in tests/nvrtc.rs); cases skipped for want of headers fail
//! the test when `TEGRAGPU_REQUIRE_CUDA_HEADERS` is set (CI sets both).

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use tegragpu::cubin::Module;
use tegragpu::{nvrtc, Status};

const ORIN: (u32, u32) = (8, 7);

#[derive(Debug, Clone)]
struct Case {
    id: String,
    sources: Vec<String>,
    kernel: String,
    min_sm: u32,
    nvrtc_ok: bool,
    may_refuse: bool,
    arch: Option<String>,
    nvrtc_flags: Vec<String>,
}

fn conformance_dir() -> PathBuf {
    common::repo_path("tests/conformance")
}

fn load_cases() -> Vec<Case> {
    let path = conformance_dir().join("cases.txt");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut cases = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split('\t').collect();
        assert_eq!(
            f.len(),
            8,
            "{}:{}: expected 8 tab-separated fields: {line:?}",
            path.display(),
            n + 1
        );
        let flag = |s: &str| match s {
            "0" => false,
            "1" => true,
            _ => panic!("{}:{}: {s:?} is not 0 or 1", path.display(), n + 1),
        };
        cases.push(Case {
            id: f[0].to_string(),
            sources: f[1].split(',').map(str::to_string).collect(),
            kernel: f[2].to_string(),
            min_sm: f[3]
                .parse()
                .unwrap_or_else(|_| panic!("{}:{}: min_sm {:?}", path.display(), n + 1, f[3])),
            nvrtc_ok: flag(f[4]),
            may_refuse: flag(f[5]),
            arch: (f[6] != "-").then(|| f[6].to_string()),
            nvrtc_flags: if f[7] == "-" {
                Vec::new()
            } else {
                f[7].split(' ').map(str::to_string).collect()
            },
        });
    }
    cases
}

fn nvrtc_or_skip(test: &str) -> Option<()> {
    match nvrtc::version() {
        Ok(_) => Some(()),
        Err(e)
            if e.status == Status::LibraryMissing
                && std::env::var_os("TEGRAGPU_REQUIRE_NVRTC").is_none() =>
        {
            eprintln!(
                "NOTICE: {test} skipped: libnvrtc is not installed ({})",
                e.message
            );
            None
        }
        Err(e) => panic!("nvrtc unavailable but TEGRAGPU_REQUIRE_NVRTC is set: {e:?}"),
    }
}

/// CUDA header directories for nvrtc (see the module documentation).
fn include_dirs() -> Vec<PathBuf> {
    if let Some(v) = std::env::var_os("TEGRAGPU_CUDA_INCLUDE").filter(|v| !v.is_empty()) {
        return std::env::split_paths(&v).filter(|p| p.is_dir()).collect();
    }
    let mut dirs = Vec::new();
    if let Ok(lib) = nvrtc::library_path() {
        // <site-packages>/nvidia/cuda_nvrtc/lib/libnvrtc.so.12 -> <site-packages>/nvidia
        let lib = std::fs::canonicalize(&lib).unwrap_or(lib);
        if let Some(nvidia) = lib.ancestors().nth(3) {
            for pkg in ["cuda_runtime", "cuda_cccl", "cuda_nvcc"] {
                let d = nvidia.join(pkg).join("include");
                if d.is_dir() {
                    dirs.push(d);
                }
            }
        }
    }
    if dirs.is_empty() {
        let d = PathBuf::from("/usr/local/cuda/include");
        if d.is_dir() {
            dirs.push(d);
        }
    }
    dirs
}

fn needs_headers(src: &str) -> bool {
    src.lines().any(|l| {
        let l = l.trim_start();
        l.starts_with('#') && l[1..].trim_start().starts_with("include") && l.contains('<')
    })
}

/// `Ok(note)` when the loader's answer is acceptable for the case, else `Err(why)`.
fn judge(case: &Case, parsed: tegragpu::Result<Module>) -> Result<Option<String>, String> {
    match parsed {
        Ok(m) => match m.kernels().iter().find(|k| k.name == case.kernel) {
            None => Err(format!(
                "parsed, but kernel {} is not among {:?}",
                case.kernel,
                m.kernels()
                    .iter()
                    .map(|k| k.name.as_str())
                    .collect::<Vec<_>>()
            )),
            Some(k) => match &k.refused {
                None => Ok(None),
                Some(why) if case.may_refuse => {
                    Ok(Some(format!("kernel refused (may_refuse): {why}")))
                }
                Some(why) => Err(format!("kernel refused: {why}")),
            },
        },
        Err(e) if e.status == Status::NotSupported && case.may_refuse => {
            Ok(Some(format!("NotSupported (may_refuse): {}", e.message)))
        }
        Err(e) => Err(format!("Module::parse: {:?}: {}", e.status, e.message)),
    }
}

/// Runs `work` over `items` on a few threads; returns the failures, sorted.
fn parallel<T: Sync>(items: &[T], work: impl Fn(&T) -> Result<(), String> + Sync) -> Vec<String> {
    let next = AtomicUsize::new(0);
    let failures = Mutex::new(Vec::new());
    let threads = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .clamp(1, 8);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(item) = items.get(i) else { break };
                if let Err(e) = work(item) {
                    failures.lock().unwrap().push(e);
                }
            });
        }
    });
    let mut f = failures.into_inner().unwrap();
    f.sort();
    f
}

#[test]
fn corpus_compiles_with_nvrtc_and_parses_for_sm87() {
    let test = "corpus_compiles_with_nvrtc_and_parses_for_sm87";
    if nvrtc_or_skip(test).is_none() {
        return;
    }
    let cases = load_cases();
    let inc = include_dirs();
    let inc_flags: Vec<String> = inc
        .iter()
        .map(|d| format!("--include-path={}", d.display()))
        .collect();
    let mut todo = Vec::new();
    let mut no_headers = Vec::new();
    for c in &cases {
        if !c.nvrtc_ok || c.arch.is_some() {
            continue;
        }
        let src_path = conformance_dir().join("kernels").join(&c.sources[0]);
        let src = std::fs::read_to_string(&src_path)
            .unwrap_or_else(|e| panic!("{}: {e}", src_path.display()));
        if needs_headers(&src) && inc.is_empty() {
            no_headers.push(c.id.clone());
            continue;
        }
        todo.push((c.clone(), src));
    }
    let notes = Mutex::new(Vec::new());
    let failures = parallel(&todo, |(c, src)| {
        let mut opts: Vec<&str> = c.nvrtc_flags.iter().map(String::as_str).collect();
        if needs_headers(src) {
            opts.extend(inc_flags.iter().map(String::as_str));
        }
        // sm_87 (the Orin) for every case it can run, and sm_90 for every case.
        for sm in [ORIN, (9, 0)] {
            if c.min_sm > sm.0 * 10 + sm.1 {
                continue;
            }
            let cubin = nvrtc::compile(src, &c.sources[0], sm, &opts).map_err(|e| {
                format!(
                    "{} sm_{}{}: nvrtc: {:?}: {}",
                    c.id, sm.0, sm.1, e.status, e.message
                )
            })?;
            match judge(c, Module::parse(&cubin, sm)) {
                Ok(Some(note)) => notes
                    .lock()
                    .unwrap()
                    .push(format!("{} sm_{}{}: {note}", c.id, sm.0, sm.1)),
                Ok(None) => {}
                Err(e) => return Err(format!("{} sm_{}{}: {e}", c.id, sm.0, sm.1)),
            }
        }
        Ok(())
    });
    for n in notes.into_inner().unwrap() {
        eprintln!("NOTE: {n}");
    }
    if !no_headers.is_empty() {
        eprintln!(
            "NOTICE: {test}: {} cases need CUDA headers and none were found (set \
             TEGRAGPU_CUDA_INCLUDE, or pip install nvidia-cuda-runtime-cu12 nvidia-cuda-cccl-cu12 \
             nvidia-cuda-nvcc-cu12 next to nvidia-cuda-nvrtc-cu12): {}",
            no_headers.len(),
            no_headers.join(", ")
        );
        assert!(
            std::env::var_os("TEGRAGPU_REQUIRE_CUDA_HEADERS").is_none(),
            "TEGRAGPU_REQUIRE_CUDA_HEADERS is set but {} corpus cases could not be compiled \
             for want of CUDA headers",
            no_headers.len()
        );
    }
    eprintln!(
        "{test}: {} cases compiled for sm_87 and checked, {} failed, {} skipped for headers",
        todo.len(),
        failures.len(),
        no_headers.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {} corpus cases failed:\n{}",
        failures.len(),
        todo.len(),
        failures.join("\n")
    );
}

#[test]
fn committed_fixture_cubins_parse_for_sm87() {
    let dir = conformance_dir().join("fixtures");
    let Ok(rd) = std::fs::read_dir(&dir) else {
        eprintln!(
            "NOTICE: {} does not exist: no committed fixture cubins to check",
            dir.display()
        );
        return;
    };
    let cases = load_cases();
    let mut files: Vec<PathBuf> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(".sm_87.cubin"))
        .collect();
    files.sort();
    if files.is_empty() {
        eprintln!("NOTICE: no *.sm_87.cubin in {}", dir.display());
        return;
    }
    let failures = parallel(&files, |p| {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        let id = name.trim_end_matches(".sm_87.cubin");
        let Some(c) = cases.iter().find(|c| c.id == id) else {
            return Err(format!("{name}: no case {id:?} in cases.txt"));
        };
        let bytes = std::fs::read(p).map_err(|e| format!("{name}: {e}"))?;
        match judge(c, Module::parse(&bytes, ORIN)) {
            Ok(Some(note)) => {
                eprintln!("NOTE: {name}: {note}");
                Ok(())
            }
            Ok(None) => Ok(()),
            Err(e) => Err(format!("{name}: {e}")),
        }
    });
    assert!(
        failures.is_empty(),
        "{} of {} fixture cubins failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

#[test]
fn cases_txt_is_consistent_and_up_to_date() {
    let cases = load_cases();
    assert!(cases.len() >= 64, "only {} cases in cases.txt", cases.len());
    let mut ids: Vec<&str> = cases.iter().map(|c| c.id.as_str()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), cases.len(), "duplicate case ids in cases.txt");
    for c in &cases {
        assert!(matches!(c.min_sm, 80 | 90), "{}: min_sm {}", c.id, c.min_sm);
        let mut found = false;
        for s in &c.sources {
            let p = conformance_dir().join("kernels").join(s);
            let src = std::fs::read_to_string(&p)
                .unwrap_or_else(|e| panic!("{}: {}: {e}", c.id, p.display()));
            // the kernel is defined here as an extern "C" __global__ function: its name, followed
            // by '(', lies between `extern "C" __global__` and the next '{'
            let needle = format!("{}(", c.kernel);
            for (i, _) in src.match_indices("extern \"C\" __global__") {
                let head = &src[i..src[i..].find('{').map_or(src.len(), |j| i + j)];
                found |= head.match_indices(&needle).any(|(j, _)| {
                    let prev = head.as_bytes()[j - 1];
                    !prev.is_ascii_alphanumeric() && prev != b'_'
                });
            }
        }
        assert!(
            found,
            "{}: no extern \"C\" __global__ {} in {:?}",
            c.id, c.kernel, c.sources
        );
        if c.sources.len() > 1 {
            assert!(!c.nvrtc_ok, "{}: several sources but nvrtc_ok", c.id);
        }
    }
    // cases.txt up to date with corpus.py (needs python3; CI has it)
    let script = conformance_dir().join("gen_cases.py");
    match Command::new("python3").arg(&script).arg("--check").output() {
        Ok(out) => assert!(
            out.status.success(),
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(e) => eprintln!("NOTICE: python3 not runnable ({e}): cases.txt freshness not checked"),
    }
}

/// libcuda's kernel attributes for every committed sm_90 corpus cubin (recorded on an H100 by
/// `tests/conformance/run.py --fixture`) equal what the loader derives from the same cubin.
#[test]
fn sm90_attributes_equal_the_drivers() {
    let dir = common::repo_path("tests/conformance/fixtures");
    let Ok(text) = std::fs::read_to_string(dir.join("cuda_attrs.sm_90.json")) else {
        eprintln!("NOTICE: no cuda_attrs.sm_90.json fixture; attribute check skipped");
        return;
    };
    let all: serde_json::Value = serde_json::from_str(&text).expect("fixture JSON");
    let all = all.as_object().expect("object keyed <cubin>:<kernel>");
    // H100/H200: 64 warps per SM, 228 KiB shared memory per SM.
    let (warps_per_sm, smem_per_sm) = (64, 228 * 1024);
    let mut checked = 0;
    let mut refused = 0;
    for (key, a) in all {
        let (file, kernel) = key.split_once(':').expect("key <cubin>:<kernel>");
        let bytes = std::fs::read(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        let m = match tegragpu::cubin::Module::parse(&bytes, (9, 0)) {
            Ok(m) => m,
            Err(e) if e.status == Status::NotSupported => {
                refused += 1;
                continue;
            }
            Err(e) => panic!("{file}: {e:?}"),
        };
        let k = m.kernel(kernel).unwrap_or_else(|e| panic!("{key}: {e:?}"));
        let n = |f: &str| a[f].as_u64().unwrap_or_else(|| panic!("{key}: field {f}")) as u32;
        let params: Vec<(u32, u32)> = a["params"]
            .as_array()
            .expect("params")
            .iter()
            .map(|p| (p[0].as_u64().unwrap() as u32, p[1].as_u64().unwrap() as u32))
            .collect();
        let ours: Vec<(u32, u32)> = k.params.iter().map(|p| (p.offset, p.size)).collect();
        assert_eq!(ours, params, "{key}: parameter offsets and sizes");
        assert_eq!(k.register_count, n("num_regs"), "{key}: registers");
        assert_eq!(
            k.static_shared_bytes
                .saturating_sub(tegragpu::cubin::SHARED_RESERVED_BYTES),
            n("shared_size_bytes"),
            "{key}: static shared memory"
        );
        assert_eq!(
            k.local_bytes_per_thread,
            n("local_size_bytes"),
            "{key}: local memory"
        );
        assert_eq!(
            tegragpu::core::max_threads(k),
            n("max_threads_per_block"),
            "{key}: max threads per block"
        );
        let need = tegragpu::core::static_shared_need(k, 9);
        assert_eq!(
            smem_per_sm - need,
            n("max_dynamic_shared_size_bytes"),
            "{key}: max dynamic shared memory"
        );
        if k.refused.is_none() {
            let occ = tegragpu::core::occupancy(
                k,
                n("block_threads"),
                n("dynamic_shared_bytes"),
                (9, 0),
                warps_per_sm,
                smem_per_sm,
            );
            assert_eq!(occ, n("occupancy"), "{key}: occupancy");
        }
        checked += 1;
    }
    eprintln!("{checked} kernels' attributes equal libcuda's; {refused} modules refused");
    assert!(checked >= 90, "only {checked} kernels checked");
}

/// Every committed nvcc 13 sm_87 corpus cubin loads on the emulated Orin through the library
/// (parse, GPU memory, relocation, kernel lookup), or is refused with `NotSupported` where the
/// manifest says it may be.
#[test]
fn committed_sm87_fixtures_load_on_the_emulated_orin() {
    let dir = conformance_dir().join("fixtures");
    let Ok(rd) = std::fs::read_dir(&dir) else {
        eprintln!("NOTICE: no {}", dir.display());
        return;
    };
    let cases = load_cases();
    let dev = tegragpu::core::Device::open(Some("emu")).expect("emulated Orin");
    let mut loaded = 0;
    let mut files: Vec<PathBuf> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(".sm_87.cubin"))
        .collect();
    files.sort();
    for p in &files {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        let id = name.trim_end_matches(".sm_87.cubin");
        let c = cases
            .iter()
            .find(|c| c.id == id)
            .unwrap_or_else(|| panic!("{name}: no case"));
        let bytes = std::fs::read(p).unwrap();
        let r = dev
            .load_module(&bytes)
            .and_then(|m| m.kernel(&c.kernel).map(|_| ()));
        match r {
            Ok(()) => loaded += 1,
            Err(e) if e.status == Status::NotSupported && c.may_refuse => {}
            Err(e) => panic!("{name}: {:?}: {}", e.status, e.message),
        }
    }
    eprintln!(
        "{loaded} of {} sm_87 fixture modules loaded on the emulated Orin",
        files.len()
    );
    assert!(loaded >= 85, "only {loaded} loaded");
}
