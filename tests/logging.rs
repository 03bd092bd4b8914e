//! Logging: `TEGRAGPU_LOG`, `tg_set_log_level`, `tg_set_log_callback` (src/log.rs).
//!
//! The level and the callback are process-wide, so everything that changes them in this process
//! is one test (`c_callback_receives_ioctl_trace_and_nothing_at_warn`); the other tests run
//! `tegragpu-info` or this test binary as child processes with the environment they need.

mod common;

use std::ffi::{c_char, c_void, CStr};
use std::os::fd::RawFd;
use std::process::Command;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tegragpu::capi::*;
use tegragpu::os::{Errno, Sys};
use tegragpu::sys::rm::*;

fn last_error() -> String {
    // SAFETY: tg_last_error_message returns a NUL-terminated string.
    unsafe { CStr::from_ptr(tg_last_error_message()) }
        .to_string_lossy()
        .into_owned()
}

/// One message as the C callback received it.
#[derive(Debug, Clone)]
struct Msg {
    level: tg_log_level,
    target: String,
    message: String,
}

static MESSAGES: Mutex<Vec<Msg>> = Mutex::new(Vec::new());
/// What the callback got as `user`, checked against the pointer registered.
static USER_SEEN: AtomicUsize = AtomicUsize::new(0);
/// Calls that violated the string contract (NULL, not UTF-8, embedded newline).
static BAD_STRINGS: AtomicUsize = AtomicUsize::new(0);
/// The status of a `tg_set_log_callback` made from inside the callback (-1 = not tried yet).
static NESTED_SET: AtomicUsize = AtomicUsize::new(usize::MAX);

/// Reads a C string argument strictly: it must be non-NULL and NUL-terminated valid UTF-8.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string (the contract under test).
unsafe fn c_arg(p: *const c_char) -> Option<String> {
    if p.is_null() {
        return None;
    }
    let len = libc::strlen(p);
    let bytes = std::slice::from_raw_parts(p.cast::<u8>(), len + 1);
    if bytes[len] != 0 {
        return None;
    }
    CStr::from_bytes_with_nul(bytes)
        .ok()?
        .to_str()
        .ok()
        .map(str::to_string)
}

unsafe extern "C" fn on_log(
    level: tg_log_level,
    target: *const c_char,
    message: *const c_char,
    user: *mut c_void,
) {
    USER_SEEN.store(user as usize, Ordering::Relaxed);
    let (Some(target), Some(message)) = (c_arg(target), c_arg(message)) else {
        BAD_STRINGS.fetch_add(1, Ordering::Relaxed);
        return;
    };
    if message.contains('\n') || target.is_empty() {
        BAD_STRINGS.fetch_add(1, Ordering::Relaxed);
    }
    if NESTED_SET.load(Ordering::Relaxed) == usize::MAX {
        // Changing the callback from inside it must be refused, not deadlock.
        let st = tg_set_log_callback(None, null_mut());
        NESTED_SET.store(st as usize, Ordering::Relaxed);
    }
    MESSAGES.lock().unwrap().push(Msg {
        level,
        target,
        message,
    });
}

fn take_messages() -> Vec<Msg> {
    std::mem::take(&mut *MESSAGES.lock().unwrap())
}

/// Counters of what a run of [`vector_add_on_emu`] logged.
struct Run {
    /// Messages logged between just before `tg_launch` and just after `tg_queue_submit` of the
    /// second launch (the hot path).
    during_hot_path: usize,
}

fn ck(st: tg_status, what: &str) {
    assert_eq!(st, tg_status::TG_OK, "{what}: {}", last_error());
}

/// Opens "emu", allocates buffers, loads the fixture cubin, launches `vector_add` twice and
/// waits, all through the C API; checks the result.
fn vector_add_on_emu() -> Run {
    let cubin = std::fs::read(common::repo_path(
        "tests/fixtures/cubin/kernels.sm_87.cubin",
    ))
    .expect("fixture cubin");
    const N: u32 = 1000;
    let bytes = u64::from(N) * 4;
    // SAFETY: every pointer passed below is valid; handles come from the library.
    unsafe {
        let mut dev = null_mut();
        ck(tg_device_open(c"emu".as_ptr(), &mut dev), "tg_device_open");
        let (mut m, mut k, mut q, mut s) = (null_mut(), null_mut(), null_mut(), null_mut());
        let mut bufs = [null_mut(); 3];
        let mut vas = [0u64; 3];
        for (b, va) in bufs.iter_mut().zip(vas.iter_mut()) {
            ck(tg_buf_alloc(dev, bytes, 0, b), "tg_buf_alloc");
            ck(tg_buf_gpu_address(*b, va), "tg_buf_gpu_address");
        }
        let mut ptrs = [null_mut::<c_void>(); 3];
        for (b, p) in bufs.iter().zip(ptrs.iter_mut()) {
            ck(tg_buf_cpu_ptr(*b, p), "tg_buf_cpu_ptr");
        }
        let (a, bb, c) = (
            ptrs[0] as *mut f32,
            ptrs[1] as *mut f32,
            ptrs[2] as *mut f32,
        );
        for i in 0..N as usize {
            *a.add(i) = i as f32;
            *bb.add(i) = 2.0 * i as f32;
            *c.add(i) = -1.0;
        }
        ck(
            tg_module_load(dev, cubin.as_ptr() as *const c_void, cubin.len(), &mut m),
            "tg_module_load",
        );
        ck(
            tg_module_get_kernel(m, c"vector_add".as_ptr(), &mut k),
            "tg_module_get_kernel",
        );
        ck(
            tg_queue_create(dev, tg_queue_kind_arg(0), &mut q),
            "tg_queue_create",
        );
        ck(tg_signal_create(dev, 0, &mut s), "tg_signal_create");
        let mut params = [0u8; 28];
        params[0..8].copy_from_slice(&vas[0].to_le_bytes());
        params[8..16].copy_from_slice(&vas[1].to_le_bytes());
        params[16..24].copy_from_slice(&vas[2].to_le_bytes());
        params[24..28].copy_from_slice(&N.to_le_bytes());
        let cfg = tg_launch_config {
            struct_size: std::mem::size_of::<tg_launch_config>() as u32,
            grid: [N.div_ceil(128), 1, 1],
            block: [128, 1, 1],
            dynamic_shared_bytes: 0,
            flags: 0,
            cluster: [0; 3],
        };
        let mut during_hot_path = 0;
        for round in 1..=2u64 {
            let before = MESSAGES.lock().unwrap().len();
            ck(
                tg_launch(q, k, &cfg, params.as_ptr() as *const c_void, params.len()),
                "tg_launch",
            );
            ck(tg_queue_signal(q, s, round), "tg_queue_signal");
            ck(tg_queue_submit(q), "tg_queue_submit");
            if round == 2 {
                during_hot_path = MESSAGES.lock().unwrap().len() - before;
            }
            ck(tg_signal_wait(s, round, 10_000_000_000), "tg_signal_wait");
        }
        for i in 0..N as usize {
            assert_eq!(*c.add(i), 3.0 * i as f32, "c[{i}]");
        }
        ck(tg_signal_destroy(s), "tg_signal_destroy");
        ck(tg_queue_destroy(q), "tg_queue_destroy");
        ck(tg_kernel_destroy(k), "tg_kernel_destroy");
        ck(tg_module_destroy(m), "tg_module_destroy");
        for b in bufs {
            ck(tg_buf_free(b), "tg_buf_free");
        }
        ck(tg_device_close(dev), "tg_device_close");
        Run { during_hot_path }
    }
}

/// A fake RM driver: answers the version query with the version of the loaded nvidia.ko (or
/// 570.86.15 where there is none) and refuses the root-client RM_ALLOC with
/// NV_ERR_NOT_SUPPORTED (ioctl success, RM status in the struct), so that the RM backend's
/// trace records of both kinds of result can be checked without a GPU.
struct FakeRm;

const FAKE_FD: RawFd = 1000;

impl Sys for FakeRm {
    fn open(&self, _: &CStr, _: i32) -> Result<RawFd, Errno> {
        Ok(FAKE_FD)
    }
    fn close(&self, _: RawFd) -> Result<(), Errno> {
        Ok(())
    }
    unsafe fn ioctl(&self, _: RawFd, request: u64, arg: usize) -> Result<i32, Errno> {
        if request == NV_ESC_CHECK_VERSION_STR_REQUEST {
            let v = &mut *(arg as *mut nv_ioctl_rm_api_version_t);
            let text = std::fs::read_to_string("/sys/module/nvidia/version")
                .map(|s| s.trim().to_string())
                .unwrap_or_else(|_| "570.86.15".to_string());
            v.reply = NV_RM_API_VERSION_REPLY_RECOGNIZED;
            v.versionString = [0; 64];
            v.versionString[..text.len()].copy_from_slice(text.as_bytes());
            Ok(0)
        } else if request == NV_ESC_RM_ALLOC_REQUEST {
            (*(arg as *mut NVOS21_PARAMETERS)).status = NV_ERR_NOT_SUPPORTED;
            Ok(0)
        } else {
            Err(libc::ENOTTY)
        }
    }
    unsafe fn mmap(
        &self,
        _: *mut u8,
        _: usize,
        _: i32,
        _: i32,
        _: RawFd,
        _: i64,
    ) -> Result<*mut u8, Errno> {
        Err(libc::ENODEV)
    }
    unsafe fn munmap(&self, _: *mut u8, _: usize) -> Result<(), Errno> {
        Ok(())
    }
}

/// `NAME(...) fd=N -> RESULT, T us` with RESULT `ok` or an errno name.
fn is_ioctl_record(m: &str, name: &str) -> bool {
    let Some(rest) = m.strip_prefix(name) else {
        return false;
    };
    let Some((_, result)) = rest.split_once(" -> ") else {
        return false;
    };
    let Some((res, dur)) = result.rsplit_once(", ") else {
        return false;
    };
    let res_ok = res == "ok"
        || res.starts_with("ok = ")
        || (res.starts_with('E') && res.chars().all(|c| c.is_ascii_uppercase()));
    let dur_ok = dur
        .strip_suffix(" us")
        .is_some_and(|d| d.parse::<f64>().is_ok_and(|v| v >= 0.0));
    rest.contains(" fd=") && res_ok && dur_ok
}

#[test]
fn c_callback_receives_ioctl_trace_and_nothing_at_warn() {
    static USER: u8 = 0;
    let user = &USER as *const u8 as *mut c_void;
    // SAFETY: on_log has the tg_log_fn signature and is thread-safe.
    unsafe {
        ck(
            tg_set_log_callback(Some(on_log), user),
            "tg_set_log_callback",
        );
    }
    // Not a level: refused.
    assert_eq!(
        tg_set_log_level(tg_log_level_arg(6)),
        tg_status::TG_ERROR_INVALID_ARGUMENT
    );
    assert!(
        last_error().contains("not a tg_log_level"),
        "{}",
        last_error()
    );
    assert_eq!(
        tg_set_log_level(tg_log_level_arg(-1)),
        tg_status::TG_ERROR_INVALID_ARGUMENT
    );

    // Trace: every ioctl, the bring-up steps and the open reason.
    ck(
        tg_set_log_level(tg_log_level_arg(tg_log_level::TG_LOG_TRACE as i32)),
        "tg_set_log_level",
    );
    take_messages();
    let run = vector_add_on_emu();
    let msgs = take_messages();
    assert_eq!(BAD_STRINGS.load(Ordering::Relaxed), 0, "malformed strings");
    assert_eq!(
        USER_SEEN.load(Ordering::Relaxed),
        user as usize,
        "user pointer"
    );
    assert_eq!(
        NESTED_SET.load(Ordering::Relaxed),
        tg_status::TG_ERROR_INVALID_ARGUMENT as usize,
        "tg_set_log_callback from inside the callback"
    );
    let ioctls: Vec<&Msg> = msgs
        .iter()
        .filter(|m| m.target == "tegragpu::ioctl")
        .collect();
    assert!(
        ioctls.iter().all(|m| m.level == tg_log_level::TG_LOG_TRACE),
        "ioctl records are trace messages"
    );
    let dump = || {
        msgs.iter()
            .map(|m| format!("{:?} {}: {}", m.level, m.target, m.message))
            .collect::<Vec<_>>()
            .join("\n")
    };
    for name in [
        "NVGPU_GPU_IOCTL_GET_CHARACTERISTICS",
        "NVGPU_GPU_IOCTL_ALLOC_AS",
        "NVGPU_GPU_IOCTL_OPEN_TSG",
        "NVGPU_TSG_IOCTL_CREATE_SUBCONTEXT",
        "NVMAP_IOC_CREATE",
        "NVMAP_IOC_ALLOC",
        "NVGPU_AS_IOCTL_MAP_BUFFER_EX",
        "NVGPU_GPU_IOCTL_OPEN_CHANNEL",
        "NVGPU_TSG_IOCTL_BIND_CHANNEL_EX",
        "NVGPU_IOCTL_CHANNEL_SETUP_BIND",
        "NVGPU_IOCTL_CHANNEL_ALLOC_OBJ_CTX",
        "NVGPU_AS_IOCTL_UNMAP_BUFFER",
        "NVMAP_IOC_FREE",
    ] {
        assert!(
            ioctls.iter().any(|m| is_ioctl_record(&m.message, name)),
            "no trace record of {name}:\n{}",
            dump()
        );
    }
    // Key arguments are in the record.
    assert!(
        ioctls.iter().any(|m| m
            .message
            .starts_with("NVGPU_IOCTL_CHANNEL_SETUP_BIND(channel_fd=")
            && m.message.contains("num_gpfifo_entries=")),
        "{}",
        dump()
    );
    assert!(
        ioctls.iter().any(
            |m| m.message.starts_with("NVGPU_IOCTL_CHANNEL_ALLOC_OBJ_CTX(")
                && m.message.contains("class_num=0xc7c0")
        ),
        "{}",
        dump()
    );
    // The open reason (info) and bring-up steps (debug).
    assert!(
        msgs.iter().any(|m| m.level == tg_log_level::TG_LOG_INFO
            && m.message.starts_with("opened emu (ga10b")
            && m.message.ends_with("spec \"emu\" from the argument")),
        "{}",
        dump()
    );
    assert!(
        msgs.iter().any(|m| m.level == tg_log_level::TG_LOG_DEBUG
            && m.target.starts_with("tegragpu::backend::nvgpu")
            && m.message.contains("work-submit token")),
        "{}",
        dump()
    );
    assert!(
        msgs.iter().all(|m| m.target.starts_with("tegragpu")),
        "{}",
        dump()
    );
    // The hot path (launch, signal, submit) logs nothing even at trace.
    assert_eq!(run.during_hot_path, 0, "{}", dump());

    // RM backend (fake driver): the escape, the class by number and name, the RM status.
    let Err(e) = tegragpu::backend::rm::RmBackend::open(Arc::new(FakeRm)) else {
        panic!("the fake driver refuses the client, but the RM backend opened");
    };
    let msgs = take_messages();
    let dump = || {
        msgs.iter()
            .map(|m| format!("{:?} {}: {}", m.level, m.target, m.message))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert!(
        msgs.iter().any(|m| m.target == "tegragpu::ioctl"
            && is_ioctl_record(&m.message, "NV_ESC_CHECK_VERSION_STR(cmd=QUERY)")),
        "{e}\n{}",
        dump()
    );
    if e.message.contains("NV_ESC_RM_ALLOC") {
        // (Skipped where the loaded driver's branch is one the library refuses.)
        assert!(
            msgs.iter().any(|m| m.target == "tegragpu::ioctl"
                && m.message
                    .starts_with("NV_ESC_RM_ALLOC(hClass=0x41 NV01_ROOT_CLIENT")
                && m.message.contains(&format!(
                    " fd={FAKE_FD} -> ok, RM status NV_ERR_NOT_SUPPORTED (0x56), "
                ))
                && m.message.ends_with(" us")),
            "{e}\n{}",
            dump()
        );
    }
    assert!(
        msgs.iter().any(|m| m.level == tg_log_level::TG_LOG_DEBUG
            && m.target == "tegragpu::backend::rm"
            && m.message.starts_with("opened /dev/nvidiactl")),
        "{}",
        dump()
    );

    // Warn (the default): the same work emits nothing.
    ck(
        tg_set_log_level(tg_log_level_arg(tg_log_level::TG_LOG_WARN as i32)),
        "tg_set_log_level",
    );
    vector_add_on_emu();
    let msgs = take_messages();
    assert!(msgs.is_empty(), "at warn: {msgs:?}");

    // NULL restores stderr: the callback is not called any more.
    ck(
        tg_set_log_level(tg_log_level_arg(tg_log_level::TG_LOG_OFF as i32)),
        "tg_set_log_level",
    );
    // SAFETY: NULL callback.
    unsafe { ck(tg_set_log_callback(None, null_mut()), "tg_set_log_callback") };
    // (Info: the one "opened emu" line goes to stderr.)
    ck(
        tg_set_log_level(tg_log_level_arg(tg_log_level::TG_LOG_INFO as i32)),
        "tg_set_log_level",
    );
    let mut dev = null_mut();
    // SAFETY: valid arguments.
    unsafe {
        ck(tg_device_open(c"emu".as_ptr(), &mut dev), "tg_device_open");
        ck(tg_device_close(dev), "tg_device_close");
    }
    assert!(take_messages().is_empty(), "callback called after removal");
    ck(
        tg_set_log_level(tg_log_level_arg(tg_log_level::TG_LOG_WARN as i32)),
        "tg_set_log_level",
    );
}

/// Environment variables that change the logging or the device, removed for child processes.
const ENV_VARS: [&str; 4] = [
    "TEGRAGPU_LOG",
    "TEGRAGPU_RM_TRACE",
    "TEGRAGPU_RM_TIMING",
    "TEGRAGPU_DEVICE",
];

/// Runs `tegragpu-info emu` with `env`; returns (exit code, stderr).
fn info_with(env: &[(&str, &str)]) -> (Option<i32>, String) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tegragpu-info"));
    c.arg("emu");
    for v in ENV_VARS {
        c.env_remove(v);
    }
    c.envs(env.iter().copied());
    let o = c.output().expect("run tegragpu-info");
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// `tegragpu[LEVEL] target: message`.
fn is_stderr_line(l: &str) -> bool {
    let Some(rest) = l.strip_prefix("tegragpu[") else {
        return false;
    };
    let Some((level, rest)) = rest.split_once("] ") else {
        return false;
    };
    ["ERROR", "WARN", "INFO", "DEBUG", "TRACE"].contains(&level)
        && rest.split_once(": ").is_some_and(|(t, _)| !t.contains(' '))
}

#[test]
fn tegragpu_log_trace_prints_every_ioctl_to_stderr() {
    for value in ["trace", "TRACE", " Trace "] {
        let (code, err) = info_with(&[("TEGRAGPU_LOG", value)]);
        assert_eq!(code, Some(0), "{err}");
        let lines: Vec<&str> = err.lines().collect();
        assert!(
            lines.iter().all(|l| is_stderr_line(l)),
            "TEGRAGPU_LOG={value:?}: a line is not `tegragpu[LEVEL] target: message`:\n{err}"
        );
        for name in [
            "NVGPU_GPU_IOCTL_GET_CHARACTERISTICS",
            "NVGPU_GPU_IOCTL_ALLOC_AS",
            "NVMAP_IOC_ALLOC",
        ] {
            let prefix = format!("tegragpu[TRACE] tegragpu::ioctl: {name}");
            assert!(
                lines.iter().any(|l| l
                    .strip_prefix("tegragpu[TRACE] tegragpu::ioctl: ")
                    .is_some_and(|m| l.starts_with(&prefix) && is_ioctl_record(m, name))),
                "TEGRAGPU_LOG={value:?}: no record of {name}:\n{err}"
            );
        }
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("tegragpu[DEBUG] tegragpu::backend::nvgpu")),
            "{err}"
        );
    }
    // The older variable is an alias for trace.
    let (code, err) = info_with(&[("TEGRAGPU_RM_TRACE", "1")]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("tegragpu[TRACE] tegragpu::ioctl: NVGPU_GPU_IOCTL_ALLOC_AS("),
        "{err}"
    );
    // An explicit TEGRAGPU_LOG wins over the alias.
    let (_, err) = info_with(&[("TEGRAGPU_RM_TRACE", "1"), ("TEGRAGPU_LOG", "error")]);
    assert_eq!(err, "", "TEGRAGPU_LOG=error");
}

#[test]
fn default_level_and_off_are_quiet_and_a_bad_value_warns_once() {
    for env in [
        vec![],
        vec![("TEGRAGPU_LOG", "off")],
        vec![("TEGRAGPU_LOG", "")],
    ] {
        let (code, err) = info_with(&env);
        assert_eq!(code, Some(0), "{env:?}: {err}");
        assert_eq!(err, "", "{env:?} prints nothing on stderr");
    }
    let (code, err) = info_with(&[("TEGRAGPU_LOG", "verbose")]);
    assert_eq!(code, Some(0), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "one warning: {err}");
    assert!(lines[0].starts_with("tegragpu[WARN] "), "{err}");
    assert!(
        lines[0].contains("TEGRAGPU_LOG=\"verbose\"")
            && lines[0].contains("error, warn, info, debug, trace, off"),
        "{err}"
    );
}

/// Child mode of [`open_reason_is_logged_at_info`]: does nothing unless the parent set
/// `TEGRAGPU_LOGGING_CHILD`.
#[test]
fn child_open_devices() {
    let Ok(mode) = std::env::var("TEGRAGPU_LOGGING_CHILD") else {
        return;
    };
    let spec: Option<&CStr> = match mode.as_str() {
        "arg" => Some(c"emu"),
        _ => None,
    };
    let mut dev = null_mut();
    // SAFETY: valid spec (or NULL) and out-pointer.
    unsafe {
        ck(
            tg_device_open(spec.map_or(std::ptr::null(), |s| s.as_ptr()), &mut dev),
            "tg_device_open",
        );
        ck(tg_device_close(dev), "tg_device_close");
    }
}

/// `TEGRAGPU_LOG=info` shows one line per device open: the backend and why it was chosen.
#[test]
fn open_reason_is_logged_at_info() {
    let run = |mode: &str, device: &str| {
        let mut c = Command::new(std::env::current_exe().expect("test binary"));
        c.args([
            "--exact",
            "child_open_devices",
            "--nocapture",
            "--test-threads=1",
        ]);
        for v in ENV_VARS {
            c.env_remove(v);
        }
        c.env("TEGRAGPU_LOGGING_CHILD", mode)
            .env("TEGRAGPU_LOG", "info")
            .env("TEGRAGPU_DEVICE", device);
        let o = c.output().expect("run the child");
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(o.status.success(), "{mode}: {err}");
        err.lines()
            .filter(|l| l.starts_with("tegragpu["))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    // An explicit spec wins over TEGRAGPU_DEVICE (here naming a device this machine lacks).
    let lines = run("arg", "nvgpu");
    assert_eq!(
        lines,
        [
            "tegragpu[INFO] tegragpu::core::device: opened emu (ga10b, emulated, nvgpu backend): \
             spec \"emu\" from the argument"
        ],
        "{lines:?}"
    );
    // NULL spec: TEGRAGPU_DEVICE picks the device.
    let lines = run("null", "emu");
    assert_eq!(
        lines,
        [
            "tegragpu[INFO] tegragpu::core::device: opened emu (ga10b, emulated, nvgpu backend): \
             spec \"emu\" from TEGRAGPU_DEVICE"
        ],
        "{lines:?}"
    );
}
