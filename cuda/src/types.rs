//! The ABI items of the CUDA driver API this library implements: result codes, handle types,
//! flags and the structures passed by pointer. Names are spelled as in NVIDIA's `cuda.h`; the
//! declarations are this project's own.
#![allow(non_camel_case_types, dead_code)]

use std::ffi::c_void;

pub type CUresult = u32;
pub type CUdevice = i32;
pub type CUdeviceptr = u64;

pub const CUDA_SUCCESS: CUresult = 0;
pub const CUDA_ERROR_INVALID_VALUE: CUresult = 1;
pub const CUDA_ERROR_OUT_OF_MEMORY: CUresult = 2;
pub const CUDA_ERROR_NOT_INITIALIZED: CUresult = 3;
pub const CUDA_ERROR_DEINITIALIZED: CUresult = 4;
pub const CUDA_ERROR_NO_DEVICE: CUresult = 100;
pub const CUDA_ERROR_INVALID_DEVICE: CUresult = 101;
pub const CUDA_ERROR_INVALID_IMAGE: CUresult = 200;
pub const CUDA_ERROR_INVALID_CONTEXT: CUresult = 201;
pub const CUDA_ERROR_MAP_FAILED: CUresult = 205;
pub const CUDA_ERROR_NO_BINARY_FOR_GPU: CUresult = 209;
pub const CUDA_ERROR_PEER_ACCESS_UNSUPPORTED: CUresult = 217;
pub const CUDA_ERROR_INVALID_PTX: CUresult = 218;
pub const CUDA_ERROR_JIT_COMPILER_NOT_FOUND: CUresult = 221;
pub const CUDA_ERROR_FILE_NOT_FOUND: CUresult = 301;
pub const CUDA_ERROR_OPERATING_SYSTEM: CUresult = 304;
pub const CUDA_ERROR_INVALID_HANDLE: CUresult = 400;
pub const CUDA_ERROR_NOT_FOUND: CUresult = 500;
pub const CUDA_ERROR_NOT_READY: CUresult = 600;
pub const CUDA_ERROR_ILLEGAL_ADDRESS: CUresult = 700;
pub const CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: CUresult = 701;
pub const CUDA_ERROR_LAUNCH_TIMEOUT: CUresult = 702;
pub const CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED: CUresult = 704;
pub const CUDA_ERROR_PEER_ACCESS_NOT_ENABLED: CUresult = 705;
pub const CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE: CUresult = 708;
pub const CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED: CUresult = 712;
pub const CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED: CUresult = 713;
pub const CUDA_ERROR_CONTEXT_IS_DESTROYED: CUresult = 709;
pub const CUDA_ERROR_ASSERT: CUresult = 710;
pub const CUDA_ERROR_LAUNCH_FAILED: CUresult = 719;
pub const CUDA_ERROR_NOT_PERMITTED: CUresult = 800;
pub const CUDA_ERROR_NOT_SUPPORTED: CUresult = 801;
pub const CUDA_ERROR_INVALID_CLUSTER_SIZE: CUresult = 912;
pub const CUDA_ERROR_UNKNOWN: CUresult = 999;

/// `CU_STREAM_LEGACY`, `CU_STREAM_PER_THREAD`: the two default-stream handles.
pub const CU_STREAM_LEGACY: usize = 1;
pub const CU_STREAM_PER_THREAD: usize = 2;
pub const CU_STREAM_NON_BLOCKING: u32 = 1;

pub const CU_EVENT_BLOCKING_SYNC: u32 = 1;
pub const CU_EVENT_DISABLE_TIMING: u32 = 2;
pub const CU_EVENT_INTERPROCESS: u32 = 4;
pub const CU_CTX_MAP_HOST: u32 = 0x08;
pub const CU_CTX_LMEM_RESIZE_TO_MAX: u32 = 0x10;
pub const CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS: u32 = 1;

/// `CUipcMemHandle` / `CUipcEventHandle`: 64 bytes, passed by value.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct CUipcHandle {
    pub reserved: [u8; 64],
}

pub const CU_MEMHOSTALLOC_PORTABLE: u32 = 1;
pub const CU_MEMHOSTALLOC_DEVICEMAP: u32 = 2;
pub const CU_MEMHOSTALLOC_WRITECOMBINED: u32 = 4;

pub const CU_LAUNCH_PARAM_END: usize = 0;
pub const CU_LAUNCH_PARAM_BUFFER_POINTER: usize = 1;
pub const CU_LAUNCH_PARAM_BUFFER_SIZE: usize = 2;

pub const CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: i32 = 0;
pub const CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: i32 = 1;
pub const CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES: i32 = 2;
pub const CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: i32 = 3;
pub const CU_FUNC_ATTRIBUTE_NUM_REGS: i32 = 4;
pub const CU_FUNC_ATTRIBUTE_PTX_VERSION: i32 = 5;
pub const CU_FUNC_ATTRIBUTE_BINARY_VERSION: i32 = 6;
pub const CU_FUNC_ATTRIBUTE_CACHE_MODE_CA: i32 = 7;
pub const CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: i32 = 8;
pub const CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: i32 = 9;
pub const CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET: i32 = 10;
pub const CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH: i32 = 11;
pub const CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT: i32 = 12;
pub const CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH: i32 = 13;
pub const CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED: i32 = 14;
pub const CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE: i32 = 15;

/// `CUfunc_cache`.
pub const CU_FUNC_CACHE_PREFER_NONE: u32 = 0;
pub const CU_FUNC_CACHE_PREFER_SHARED: u32 = 1;
pub const CU_FUNC_CACHE_PREFER_L1: u32 = 2;
pub const CU_FUNC_CACHE_PREFER_EQUAL: u32 = 3;

/// `CUmemorytype`.
pub const CU_MEMORYTYPE_HOST: u32 = 1;
pub const CU_MEMORYTYPE_DEVICE: u32 = 2;
pub const CU_MEMORYTYPE_ARRAY: u32 = 3;
pub const CU_MEMORYTYPE_UNIFIED: u32 = 4;

/// `CUdriverProcAddressQueryResult`.
pub const CU_GET_PROC_ADDRESS_SUCCESS: i32 = 0;
pub const CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND: i32 = 1;
pub const CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT: i32 = 2;

/// `CUuuid`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct CUuuid {
    pub bytes: [u8; 16],
}

/// `CUDA_KERNEL_NODE_PARAMS_v1` (the unversioned `cuGraphAddKernelNode` and
/// `cuGraphExecKernelNodeSetParams` take it).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct CUDA_KERNEL_NODE_PARAMS_v1 {
    pub func: *mut c_void,
    pub gridDimX: u32,
    pub gridDimY: u32,
    pub gridDimZ: u32,
    pub blockDimX: u32,
    pub blockDimY: u32,
    pub blockDimZ: u32,
    pub sharedMemBytes: u32,
    pub kernelParams: *mut *mut c_void,
    pub extra: *mut *mut c_void,
}

/// `CUDA_KERNEL_NODE_PARAMS_v2` (the `_v2` entry points): v1 plus a library kernel and context.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct CUDA_KERNEL_NODE_PARAMS_v2 {
    pub v1: CUDA_KERNEL_NODE_PARAMS_v1,
    pub kern: *mut c_void,
    pub ctx: *mut c_void,
}

/// `CUDA_MEMCPY2D_v2`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct CUDA_MEMCPY2D {
    pub srcXInBytes: usize,
    pub srcY: usize,
    pub srcMemoryType: u32,
    pub srcHost: *const c_void,
    pub srcDevice: CUdeviceptr,
    pub srcArray: *mut c_void,
    pub srcPitch: usize,
    pub dstXInBytes: usize,
    pub dstY: usize,
    pub dstMemoryType: u32,
    pub dstHost: *mut c_void,
    pub dstDevice: CUdeviceptr,
    pub dstArray: *mut c_void,
    pub dstPitch: usize,
    pub WidthInBytes: usize,
    pub Height: usize,
}

/// `CUDA_MEMCPY3D_v2`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct CUDA_MEMCPY3D {
    pub srcXInBytes: usize,
    pub srcY: usize,
    pub srcZ: usize,
    pub srcLOD: usize,
    pub srcMemoryType: u32,
    pub srcHost: *const c_void,
    pub srcDevice: CUdeviceptr,
    pub srcArray: *mut c_void,
    pub reserved0: *mut c_void,
    pub srcPitch: usize,
    pub srcHeight: usize,
    pub dstXInBytes: usize,
    pub dstY: usize,
    pub dstZ: usize,
    pub dstLOD: usize,
    pub dstMemoryType: u32,
    pub dstHost: *mut c_void,
    pub dstDevice: CUdeviceptr,
    pub dstArray: *mut c_void,
    pub reserved1: *mut c_void,
    pub dstPitch: usize,
    pub dstHeight: usize,
    pub WidthInBytes: usize,
    pub Height: usize,
    pub Depth: usize,
}

/// `CUDA_MEMSET_NODE_PARAMS`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct CUDA_MEMSET_NODE_PARAMS {
    pub dst: CUdeviceptr,
    pub pitch: usize,
    pub value: u32,
    pub elementSize: u32,
    pub width: usize,
    pub height: usize,
}
