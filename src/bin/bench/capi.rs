//! The C API side of `tegragpu-bench`: the same launches and the same command-buffer chain made
//! through `tg_*` calls on the benchmark's device, so that the C API and the Rust API are timed
//! in one process, in alternating rounds (a C program pays what these rows show).

use std::ffi::c_void;
use std::time::Instant;
use tegragpu::capi::*;
use tegragpu::core::Device;
use tegragpu::{Error, Result, Status};

const TO: u64 = 10_000_000_000;

fn check(what: &str, s: tg_status) -> Result<()> {
    if s == tg_status::TG_OK {
        return Ok(());
    }
    // SAFETY: tg_last_error_message returns a NUL-terminated thread-local string or NULL.
    let msg = unsafe {
        let p = tg_last_error_message();
        if p.is_null() {
            String::new()
        } else {
            std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned()
        }
    };
    Err(Error::new(
        Status::Internal,
        format!("C API side: {what} failed ({s:?}): {msg}"),
    ))
}

fn config(flags: u32) -> tg_launch_config {
    tg_launch_config {
        struct_size: std::mem::size_of::<tg_launch_config>() as u32,
        grid: [1, 1, 1],
        block: [32, 1, 1],
        dynamic_shared_bytes: 0,
        flags,
        cluster: [0; 3],
    }
}

/// A device handle for the Rust API's device, the fixture module, its `empty_kernel` and
/// `increment`, and a compute queue owned by this thread (as `c-examples/bench` uses).
pub struct Capi {
    dev: *mut tg_device,
    module: *mut tg_module,
    empty: *mut tg_kernel,
    inc: *mut tg_kernel,
    q: *mut tg_queue,
}

impl Capi {
    pub fn new(dev: &Device, cubin: &[u8], depth: u32) -> Result<Capi> {
        let mut c = Capi {
            dev: tegragpu::capi::device_handle(dev)?,
            module: std::ptr::null_mut(),
            empty: std::ptr::null_mut(),
            inc: std::ptr::null_mut(),
            q: std::ptr::null_mut(),
        };
        // SAFETY: every pointer passed is valid for the call; handles come from earlier calls.
        unsafe {
            check(
                "tg_module_load",
                tg_module_load(c.dev, cubin.as_ptr().cast(), cubin.len(), &mut c.module),
            )?;
            check(
                "tg_module_get_kernel(empty_kernel)",
                tg_module_get_kernel(c.module, c"empty_kernel".as_ptr(), &mut c.empty),
            )?;
            check(
                "tg_module_get_kernel(increment)",
                tg_module_get_kernel(c.module, c"increment".as_ptr(), &mut c.inc),
            )?;
            check(
                "tg_queue_create_owned",
                tg_queue_create_owned(c.dev, tg_queue_kind_arg(0), depth, &mut c.q),
            )?;
        }
        Ok(c)
    }

    /// CPU µs per empty-kernel launch over `n` launches, each `tg_launch` + `tg_queue_submit`;
    /// then waits (untimed) for them.
    pub fn launch_cpu(&mut self, n: usize) -> Result<f64> {
        let cfg = config(0);
        // SAFETY: live handles; cfg outlives the calls.
        unsafe {
            let t = Instant::now();
            for _ in 0..n {
                check(
                    "tg_launch",
                    tg_launch(self.q, self.empty, &cfg, std::ptr::null(), 0),
                )?;
                check("tg_queue_submit", tg_queue_submit(self.q))?;
            }
            let us = t.elapsed().as_secs_f64() * 1e6 / n as f64;
            check("tg_queue_synchronize", tg_queue_synchronize(self.q, TO))?;
            Ok(us)
        }
    }

    /// The 100-kernel chain of `super::replay` through `tg_cmdbuf_*` and `tg_queue_replay`.
    pub fn chain(&mut self) -> Result<CapiChain<'_>> {
        let mut ch = CapiChain {
            c: self,
            q: std::ptr::null_mut(),
            counter: std::ptr::null_mut(),
            va: 0,
            cb: std::ptr::null_mut(),
            done: std::ptr::null_mut(),
            sig_node: 0,
            next: 0,
            expect: 0,
        };
        let one = config(0);
        // SAFETY: live handles; every out-pointer is valid.
        unsafe {
            check(
                "tg_queue_create_owned",
                tg_queue_create_owned(
                    ch.c.dev,
                    tg_queue_kind_arg(0),
                    super::replay::CHAIN_QUEUE_DEPTH,
                    &mut ch.q,
                ),
            )?;
            check(
                "tg_buf_alloc",
                tg_buf_alloc(
                    ch.c.dev,
                    4096,
                    TG_BUF_DEVICE_LOCAL | TG_BUF_ZEROED,
                    &mut ch.counter,
                ),
            )?;
            check(
                "tg_buf_gpu_address",
                tg_buf_gpu_address(ch.counter, &mut ch.va),
            )?;
            check(
                "tg_signal_create",
                tg_signal_create(ch.c.dev, 0, &mut ch.done),
            )?;
            check(
                "tg_cmdbuf_create_owned",
                tg_cmdbuf_create_owned(ch.c.dev, &mut ch.cb),
            )?;
            let p = [ch.va, 1u64];
            for _ in 0..super::replay::CHAIN {
                check(
                    "tg_cmdbuf_launch",
                    tg_cmdbuf_launch(
                        ch.cb,
                        ch.c.inc,
                        &one,
                        p.as_ptr().cast(),
                        16,
                        std::ptr::null_mut(),
                    ),
                )?;
            }
            check(
                "tg_cmdbuf_signal",
                tg_cmdbuf_signal(ch.cb, ch.done, 0, &mut ch.sig_node),
            )?;
            check("tg_cmdbuf_finish", tg_cmdbuf_finish(ch.cb))?;
        }
        Ok(ch)
    }
}

impl Drop for Capi {
    fn drop(&mut self) {
        // SAFETY: handles from `new` (NULL ones are no-ops); nothing uses them afterwards.
        unsafe {
            tg_queue_destroy(self.q);
            tg_kernel_destroy(self.inc);
            tg_kernel_destroy(self.empty);
            tg_module_destroy(self.module);
            tg_device_close(self.dev);
        }
    }
}

/// The chain through the C API (see `super::replay::Chain`).
pub struct CapiChain<'a> {
    c: &'a mut Capi,
    /// Its own owned compute queue, as deep as the Rust side's.
    q: *mut tg_queue,
    counter: *mut tg_buf,
    va: u64,
    cb: *mut tg_cmdbuf,
    done: *mut tg_signal,
    sig_node: u32,
    next: u64,
    expect: u64,
}

impl CapiChain<'_> {
    fn replay_submit(&mut self) -> Result<()> {
        // SAFETY: live handles.
        unsafe {
            check(
                "tg_queue_replay_submit",
                tg_queue_replay_submit(self.q, self.cb),
            )
        }
    }
    fn set_value(&mut self) -> Result<()> {
        self.next += 1;
        // SAFETY: live handle; the node is the chain's signal.
        unsafe {
            check(
                "tg_cmdbuf_set_value",
                tg_cmdbuf_set_value(self.cb, self.sig_node, self.next),
            )
        }
    }
    fn wait(&mut self) -> Result<()> {
        // SAFETY: live handle.
        unsafe { check("tg_signal_wait", tg_signal_wait(self.done, self.next, TO)) }
    }
}

impl super::replay::Chain for CapiChain<'_> {
    fn cpu(&mut self, n: usize) -> Result<f64> {
        let t = Instant::now();
        for _ in 0..n {
            self.replay_submit()?;
        }
        let us = t.elapsed().as_secs_f64() * 1e6 / n as f64;
        // SAFETY: live handle.
        unsafe { check("tg_queue_synchronize", tg_queue_synchronize(self.q, TO))? };
        self.expect += (n * super::replay::CHAIN) as u64;
        Ok(us)
    }
    fn wall(&mut self) -> Result<f64> {
        self.set_value()?;
        let t = Instant::now();
        self.replay_submit()?;
        self.wait()?;
        self.expect += super::replay::CHAIN as u64;
        Ok(t.elapsed().as_secs_f64() * 1e6)
    }
    fn update(&mut self, by: u64) -> Result<f64> {
        self.set_value()?;
        let p = [self.va, by];
        let t = Instant::now();
        // SAFETY: live handles; p outlives the call.
        unsafe {
            check(
                "tg_cmdbuf_set_params",
                tg_cmdbuf_set_params(
                    self.cb,
                    (super::replay::CHAIN / 2) as u32,
                    self.c.inc,
                    p.as_ptr() as *const c_void,
                    16,
                ),
            )?;
        }
        self.replay_submit()?;
        let us = t.elapsed().as_secs_f64() * 1e6;
        self.wait()?;
        self.expect += super::replay::CHAIN as u64 - 1 + by;
        Ok(us)
    }
    fn check(&mut self) -> Result<()> {
        let mut cpu: *mut c_void = std::ptr::null_mut();
        // SAFETY: live handles; the GPU is done with the counter after the synchronize.
        let got = unsafe {
            check("tg_queue_synchronize", tg_queue_synchronize(self.q, TO))?;
            check("tg_buf_cpu_ptr", tg_buf_cpu_ptr(self.counter, &mut cpu))?;
            std::ptr::read_volatile(cpu as *const u64)
        };
        if got != self.expect {
            return Err(Error::new(
                Status::Internal,
                format!(
                    "C API replay benchmark: counter {got}, expected {}",
                    self.expect
                ),
            ));
        }
        Ok(())
    }
}

impl Drop for CapiChain<'_> {
    fn drop(&mut self) {
        // SAFETY: handles from `Capi::chain` (NULL ones are no-ops); the queue is synchronized
        // first so that nothing in flight refers to them.
        unsafe {
            tg_queue_synchronize(self.q, TO);
            tg_cmdbuf_destroy(self.cb);
            tg_signal_destroy(self.done);
            tg_buf_free(self.counter);
            tg_queue_destroy(self.q);
        }
    }
}
