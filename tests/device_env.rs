//! `TEGRAGPU_DEVICE` handling of `tg_device_open` (issue item 11). The variable is process-wide,
//! so this file holds a single test and runs as its own process.

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

#[test]
fn non_utf8_tegragpu_device_is_refused_not_ignored() {
    // Before the fix a value that is not UTF-8 was silently ignored and "emu" opened.
    std::env::set_var("TEGRAGPU_DEVICE", OsStr::from_bytes(b"em\xffu"));
    let mut dev = null_mut();
    // SAFETY: valid C string and out-pointer.
    let st = unsafe { tg_device_open(c"emu".as_ptr(), &mut dev) };
    let msg = last_error();
    if st == tg_status::TG_OK {
        // SAFETY: dev was just opened.
        unsafe { tg_device_close(dev) };
    }
    assert_eq!(st, tg_status::TG_ERROR_INVALID_ARGUMENT, "{msg}");
    assert!(dev.is_null(), "out-parameter written on failure");
    assert!(
        msg.starts_with("tg_device_open: ") && msg.contains("TEGRAGPU_DEVICE is not valid UTF-8"),
        "{msg}"
    );
    // The same for a NULL spec (the GPU of this machine).
    // SAFETY: NULL spec is allowed; valid out-pointer.
    let st = unsafe { tg_device_open(std::ptr::null(), &mut dev) };
    assert_eq!(st, tg_status::TG_ERROR_INVALID_ARGUMENT, "{}", last_error());

    // An empty value still means "not set"; a valid one still overrides the spec.
    std::env::set_var("TEGRAGPU_DEVICE", "");
    // SAFETY: as above.
    let st = unsafe { tg_device_open(c"emu".as_ptr(), &mut dev) };
    assert_eq!(st, tg_status::TG_OK, "{}", last_error());
    // SAFETY: dev was just opened.
    assert_eq!(unsafe { tg_device_close(dev) }, tg_status::TG_OK);
    std::env::set_var("TEGRAGPU_DEVICE", "emu");
    let mut dev = null_mut();
    // SAFETY: as above.
    let st = unsafe { tg_device_open(c"no-such-device".as_ptr(), &mut dev) };
    assert_eq!(st, tg_status::TG_OK, "{}", last_error());
    // SAFETY: dev was just opened.
    assert_eq!(unsafe { tg_device_close(dev) }, tg_status::TG_OK);
    std::env::remove_var("TEGRAGPU_DEVICE");
}
