//! Context limits, `cuLaunchKernelEx` and cooperative launches, host functions on streams and
//! `cuOccupancyMaxPotentialBlockSize`.

use crate::context::{current, Context};
use crate::device::out;
use crate::error::{fail, guard, invalid, Fail, R};
use crate::stream::{launch_cfg, stream_of, WAIT_NS};
use crate::types::*;
use parking_lot::Mutex;
use std::ffi::c_void;
use tegragpu::core::LaunchConfig;

const CU_LIMIT_STACK_SIZE: i32 = 0;
const CU_LIMIT_PRINTF_FIFO_SIZE: i32 = 1;
const CU_LIMIT_MALLOC_HEAP_SIZE: i32 = 2;
const CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH: i32 = 3;
const CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT: i32 = 4;
const CU_LIMIT_MAX_L2_FETCH_GRANULARITY: i32 = 5;
const CU_LIMIT_PERSISTING_L2_CACHE_SIZE: i32 = 6;
const CU_LIMIT_CIG_ENABLED: i32 = 8;
const CU_LIMIT_CIG_SHMEM_FALLBACK_ENABLED: i32 = 9;

const CU_LIMIT_SHMEM_SIZE: i32 = 7;
/// `CUDA_ERROR_UNSUPPORTED_LIMIT`.
const CUDA_ERROR_UNSUPPORTED_LIMIT: CUresult = 215;

/// Limits kept per process for what libtegragpu does not use (printf FIFO, L2 hints); `None`:
/// not set, the device's default.
static SOFT_LIMITS: Mutex<[Option<usize>; 7]> = Mutex::new([None; 7]);

/// A soft limit's default on the context's device, as NVIDIA's libcuda reports it (CUDA 13.0
/// on an H200): a printf FIFO of 64 KiB per multiprocessor, 2,048 pending launches, an L2
/// fetch granularity of 64 bytes, 30% of the persisting L2 maximum.
fn soft_default(c: &Context, limit: i32) -> usize {
    let attr = |n| crate::attributes::attribute(&c.core, n).unwrap_or(0).max(0) as usize;
    match limit {
        CU_LIMIT_PRINTF_FIFO_SIZE => attr(16) << 16,
        CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT => 2048,
        CU_LIMIT_MAX_L2_FETCH_GRANULARITY => 64,
        CU_LIMIT_PERSISTING_L2_CACHE_SIZE => attr(108) * 3 / 10,
        _ => 0,
    }
}

/// Limits no device here has: dynamic parallelism's synchronization depth (device-side
/// launches are refused) and the shared-memory fallback of CUDA in graphics.
fn unsupported_limit(limit: i32) -> R {
    Err(fail(
        CUDA_ERROR_UNSUPPORTED_LIMIT,
        format!("limit {limit} is not supported on this device"),
    ))
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxGetLimit(value: *mut usize, limit: i32) -> CUresult {
    guard("cuCtxGetLimit", || {
        let v = out(value, "pvalue")?;
        let c = current()?;
        *v = match limit {
            CU_LIMIT_STACK_SIZE => c.core.stack_limit() as usize,
            CU_LIMIT_MALLOC_HEAP_SIZE => c.core.malloc_heap_size() as usize,
            CU_LIMIT_PRINTF_FIFO_SIZE
            | CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT
            | CU_LIMIT_MAX_L2_FETCH_GRANULARITY
            | CU_LIMIT_PERSISTING_L2_CACHE_SIZE => {
                SOFT_LIMITS.lock()[limit as usize].unwrap_or_else(|| soft_default(c, limit))
            }
            // The most dynamic shared memory a block may opt in to (no graphics shares it).
            CU_LIMIT_SHMEM_SIZE => crate::attributes::attribute(&c.core, 97).unwrap_or(0) as usize,
            // Contexts here never share the GPU with graphics (CUDA in graphics is off).
            CU_LIMIT_CIG_ENABLED => 0,
            CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH | CU_LIMIT_CIG_SHMEM_FALLBACK_ENABLED => {
                return unsupported_limit(limit)
            }
            _ => return Err(invalid(format!("limit {limit} is not a CUlimit"))),
        };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxSetLimit(limit: i32, value: usize) -> CUresult {
    guard("cuCtxSetLimit", || {
        let c = current()?;
        match limit {
            CU_LIMIT_STACK_SIZE => c.core.set_stack_limit(value as u64)?,
            CU_LIMIT_MALLOC_HEAP_SIZE => c.core.set_malloc_heap_size(value as u64)?,
            CU_LIMIT_PRINTF_FIFO_SIZE
            | CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT
            | CU_LIMIT_PERSISTING_L2_CACHE_SIZE => SOFT_LIMITS.lock()[limit as usize] = Some(value),
            CU_LIMIT_MAX_L2_FETCH_GRANULARITY => {
                if !matches!(value, 0 | 32 | 64 | 128) {
                    return Err(invalid(format!(
                        "L2 fetch granularity {value}: 0, 32, 64 or 128"
                    )));
                }
                SOFT_LIMITS.lock()[limit as usize] = Some(value)
            }
            CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH | CU_LIMIT_CIG_SHMEM_FALLBACK_ENABLED => {
                return unsupported_limit(limit)
            }
            CU_LIMIT_SHMEM_SIZE | CU_LIMIT_CIG_ENABLED => {
                return Err(fail(
                    CUDA_ERROR_NOT_SUPPORTED,
                    format!("limit {limit} (CUDA in graphics) cannot be set"),
                ))
            }
            _ => return Err(invalid(format!("limit {limit} is not a CUlimit"))),
        }
        Ok(())
    })
}

/// `CUlaunchAttribute`: an id, padding, a 64-byte value.
#[repr(C)]
pub struct LaunchAttribute {
    id: u32,
    pad: u32,
    value: [u32; 16],
}

/// `CUlaunchConfig`.
#[repr(C)]
pub struct LaunchConfigC {
    grid: [u32; 3],
    block: [u32; 3],
    shared: u32,
    stream: *mut c_void,
    attrs: *const LaunchAttribute,
    num_attrs: u32,
}

unsafe fn launch_ex(
    c: *const LaunchConfigC,
    f: *mut c_void,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
    ptds: bool,
) -> R {
    let c = c.as_ref().ok_or_else(|| invalid("config is NULL"))?;
    let mut cfg = LaunchConfig {
        grid: c.grid,
        block: c.block,
        dynamic_shared_bytes: c.shared,
        cooperative: false,
        concurrent: false,
        cluster: [0; 3],
    };
    if c.num_attrs > 0 && c.attrs.is_null() {
        return Err(invalid("attrs is NULL with numAttrs > 0"));
    }
    for i in 0..c.num_attrs as usize {
        let a = &*c.attrs.add(i);
        match a.id {
            0 => {}
            // COOPERATIVE
            2 => cfg.cooperative = a.value[0] != 0,
            // CLUSTER_DIMENSION
            4 => cfg.cluster = [a.value[0], a.value[1], a.value[2]],
            // PRIORITY, MEM_SYNC_DOMAIN(_MAP), PREFERRED_SHARED_MEMORY_CARVEOUT: hints.
            8 | 9 | 10 | 14 => {}
            // PROGRAMMATIC_STREAM_SERIALIZATION (programmatic dependent launch, which CUB and
            // Thrust ask for on sm_90): it only allows the launch to start before the previous
            // one ends. Here it starts after, as without the attribute, so the kernel's
            // `griddepcontrol.wait` finds the previous grid complete.
            6 => {}
            id => {
                return Err(fail(
                    CUDA_ERROR_NOT_SUPPORTED,
                    format!("launch attribute {id} is not supported"),
                ))
            }
        }
    }
    if cfg.cluster != [0; 3] {
        // As NVIDIA's libcuda: a cluster beyond the function's limit (8 blocks, 16 with
        // non-portable sizes allowed) is CUDA_ERROR_INVALID_CLUSTER_SIZE, checked at every
        // launch (the attribute may change between launches).
        let func = crate::module::func_ref(f)?;
        let blocks: u64 = cfg.cluster.iter().map(|&d| u64::from(d)).product();
        if blocks > u64::from(cluster_limit(func)) {
            return Err(fail(
                CUDA_ERROR_INVALID_CLUSTER_SIZE,
                format!(
                    "cluster {:?} = {blocks} blocks: at most {} for this function{}",
                    cfg.cluster,
                    cluster_limit(func),
                    if func.kernel.non_portable_clusters() {
                        ""
                    } else {
                        " (CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED allows 16)"
                    }
                ),
            ));
        }
    }
    launch_cfg(f, &cfg, c.stream, params, extra, ptds)
}

#[no_mangle]
pub unsafe extern "C" fn cuLaunchKernelEx(
    c: *const LaunchConfigC,
    f: *mut c_void,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> CUresult {
    guard("cuLaunchKernelEx", || launch_ex(c, f, params, extra, false))
}

#[no_mangle]
pub unsafe extern "C" fn cuLaunchKernelEx_ptsz(
    c: *const LaunchConfigC,
    f: *mut c_void,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> CUresult {
    guard("cuLaunchKernelEx_ptsz", || {
        launch_ex(c, f, params, extra, true)
    })
}

/// The cluster shape a launch configuration asks for (its `CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION`,
/// else the kernel's compile-time shape) and the blocks of one cluster, for the occupancy
/// questions about clusters.
unsafe fn config_cluster(c: &LaunchConfigC, f: &crate::module::Func) -> R<([u32; 3], u32)> {
    if c.num_attrs > 0 && c.attrs.is_null() {
        return Err(invalid("attrs is NULL with numAttrs > 0"));
    }
    let mut shape = f.kernel.cluster_dims();
    for i in 0..c.num_attrs as usize {
        let a = &*c.attrs.add(i);
        if a.id == 4 {
            shape = Some([a.value[0], a.value[1], a.value[2]]);
        }
    }
    // No shape: clusters of one block.
    let shape = shape.unwrap_or([1, 1, 1]);
    let blocks = shape.iter().map(|&d| u64::from(d)).product::<u64>();
    if blocks == 0 {
        return Err(invalid(format!(
            "cluster shape {shape:?} has a zero dimension"
        )));
    }
    // As NVIDIA's libcuda: each dimension of the cluster divides the grid's.
    if (0..3).any(|i| c.grid[i] % shape[i] != 0) {
        return Err(fail(
            CUDA_ERROR_INVALID_CLUSTER_SIZE,
            format!("cluster {shape:?} does not divide the grid {:?}", c.grid),
        ));
    }
    let i = f.kernel.device().info();
    if i.sm_major < 9 {
        return Err(fail(
            CUDA_ERROR_NOT_SUPPORTED,
            format!(
                "thread-block clusters need sm_90 or later; this device is sm_{}{}",
                i.sm_major, i.sm_minor
            ),
        ));
    }
    Ok((shape, u32::try_from(blocks).unwrap_or(u32::MAX)))
}

/// The most blocks one cluster of `f` may have: 8, or 16 where the function allows non-portable
/// sizes; at most the kernel's `.maxclusterrank`.
fn cluster_limit(f: &crate::module::Func) -> u32 {
    f.kernel.max_cluster_blocks()
}

/// The most clusters of the configuration's shape that fit on the device at once
/// (`Device::max_active_clusters`): each block of a cluster on a different multiprocessor of one
/// of the driver's groups (RM: the skyline's virtual GPCs), with the blocks that fit on one
/// multiprocessor (at most 8 blocks of clusters per multiprocessor, as NVIDIA's libcuda counts
/// on the H200).
#[no_mangle]
pub unsafe extern "C" fn cuOccupancyMaxActiveClusters(
    n: *mut i32,
    f: *mut c_void,
    config: *const LaunchConfigC,
) -> CUresult {
    guard("cuOccupancyMaxActiveClusters", || {
        let o = out(n, "numClusters")?;
        let func = crate::module::func_ref(f)?;
        let c = config.as_ref().ok_or_else(|| invalid("config is NULL"))?;
        let (shape, blocks) = config_cluster(c, func)?;
        if blocks > cluster_limit(func) {
            return Err(fail(
                CUDA_ERROR_INVALID_CLUSTER_SIZE,
                format!(
                    "cluster {shape:?} = {blocks} blocks: at most {} here",
                    cluster_limit(func)
                ),
            ));
        }
        let threads = c.block.iter().map(|&d| u64::from(d)).product::<u64>();
        let per_sm = func
            .max_active_blocks(u32::try_from(threads).unwrap_or(u32::MAX), c.shared)?
            .min(8);
        let clusters = func.kernel.device().max_active_clusters(per_sm, blocks);
        *o = i32::try_from(clusters).unwrap_or(i32::MAX);
        Ok(())
    })
}

/// The largest cluster (in blocks) a launch of the configuration may use: 8, or 16 where the
/// function allows non-portable sizes (at most the kernel's `.maxclusterrank`), 0 where no block
/// of it fits on a multiprocessor.
#[no_mangle]
pub unsafe extern "C" fn cuOccupancyMaxPotentialClusterSize(
    n: *mut i32,
    f: *mut c_void,
    config: *const LaunchConfigC,
) -> CUresult {
    guard("cuOccupancyMaxPotentialClusterSize", || {
        let o = out(n, "clusterSize")?;
        let func = crate::module::func_ref(f)?;
        let c = config.as_ref().ok_or_else(|| invalid("config is NULL"))?;
        let i = func.kernel.device().info();
        if i.sm_major < 9 {
            return Err(fail(
                CUDA_ERROR_NOT_SUPPORTED,
                "thread-block clusters need sm_90 or later",
            ));
        }
        let threads = c.block.iter().map(|&d| u64::from(d)).product::<u64>();
        let per_sm =
            func.max_active_blocks(u32::try_from(threads).unwrap_or(u32::MAX), c.shared)?;
        *o = if per_sm == 0 {
            0
        } else {
            cluster_limit(func) as i32
        };
        Ok(())
    })
}

#[allow(clippy::too_many_arguments)]
unsafe fn cooperative(
    f: *mut c_void,
    grid: [u32; 3],
    block: [u32; 3],
    shared: u32,
    h: *mut c_void,
    params: *mut *mut c_void,
    ptds: bool,
) -> R {
    let cfg = LaunchConfig {
        grid,
        block,
        dynamic_shared_bytes: shared,
        cooperative: true,
        concurrent: false,
        cluster: [0; 3],
    };
    launch_cfg(f, &cfg, h, params, std::ptr::null_mut(), ptds)
}

#[no_mangle]
pub unsafe extern "C" fn cuLaunchCooperativeKernel(
    f: *mut c_void,
    gx: u32,
    gy: u32,
    gz: u32,
    bx: u32,
    by: u32,
    bz: u32,
    shared: u32,
    h: *mut c_void,
    params: *mut *mut c_void,
) -> CUresult {
    guard("cuLaunchCooperativeKernel", || {
        cooperative(f, [gx, gy, gz], [bx, by, bz], shared, h, params, false)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuLaunchCooperativeKernel_ptsz(
    f: *mut c_void,
    gx: u32,
    gy: u32,
    gz: u32,
    bx: u32,
    by: u32,
    bz: u32,
    shared: u32,
    h: *mut c_void,
    params: *mut *mut c_void,
) -> CUresult {
    guard("cuLaunchCooperativeKernel_ptsz", || {
        cooperative(f, [gx, gy, gz], [bx, by, bz], shared, h, params, true)
    })
}

/// Run `call` on a host thread once the stream's earlier work is complete; the stream's later
/// work waits until it returns.
pub(crate) unsafe fn host_call(
    h: *mut c_void,
    ptds: bool,
    call: Box<dyn FnOnce(*mut c_void) + Send>,
) -> R {
    let s = stream_of(h, ptds)?;
    let dev = &s.ctx.core;
    let reached = dev.create_signal(0)?;
    let done = dev.create_signal(0)?;
    s.record(|q| {
        q.signal(&reached, 1)?;
        q.wait(&done, 1)
    })?;
    let handle = s.handle() as usize;
    std::thread::Builder::new()
        .name("cuda-host-fn".into())
        .spawn(move || {
            let _ = reached.wait(1, WAIT_NS);
            call(handle as *mut c_void);
            done.set(1);
        })
        .map_err(|e| {
            fail(
                CUDA_ERROR_OUT_OF_MEMORY,
                format!("starting the host-function thread: {e}"),
            )
        })?;
    Ok(())
}

type HostFn = unsafe extern "C" fn(*mut c_void);
type StreamCallback = unsafe extern "C" fn(*mut c_void, CUresult, *mut c_void);

unsafe fn launch_host_func(h: *mut c_void, f: Option<HostFn>, data: *mut c_void, ptds: bool) -> R {
    let f = f.ok_or_else(|| invalid("fn is NULL"))?;
    let data = data as usize;
    let s = stream_of(h, ptds)?;
    if s.is_capturing() {
        // Captured: a host node of the capture's graph.
        return crate::capture::add(s, || Ok(crate::graph::NodeKind::Host { f, data }));
    }
    host_call(
        h,
        ptds,
        Box::new(move |_| unsafe { f(data as *mut c_void) }),
    )
}

#[no_mangle]
pub unsafe extern "C" fn cuLaunchHostFunc(
    h: *mut c_void,
    f: Option<HostFn>,
    data: *mut c_void,
) -> CUresult {
    guard("cuLaunchHostFunc", || launch_host_func(h, f, data, false))
}

#[no_mangle]
pub unsafe extern "C" fn cuLaunchHostFunc_ptsz(
    h: *mut c_void,
    f: Option<HostFn>,
    data: *mut c_void,
) -> CUresult {
    guard("cuLaunchHostFunc_ptsz", || {
        launch_host_func(h, f, data, true)
    })
}

unsafe fn add_callback(
    h: *mut c_void,
    cb: Option<StreamCallback>,
    data: *mut c_void,
    flags: u32,
    ptds: bool,
) -> R {
    let cb = cb.ok_or_else(|| invalid("callback is NULL"))?;
    if flags != 0 {
        return Err(invalid(format!("flags {flags:#x}: must be 0")));
    }
    let (data, hs) = (data as usize, h as usize);
    host_call(
        h,
        ptds,
        Box::new(move |_| unsafe { cb(hs as *mut c_void, CUDA_SUCCESS, data as *mut c_void) }),
    )
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamAddCallback(
    h: *mut c_void,
    cb: Option<StreamCallback>,
    data: *mut c_void,
    flags: u32,
) -> CUresult {
    guard("cuStreamAddCallback", || {
        add_callback(h, cb, data, flags, false)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamAddCallback_ptsz(
    h: *mut c_void,
    cb: Option<StreamCallback>,
    data: *mut c_void,
    flags: u32,
) -> CUresult {
    guard("cuStreamAddCallback_ptsz", || {
        add_callback(h, cb, data, flags, true)
    })
}

type SmemFn = unsafe extern "C" fn(i32) -> usize;

/// The block size with the most resident threads per SM (the largest such), and the grid that
/// fills the device with it.
unsafe fn max_potential(
    grid: *mut i32,
    block: *mut i32,
    f: *mut c_void,
    smem_fn: Option<SmemFn>,
    smem: usize,
    limit: i32,
) -> R {
    let (g, b) = (out(grid, "minGridSize")?, out(block, "blockSize")?);
    let func = crate::module::func_ref(f)?;
    let a = func.kernel.attributes();
    let info = func.kernel.device().info();
    let mut max_block = a.max_threads_per_block as i32;
    if limit > 0 {
        max_block = max_block.min(limit);
    }
    let (mut best_threads, mut best_block, mut best_blocks) = (0i64, 0i32, 0i32);
    let mut bs = max_block - max_block % 32;
    while bs >= 32 {
        let sm = match smem_fn {
            Some(cb) => cb(bs),
            None => smem,
        };
        let n = func.max_active_blocks(bs as u32, sm as u32).unwrap_or(0) as i32;
        let threads = n as i64 * bs as i64;
        if threads > best_threads {
            (best_threads, best_block, best_blocks) = (threads, bs, n);
        }
        bs -= 32;
    }
    if best_block == 0 {
        return Err(invalid(format!("kernel \"{}\" fits no block size", a.name)));
    }
    *b = best_block;
    *g = best_blocks * info.sm_count as i32;
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuOccupancyMaxPotentialBlockSize(
    grid: *mut i32,
    block: *mut i32,
    f: *mut c_void,
    smem_fn: Option<SmemFn>,
    smem: usize,
    limit: i32,
) -> CUresult {
    guard("cuOccupancyMaxPotentialBlockSize", || {
        max_potential(grid, block, f, smem_fn, smem, limit)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuOccupancyMaxPotentialBlockSizeWithFlags(
    grid: *mut i32,
    block: *mut i32,
    f: *mut c_void,
    smem_fn: Option<SmemFn>,
    smem: usize,
    limit: i32,
    _flags: u32,
) -> CUresult {
    guard("cuOccupancyMaxPotentialBlockSizeWithFlags", || {
        max_potential(grid, block, f, smem_fn, smem, limit)
    })
}

#[allow(dead_code)]
fn _unused(_: Fail) {}
