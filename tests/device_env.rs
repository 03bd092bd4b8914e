//! `TEGRAGPU_DEVICE` handling of `tg_device_open` (issue item 11). The variable is process-wide,
//! so this file holds a single test and runs as its own process.
//!
//! Precedence: an explicit, non-empty spec always wins; `TEGRAGPU_DEVICE` picks the device only
//! when the spec is NULL or "" (a default-selection variable).

use std::ffi::{CStr, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::ptr::null_mut;
use tegragpu::capi::*;

fn last_error() -> String {
    // SAFETY: tg_last_error_message returns a NUL-terminated string valid until the next failing
    // call on this thread.
    unsafe { CStr::from_ptr(tg_last_error_message()) }
        .to_string_lossy()
        .into_owned()
}

/// Opens `spec` (NULL for `None`); returns the status and closes what was opened.
fn open(spec: Option<&CStr>) -> (tg_status, bool) {
    let mut dev = null_mut();
    // SAFETY: spec is NULL or a valid C string; valid out-pointer.
    let st = unsafe { tg_device_open(spec.map_or(std::ptr::null(), |s| s.as_ptr()), &mut dev) };
    let written = !dev.is_null();
    if st == tg_status::TG_OK {
        // SAFETY: dev was just opened.
        assert_eq!(unsafe { tg_device_close(dev) }, tg_status::TG_OK);
    }
    (st, written)
}

#[test]
fn tegragpu_device_is_the_default_and_an_explicit_spec_wins() {
    // A value that is not UTF-8 is refused where the variable is used (NULL spec), not ignored.
    std::env::set_var("TEGRAGPU_DEVICE", OsStr::from_bytes(b"em\xffu"));
    let (st, written) = open(None);
    let msg = last_error();
    assert_eq!(st, tg_status::TG_ERROR_INVALID_ARGUMENT, "{msg}");
    assert!(!written, "out-parameter written on failure");
    assert!(
        msg.starts_with("tg_device_open: ") && msg.contains("TEGRAGPU_DEVICE is not valid UTF-8"),
        "{msg}"
    );
    // The same for an empty spec, which means "no spec".
    let (st, _) = open(Some(c""));
    assert_eq!(st, tg_status::TG_ERROR_INVALID_ARGUMENT, "{}", last_error());
    // An explicit spec does not consult the variable at all.
    let (st, _) = open(Some(c"emu"));
    assert_eq!(st, tg_status::TG_OK, "{}", last_error());

    // An explicit spec wins over a valid variable naming another device (this machine has no
    // nvgpu, and the old precedence made this open fail or pick the wrong device).
    std::env::set_var("TEGRAGPU_DEVICE", "nvgpu");
    let (st, _) = open(Some(c"emu"));
    assert_eq!(st, tg_status::TG_OK, "{}", last_error());
    // ... and over a variable that is not a spec at all.
    std::env::set_var("TEGRAGPU_DEVICE", "no-such-device");
    let (st, _) = open(Some(c"emu"));
    assert_eq!(st, tg_status::TG_OK, "{}", last_error());
    // An unknown explicit spec is refused even when the variable names a valid device; the
    // message names where the spec came from and lists the valid ones.
    std::env::set_var("TEGRAGPU_DEVICE", "emu");
    let (st, written) = open(Some(c"no-such-device"));
    let msg = last_error();
    assert_eq!(st, tg_status::TG_ERROR_INVALID_ARGUMENT, "{msg}");
    assert!(!written);
    assert!(
        msg.contains("unknown device spec \"no-such-device\" (from the argument)")
            && msg.contains("\"emu\", \"nvgpu\", \"rm\" or \"rm:N\""),
        "{msg}"
    );

    // NULL or "" spec: the variable picks the device.
    for spec in [None, Some(c"")] {
        let (st, _) = open(spec);
        assert_eq!(st, tg_status::TG_OK, "{spec:?}: {}", last_error());
    }
    std::env::set_var("TEGRAGPU_DEVICE", "no-such-device");
    let (st, _) = open(None);
    let msg = last_error();
    assert_eq!(st, tg_status::TG_ERROR_INVALID_ARGUMENT, "{msg}");
    assert!(
        msg.contains("unknown device spec \"no-such-device\" (from TEGRAGPU_DEVICE)")
            && msg.contains("\"emu\", \"nvgpu\", \"rm\" or \"rm:N\""),
        "{msg}"
    );
    // An empty value means "not set": NULL then opens the GPU of this machine (none here:
    // NOT_FOUND naming "emu"; on a GPU machine it opens).
    std::env::set_var("TEGRAGPU_DEVICE", "");
    let (st, _) = open(None);
    if !std::path::Path::new("/dev/nvgpu/igpu0/ctrl").exists()
        && !std::path::Path::new("/dev/nvidiactl").exists()
    {
        assert_eq!(st, tg_status::TG_ERROR_NOT_FOUND, "{}", last_error());
        assert!(last_error().contains("\"emu\""), "{}", last_error());
    }
    std::env::remove_var("TEGRAGPU_DEVICE");
}

#[test]
fn rm_with_an_index_names_the_nth_gpu_and_malformed_indexes_are_refused() {
    use tegragpu::backend::{choose_device, is_device_spec, DeviceKind};
    let c = choose_device(Some("rm:3"), None).unwrap();
    assert_eq!((c.kind, c.index), (DeviceKind::Rm, 3));
    assert!(c.reason.contains("\"rm:3\""), "{}", c.reason);
    let c = choose_device(None, Some("rm:1")).unwrap();
    assert_eq!((c.kind, c.index), (DeviceKind::Rm, 1));
    let c = choose_device(Some("rm"), None).unwrap();
    assert_eq!((c.kind, c.index), (DeviceKind::Rm, 0));
    for bad in [
        "rm:",
        "rm:-1",
        "rm:x",
        "rm: 1",
        "rm:1 ",
        "rm:+1",
        "rm:99999999999",
        "emu:1",
        "RM:1",
    ] {
        assert!(!is_device_spec(bad), "{bad:?}");
        let e = choose_device(Some(bad), None).unwrap_err();
        assert!(e.message.contains("rm:N"), "{bad:?}: {}", e.message);
    }
    // Through the C API: on a machine without that GPU, a clear error naming the index or the
    // driver, never a different GPU.
    let (st, _) = open(Some(c"rm:97"));
    assert_ne!(st, tg_status::TG_OK);
    let msg = last_error();
    assert!(msg.starts_with("tg_device_open: "), "{msg}");
}
