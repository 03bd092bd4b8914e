//! The CUDA driver API of the built libcuda.so (target/<profile>/libcuda.so), driven through
//! dlopen as a program written for CUDA would, on the device libtegragpu opens (the emulated
//! Orin without a GPU; `TEGRAGPU_DEVICE` picks another). No NVIDIA library is loaded.
//!
//! One test binary (`driver`, as the device run copies it); one module per area.

#![allow(non_snake_case, clippy::missing_transmute_annotations)]

#[macro_use]
#[path = "../common/mod.rs"]
mod common;
pub(crate) use common::*;

mod arrays;
mod capture;
mod conditional;
mod devices;
mod export_table;
mod exports;
mod extras;
mod graph_query;
mod graphs;
mod ipc;
mod library;
mod link;
mod managed;
mod memcpy2d;
mod memops;
mod memory;
mod modules;
mod numba;
mod peer;
mod pools;
mod queries;
mod streams;
mod tensormap;
mod texture;
mod vmm;
