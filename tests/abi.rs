//! ABI checks for `tegragpu::sys::{nvgpu, nvmap}`:
//! (a) every request number equals the value in the reference table
//!     (docs/nvgpu-kernel-interface.md §2, numbers produced by compiling the kernel headers);
//! (b) every nvgpu/nvmap `_IOC(...)` encoding that CUDA issued on a real Orin (strace in
//!     seeds/001) and that the library also defines (same type and nr) has the same full value.

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;

use tegragpu::sys::nvgpu::{self, ioc_size, AbiEntry, ALL_REQUESTS};
use tegragpu::sys::nvmap;

/// docs/nvgpu-kernel-interface.md §2 "Ioctl table", column "Request", transcribed by hand.
const DOC_TABLE: &[(&str, u64)] = &[
    ("NVGPU_GPU_IOCTL_ZCULL_GET_CTX_SIZE", 0x80044701),
    ("NVGPU_GPU_IOCTL_ZCULL_GET_INFO", 0x80284702),
    ("NVGPU_GPU_IOCTL_GET_CHARACTERISTICS", 0xc0104705),
    ("NVGPU_GPU_IOCTL_ALLOC_AS", 0xc0404708),
    ("NVGPU_GPU_IOCTL_OPEN_TSG", 0xc0184709),
    ("NVGPU_GPU_IOCTL_GET_TPC_MASKS", 0xc010470a),
    ("NVGPU_GPU_IOCTL_OPEN_CHANNEL", 0xc004470b),
    ("NVGPU_GPU_IOCTL_FLUSH_L2", 0xc005470c),
    ("NVGPU_GPU_IOCTL_NUM_VSMS", 0xc0084712),
    ("NVGPU_GPU_IOCTL_VSMS_MAPPING", 0xc0084713),
    ("NVGPU_GPU_IOCTL_GET_GPU_TIME", 0xc0104719),
    ("NVGPU_GPU_IOCTL_GET_ENGINE_INFO", 0xc010471a),
    ("NVGPU_GPU_IOCTL_CLK_GET_RANGE", 0xc010471c),
    ("NVGPU_GPU_IOCTL_CLK_GET_VF_POINTS", 0xc018471d),
    ("NVGPU_GPU_IOCTL_GET_MEMORY_STATE", 0xc0284721),
    ("NVGPU_GPU_IOCTL_GET_FBP_L2_MASKS", 0xc0104726),
    ("NVGPU_GPU_IOCTL_SET_DETERMINISTIC_OPTS", 0xc0104728),
    ("NVGPU_GPU_IOCTL_REGISTER_BUFFER", 0xc0184729),
    ("NVGPU_GPU_IOCTL_GET_BUFFER_INFO", 0xc018472a),
    ("NVGPU_GPU_IOCTL_GET_GPC_LOCAL_TO_PHYSICAL_MAP", 0xc010472b),
    ("NVGPU_GPU_IOCTL_GET_GPC_LOCAL_TO_LOGICAL_MAP", 0xc010472c),
    ("NVGPU_AS_IOCTL_BIND_CHANNEL", 0xc0044101),
    ("NVGPU_AS_IOCTL_FREE_SPACE", 0xc0204103),
    ("NVGPU_AS_IOCTL_UNMAP_BUFFER", 0xc0084105),
    ("NVGPU_AS_IOCTL_ALLOC_SPACE", 0xc0204106),
    ("NVGPU_AS_IOCTL_MAP_BUFFER_EX", 0xc0284107),
    ("NVGPU_AS_IOCTL_GET_VA_REGIONS", 0xc0104108),
    ("NVGPU_AS_IOCTL_MAP_BUFFER_BATCH", 0xc020410b),
    ("NVGPU_AS_IOCTL_GET_SYNC_RO_MAP", 0x8010410c),
    ("NVGPU_TSG_IOCTL_BIND_CHANNEL", 0x40045401),
    ("NVGPU_TSG_IOCTL_UNBIND_CHANNEL", 0x40045402),
    ("NVGPU_IOCTL_TSG_ENABLE", 0x00005403),
    ("NVGPU_IOCTL_TSG_DISABLE", 0x00005404),
    ("NVGPU_IOCTL_TSG_PREEMPT", 0x00005405),
    ("NVGPU_IOCTL_TSG_EVENT_ID_CTRL", 0xc0105407),
    ("NVGPU_IOCTL_TSG_SET_TIMESLICE", 0x40085409),
    ("NVGPU_IOCTL_TSG_GET_TIMESLICE", 0x8008540a),
    ("NVGPU_TSG_IOCTL_BIND_CHANNEL_EX", 0xc018540b),
    ("NVGPU_TSG_IOCTL_READ_SINGLE_SM_ERROR_STATE", 0xc018540c),
    ("NVGPU_TSG_IOCTL_SET_L2_MAX_WAYS_EVICT_LAST", 0x4008540d),
    ("NVGPU_TSG_IOCTL_READ_ALL_SM_ERROR_STATES", 0xc0185411),
    ("NVGPU_TSG_IOCTL_CREATE_SUBCONTEXT", 0xc0105412),
    ("NVGPU_TSG_IOCTL_DELETE_SUBCONTEXT", 0x40085413),
    ("NVGPU_IOCTL_CHANNEL_SET_TIMEOUT", 0x4004480b),
    ("NVGPU_IOCTL_CHANNEL_GET_TIMEDOUT", 0x8004480c),
    ("NVGPU_IOCTL_CHANNEL_SET_TIMEOUT_EX", 0xc0084812),
    ("NVGPU_IOCTL_CHANNEL_SUBMIT_GPFIFO", 0xc018486b),
    ("NVGPU_IOCTL_CHANNEL_ALLOC_OBJ_CTX", 0xc010486c),
    ("NVGPU_IOCTL_CHANNEL_SET_ERROR_NOTIFIER", 0xc018486f),
    ("NVGPU_IOCTL_CHANNEL_ENABLE", 0x00004871),
    ("NVGPU_IOCTL_CHANNEL_DISABLE", 0x00004872),
    ("NVGPU_IOCTL_CHANNEL_PREEMPT", 0x00004873),
    ("NVGPU_IOCTL_CHANNEL_FORCE_RESET", 0x00004874),
    ("NVGPU_IOCTL_CHANNEL_WDT", 0x40084877),
    ("NVGPU_IOCTL_CHANNEL_SET_PREEMPTION_MODE", 0x4008487a),
    ("NVGPU_IOCTL_CHANNEL_GET_USER_SYNCPOINT", 0x8010487e),
    ("NVGPU_IOCTL_CHANNEL_SETUP_BIND", 0xc0684880),
    ("NVMAP_IOC_CREATE", 0xc0084e00),
    ("NVMAP_IOC_CREATE_64", 0xc0084e01),
    ("NVMAP_IOC_ALLOC", 0x40144e03),
    ("NVMAP_IOC_FREE", 0x00004e04),
    ("NVMAP_IOC_WRITE", 0x40384e06),
    ("NVMAP_IOC_READ", 0x40384e07),
    ("NVMAP_IOC_CACHE", 0x40184e0c),
    ("NVMAP_IOC_CACHE_64", 0x40204e0c),
    ("NVMAP_IOC_GET_FD", 0xc0084e0f),
    ("NVMAP_IOC_FROM_FD", 0xc0084e10),
    ("NVMAP_IOC_SET_TAG_LABEL", 0x40104e18),
    ("NVMAP_IOC_GET_AVAILABLE_HEAPS", 0x80084e19),
    ("NVMAP_IOC_QUERY_HEAP_PARAMS", 0x80304e69),
];

fn entry(name: &str) -> &'static AbiEntry {
    ALL_REQUESTS
        .iter()
        .find(|e| e.name == name)
        .unwrap_or_else(|| panic!("{name} is in the doc's §2 table but missing from ALL_REQUESTS"))
}

#[test]
fn every_request_matches_doc_table() {
    for &(name, want) in DOC_TABLE {
        let e = entry(name);
        assert_eq!(
            e.request, want,
            "{name}: library 0x{:08x}, doc 0x{want:08x}",
            e.request
        );
    }
    // And the table has nothing the doc does not list.
    for e in ALL_REQUESTS {
        assert!(
            DOC_TABLE.iter().any(|&(n, _)| n == e.name),
            "{} not in the doc table",
            e.name
        );
    }
    assert_eq!(ALL_REQUESTS.len(), DOC_TABLE.len());
}

#[test]
fn named_constants_match_doc() {
    // The constants themselves (not only the table built from them).
    assert_eq!(nvgpu::NVGPU_GPU_IOCTL_ALLOC_AS, 0xc0404708);
    assert_eq!(nvgpu::NVGPU_GPU_IOCTL_GET_CHARACTERISTICS, 0xc0104705);
    assert_eq!(nvgpu::NVGPU_GPU_IOCTL_OPEN_CHANNEL, 0xc004470b);
    assert_eq!(nvgpu::NVGPU_GPU_IOCTL_FLUSH_L2, 0xc005470c);
    assert_eq!(nvgpu::NVGPU_AS_IOCTL_MAP_BUFFER_EX, 0xc0284107);
    assert_eq!(nvgpu::NVGPU_AS_IOCTL_ALLOC_SPACE, 0xc0204106);
    assert_eq!(nvgpu::NVGPU_TSG_IOCTL_BIND_CHANNEL_EX, 0xc018540b);
    assert_eq!(nvgpu::NVGPU_TSG_IOCTL_CREATE_SUBCONTEXT, 0xc0105412);
    assert_eq!(nvgpu::NVGPU_IOCTL_CHANNEL_SETUP_BIND, 0xc0684880);
    assert_eq!(nvgpu::NVGPU_IOCTL_CHANNEL_WDT, 0x40084877);
    assert_eq!(nvgpu::NVGPU_IOCTL_CHANNEL_GET_USER_SYNCPOINT, 0x8010487e);
    assert_eq!(nvmap::NVMAP_IOC_CREATE, 0xc0084e00);
    assert_eq!(nvmap::NVMAP_IOC_ALLOC, 0x40144e03);
    assert_eq!(nvmap::NVMAP_IOC_GET_FD, 0xc0084e0f);
    assert_eq!(nvmap::NVMAP_IOC_FREE, 0x00004e04);
    // Not in the §2 table but defined: channel EVENT_ID_CTRL H/117, 16 bytes RW.
    assert_eq!(nvgpu::NVGPU_IOCTL_CHANNEL_EVENT_ID_CTRL, 0xc0104875);
}

#[test]
fn sizes_and_flags_match_doc() {
    use std::mem::size_of;
    for e in ALL_REQUESTS {
        assert_eq!(
            e.size,
            ioc_size(e.request),
            "{}: table size vs encoded size",
            e.name
        );
    }
    // §3 sizes.
    assert_eq!(size_of::<nvgpu::nvgpu_gpu_characteristics>(), 328);
    assert_eq!(size_of::<nvgpu::nvgpu_gpu_l2_fb_args>(), 5);
    assert_eq!(size_of::<nvgpu::nvgpu_channel_setup_bind_args>(), 104);
    assert_eq!(size_of::<nvgpu::nvgpu_notification>(), 16);
    assert_eq!(size_of::<nvmap::nvmap_alloc_handle>(), 20);
    // §2/§1 dispatcher limits.
    assert_eq!(nvgpu::NVGPU_GPU_IOCTL_LAST, 44);
    assert_eq!(nvgpu::NVGPU_GPU_IOCTL_MAX_ARG_SIZE, 264);
    assert_eq!(
        (
            nvgpu::NVGPU_AS_IOCTL_LAST,
            nvgpu::NVGPU_AS_IOCTL_MAX_ARG_SIZE
        ),
        (14, 40)
    );
    assert_eq!(
        (
            nvgpu::NVGPU_TSG_IOCTL_LAST,
            nvgpu::NVGPU_TSG_IOCTL_MAX_ARG_SIZE
        ),
        (21, 32)
    );
    assert_eq!(
        (
            nvgpu::NVGPU_IOCTL_CHANNEL_LAST,
            nvgpu::NVGPU_IOCTL_CHANNEL_MAX_ARG_SIZE
        ),
        (128, 104)
    );
    assert_eq!(nvmap::NVMAP_IOC_MAXNR, 107);
    // Corrected flag values (§3/§5 "seed errors").
    assert_eq!(nvgpu::NVGPU_CHANNEL_SETUP_BIND_FLAGS_DETERMINISTIC, 0x2);
    assert_eq!(nvgpu::NVGPU_CHANNEL_SETUP_BIND_FLAGS_USERMODE_SUPPORT, 0x8);
    assert_eq!(nvmap::NVMAP_HANDLE_CACHEABLE, 3);
    assert_eq!(nvmap::NVMAP_HANDLE_WRITE_COMBINE, 1);
    assert_eq!(nvmap::NVMAP_HANDLE_INNER_CACHEABLE, 2);
    assert_eq!(nvmap::NVMAP_HANDLE_ZEROED_PAGES, 0x20);
    assert_eq!(nvmap::NVMAP_HEAP_IOVMM, 0x4000_0000);
    assert_eq!(
        nvgpu::NVGPU_AS_MAP_BUFFER_FLAGS_VALID_MASK & (1 << 4 | 1 << 8),
        0
    );
    assert_eq!(nvgpu::NVGPU_IOCTL_CHANNEL_DISABLE_WDT, 1);
    assert_eq!(nvgpu::NVGPU_GPU_IOCTL_ALLOC_AS_FLAGS_UNIFIED_VA, 2);
}

fn seed_001() -> PathBuf {
    let dir = common::repo_path("../shared/seeds");
    let rd = std::fs::read_dir(&dir).unwrap_or_else(|e| {
        panic!(
            "seed directory {} is missing ({e}); CI must check out ../shared beside the repo",
            dir.display()
        )
    });
    let mut found: Vec<PathBuf> = rd
        .filter_map(|d| d.ok().map(|d| d.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("001_") && n.ends_with(".txt"))
        })
        .collect();
    found.sort();
    found
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("no 001_*.txt in {}", dir.display()))
}

fn parse_num(s: &str) -> Option<u64> {
    let s = s.trim();
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// Every `_IOC(dir, type, nr, size)` in `text`, rebuilt as a full request number.
fn strace_requests(text: &str) -> Vec<u64> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("_IOC(") {
        rest = &rest[i + 5..];
        let Some(end) = rest.find(')') else { break };
        let parts: Vec<&str> = rest[..end].split(',').map(str::trim).collect();
        rest = &rest[end..];
        if parts.len() != 4 {
            continue;
        }
        let mut dir = 0u64;
        for d in parts[0].split('|') {
            match d.trim() {
                "_IOC_NONE" => {}
                "_IOC_WRITE" => dir |= 1,
                "_IOC_READ" => dir |= 2,
                _ => dir = u64::MAX,
            }
        }
        let (Some(ty), Some(nr), Some(size)) = (
            parse_num(parts[1]),
            parse_num(parts[2]),
            parse_num(parts[3]),
        ) else {
            continue;
        };
        if dir == u64::MAX || ty > 0xff || nr > 0xff || size > 0x3fff {
            continue;
        }
        out.push((dir << 30) | (size << 16) | (ty << 8) | nr);
    }
    out
}

#[test]
fn strace_parser_rebuilds_known_encoding() {
    // Independent check of the parser on hand-written lines.
    let v = strace_requests(
        "ioctl(4, _IOC(_IOC_READ|_IOC_WRITE, 0x47, 0x8, 0x40), 0x1) = 0\n\
         ioctl(3, _IOC(_IOC_READ|_IOC_WRITE, 0x4e, 0, 0x8), 0x2) = 0\n\
         ioctl(3, _IOC(_IOC_WRITE, 0x48, 0x77, 0x8), 0x3) = 0",
    );
    assert_eq!(v, vec![0xc0404708, 0xc0084e00, 0x40084877]);
}

#[test]
fn seed_strace_encodings_match_library() {
    let path = seed_001();
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let magics = [b'G', b'A', b'T', b'H', b'N'];
    let mut seen: BTreeMap<u64, usize> = BTreeMap::new();
    for r in strace_requests(&text) {
        if magics.contains(&(((r >> 8) & 0xff) as u8)) {
            *seen.entry(r).or_default() += 1;
        }
    }
    assert!(
        !seen.is_empty(),
        "no nvgpu/nvmap _IOC encodings found in {}",
        path.display()
    );
    let mut compared = 0usize;
    let mut calls = 0usize;
    for (&r, &n) in &seen {
        let same_nr: Vec<&AbiEntry> = ALL_REQUESTS
            .iter()
            .filter(|e| e.request & 0xffff == r & 0xffff)
            .collect();
        if same_nr.is_empty() {
            continue; // not a request the library defines (e.g. H/0x0e on the DRM node)
        }
        assert!(
            same_nr.iter().any(|e| e.request == r),
            "strace encoding 0x{r:08x} ({n} calls) has the type/nr of {} but the library uses {}",
            same_nr.iter().map(|e| e.name).collect::<Vec<_>>().join("/"),
            same_nr
                .iter()
                .map(|e| format!("0x{:08x}", e.request))
                .collect::<Vec<_>>()
                .join("/"),
        );
        compared += 1;
        calls += n;
    }
    println!(
        "compared {compared} distinct request encodings ({calls} strace calls) from {}",
        path.display()
    );
    // The seed holds >20 distinct nvgpu/nvmap encodings that the library defines.
    assert!(compared >= 20, "only {compared} encodings compared");
}

#[test]
fn info_abi_prints_exact_lines() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tegragpu-info"))
        .arg("--abi")
        .output()
        .expect("run tegragpu-info --abi");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    for want in [
        "NVGPU_GPU_IOCTL_ALLOC_AS 0xc0404708",
        "NVGPU_AS_IOCTL_MAP_BUFFER_EX 0xc0284107",
        "NVGPU_IOCTL_CHANNEL_SETUP_BIND 0xc0684880",
        "NVMAP_IOC_FREE 0x00004e04",
        "struct nvgpu_alloc_as_args 64",
        "struct nvgpu_gpu_characteristics 328",
        "struct nvgpu_gpu_l2_fb_args 5",
        "struct nvgpu_channel_setup_bind_args 104",
        "struct nvmap_alloc_handle 20",
    ] {
        assert!(lines.contains(&want), "missing line {want:?}");
    }
    // One line per request (doc table) plus struct lines.
    assert_eq!(
        lines.iter().filter(|l| !l.starts_with("struct ")).count(),
        DOC_TABLE.len()
    );
}

#[test]
fn info_reports_emulated_device() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tegragpu-info"))
        .env("TEGRAGPU_DEVICE", "emu")
        .output()
        .expect("run tegragpu-info");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("ga10b (emulated)"), "{text}");
    assert!(text.contains("8.7"), "{text}");
    assert!(text.contains("0xc7c0"), "{text}");
}

/// `tegragpu-info` answers `--help` / `--version`, refuses unknown arguments and device names,
/// and does not fall back to the emulator when the named device is missing.
#[test]
fn tegragpu_info_arguments_and_device_errors() {
    let run = |args: &[&str], env: Option<&str>| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_tegragpu-info"));
        c.args(args).env_remove("TEGRAGPU_DEVICE");
        if let Some(v) = env {
            c.env("TEGRAGPU_DEVICE", v);
        }
        let o = c.output().expect("run tegragpu-info");
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let (code, out, _) = run(&["--help"], None);
    assert_eq!(code, Some(0));
    assert!(out.starts_with("usage: tegragpu-info"), "{out}");
    let (code, out, _) = run(&["-V"], None);
    assert_eq!(code, Some(0));
    assert_eq!(
        out,
        format!("tegragpu-info {}\n", env!("CARGO_PKG_VERSION"))
    );
    let (code, _, err) = run(&["--bogus"], None);
    assert_eq!(code, Some(2));
    assert!(err.contains("unexpected argument \"--bogus\""), "{err}");
    let (code, out, err) = run(&[], Some("bogus"));
    assert_eq!(code, Some(1), "{out}");
    assert!(err.contains("unknown device \"bogus\""), "{err}");
    if !std::path::Path::new("/dev/nvgpu/igpu0/ctrl").exists() {
        let (code, out, err) = run(&[], Some("nvgpu"));
        assert_eq!(code, Some(1), "{out}");
        assert!(
            err.contains("/dev/nvgpu/igpu0/ctrl does not exist"),
            "{err}"
        );
    }
    // The argument wins over the environment.
    let (code, out, _) = run(&["emu"], Some("nvgpu"));
    assert_eq!(code, Some(0));
    assert!(out.contains("(emulated)"), "{out}");
}

/// Usage errors of the installed binaries exit 2 with a one-line reason, before any device is
/// opened.
#[test]
fn binaries_refuse_bad_arguments() {
    let run = |exe: &str, args: &[&str]| {
        let o = std::process::Command::new(exe)
            .args(args)
            .env("TEGRAGPU_DEVICE", "emu")
            .output()
            .expect("run");
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let info = env!("CARGO_BIN_EXE_tegragpu-info");
    for (args, want) in [
        (&["--report"][..], "--report needs a file name"),
        (&["--report", ""], "--report needs a file name"),
        (&["--abi=1"], "unexpected argument \"--abi=1\""),
        (&["emu", "emu"], "unexpected argument \"emu\""),
        (&["-x"], "unexpected argument \"-x\""),
        (&["rm:x"], "unknown device \"rm:x\""),
    ] {
        let (code, err) = run(info, args);
        assert_eq!(code, Some(2), "tegragpu-info {args:?}: {err}");
        assert!(err.starts_with("tegragpu-info: "), "{args:?}: {err}");
        assert!(err.contains(want), "tegragpu-info {args:?}: {err}");
    }
    let bench = env!("CARGO_BIN_EXE_tegragpu-bench");
    for (args, want) in [
        (&["--bogus"][..], "unknown argument --bogus"),
        (&["--quick=1"], "unknown argument --quick=1"),
        (&["extra"], "unknown argument extra"),
        (&["--device"], "--device needs a value"),
        (&["--record-only"], "--record-only needs N"),
        (&["--record-only", "x"], "--record-only: invalid digit"),
    ] {
        let (code, err) = run(bench, args);
        assert_eq!(code, Some(2), "tegragpu-bench {args:?}: {err}");
        assert!(
            err.starts_with(&format!("tegragpu-bench: {want}")),
            "tegragpu-bench {args:?}: {err}"
        );
    }
}

/// Every installed binary answers `--help` and `--version` without doing its work. (The
/// research probes are a package of their own, `tools/probes`; its `tests/cli.rs` checks
/// `tegragpu-rmprobe`'s command line.)
#[test]
fn every_binary_has_help_and_version() {
    let version = format!(" {}\n", env!("CARGO_PKG_VERSION"));
    for (name, exe) in [
        ("tegragpu-info", env!("CARGO_BIN_EXE_tegragpu-info")),
        ("tegragpu-bench", env!("CARGO_BIN_EXE_tegragpu-bench")),
    ] {
        for flag in ["--help", "-h"] {
            let o = std::process::Command::new(exe).arg(flag).output().unwrap();
            let out = String::from_utf8_lossy(&o.stdout);
            assert_eq!(o.status.code(), Some(0), "{name} {flag}");
            assert!(
                out.starts_with(&format!("usage: {name}")),
                "{name} {flag}: {out}"
            );
            assert!(
                out.contains("--version"),
                "{name} {flag} does not mention --version: {out}"
            );
        }
        for flag in ["--version", "-V"] {
            let o = std::process::Command::new(exe).arg(flag).output().unwrap();
            let out = String::from_utf8_lossy(&o.stdout);
            assert_eq!(o.status.code(), Some(0), "{name} {flag}");
            assert_eq!(out, format!("{name}{version}"), "{name} {flag}");
        }
    }
}
