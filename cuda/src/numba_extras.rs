//! What numba-cuda calls beyond the other modules: the profiler controls.
//!
//! `cuProfilerStart` / `cuProfilerStop` enable and disable collection by an attached profiling
//! tool for the current context. No profiling tool attaches to this library, so both only check
//! that a context is current and keep nothing; as with NVIDIA's libcuda without a tool, they
//! succeed, and starting twice or stopping twice is no error.

use crate::context::current;
use crate::error::guard;
use crate::types::*;

#[no_mangle]
pub unsafe extern "C" fn cuProfilerStart() -> CUresult {
    guard("cuProfilerStart", || current().map(|_| ()))
}

#[no_mangle]
pub unsafe extern "C" fn cuProfilerStop() -> CUresult {
    guard("cuProfilerStop", || current().map(|_| ()))
}
