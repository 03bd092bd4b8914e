/*
 * libtegragpu: GPU compute on NVIDIA Jetson Orin (nvgpu) and desktop NVIDIA GPUs (RM) without
 * libcuda. SPDX-License-Identifier: MIT OR Apache-2.0
 *
 * GENERATED FILE: do not edit. Source: src/capi/mod.rs (doc comments) + cbindgen.toml.
 * Regenerate with scripts/gen-header.sh.
 *
 * Conventions for every function below:
 * - Every fallible function returns a tg_status; TG_OK (0) is success. Out-parameters are
 *   written only on success.
 * - After a failure, tg_last_error_message() (thread-local) names the call and the values
 *   involved, e.g. "tg_buf_alloc: size_bytes is 0".
 * - Handles are opaque identifiers, never dereferenced by the library or by you. A NULL,
 *   destroyed or wrong-type handle gives TG_ERROR_INVALID_HANDLE (never undefined behaviour):
 *   handle values are never reused. Destroying NULL is a no-op.
 * - Structs passed in or out start with struct_size: set it to sizeof(the struct).
 * - Sizes carry units in their names (size_bytes), times are nanoseconds (timeout_ns).
 * - No input makes the library crash or abort: internal errors give TG_ERROR_INTERNAL.
 * - Link with -ltegragpu (pkg-config: tegragpu); soname libtegragpu.so.0.
 */

#ifndef TEGRAGPU_H
#define TEGRAGPU_H



#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/**
 * Major version of the library this header belongs to. Incompatible ABI changes bump it (and
 * the soname, `libtegragpu.so.<major>`).
 */
#define TG_VERSION_MAJOR 0

/**
 * Minor version: backwards-compatible additions.
 */
#define TG_VERSION_MINOR 1

/**
 * Patch version: fixes only.
 */
#define TG_VERSION_PATCH 0

/**
 * Wait without a deadline (pass as `timeout_ns`).
 */
#define TG_TIMEOUT_INFINITE 18446744073709551615ull

/**
 * `tg_buf_alloc()` flag: CPU-cached mapping (fast CPU reads). The default when none of
 * `TG_BUF_CPU_CACHED`, `TG_BUF_WRITE_COMBINED`, `TG_BUF_DEVICE_LOCAL` is given. On Orin: shared
 * memory, cached. On desktop GPUs: pinned host memory (the GPU reaches it over PCIe).
 */
#define TG_BUF_CPU_CACHED 1

/**
 * `tg_buf_alloc()` flag: write-combined CPU mapping (for data the CPU only writes). On desktop
 * GPUs: video memory, mapped for the CPU through BAR1 at allocation (CPU reads are very slow).
 */
#define TG_BUF_WRITE_COMBINED 2

/**
 * `tg_buf_alloc()` flag: zero the memory before returning it.
 */
#define TG_BUF_ZEROED 4

/**
 * `tg_buf_alloc()` flag: memory placed for the GPU. On desktop GPUs: video memory (full GPU
 * bandwidth), CPU-mapped through BAR1 only when `tg_buf_cpu_ptr()` is first called (CPU writes
 * fast, reads very slow); allocation is fastest. On Orin the same as `TG_BUF_CPU_CACHED`.
 */
#define TG_BUF_DEVICE_LOCAL 8

/**
 * `tg_queue_write_value()` / `tg_queue_wait_value()` flag: the word is 64 bits wide (8-byte
 * aligned); without it, 32 bits (4-byte aligned).
 */
#define TG_VALUE_64 1

/**
 * `tg_queue_write_value()` flag: the write may pass earlier work of the queue (no wait for it
 * to complete, no memory barrier), like `CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER`.
 */
#define TG_VALUE_NO_BARRIER 2

/**
 * `tg_queue_wait_value()` condition: the word equals the value.
 */
#define TG_VALUE_EQ 0

/**
 * `tg_queue_wait_value()` condition: the word is at least the value (unsigned).
 */
#define TG_VALUE_GEQ 1

/**
 * `tg_queue_wait_value()` condition: `(signed)(word - value) >= 0` in the word's width, i.e.
 * at least the value across wrap-around (`CU_STREAM_WAIT_VALUE_GEQ`).
 */
#define TG_VALUE_GEQ_WRAPPING 2

/**
 * `tg_queue_wait_value()` condition: `word & value` is not 0.
 */
#define TG_VALUE_AND 3

/**
 * `tg_queue_wait_value()` condition: `~(word | value)` is not 0 in the word's width
 * (`CU_STREAM_WAIT_VALUE_NOR`).
 */
#define TG_VALUE_NOR 4

/**
 * `tg_launch_config.flags`: launch the grid cooperatively (`cuLaunchCooperativeKernel`), for
 * kernels that synchronise the whole grid (`cooperative_groups::this_grid().sync()`). Every
 * block must be resident at once: a grid larger than `tg_kernel_max_active_blocks()` × the SM
 * count returns `TG_ERROR_INVALID_LAUNCH`.
 */
#define TG_LAUNCH_COOPERATIVE 1

/**
 * `tg_launch_config.flags`: the launch may run concurrently with the launch recorded just
 * before it on the queue or command buffer (and with what that one may run concurrently
 * with): it waits only for what that launch waited for, not for that launch. Set it on
 * kernels that neither read nor write memory the other launches of the group write (as a
 * CUDA graph runs nodes without a dependency between them). A launch without the flag waits
 * for every earlier launch. Not with `TG_LAUNCH_COOPERATIVE`.
 */
#define TG_LAUNCH_CONCURRENT 2

/**
 * `tg_launch_config.flags`: submit the queue after recording the launch, in the same call
 * (`tg_launch()` + `tg_queue_submit()` in one, like `cuLaunchKernel`, which starts the work
 * at once). Cheaper than the two calls: one handle lookup, and on a shared queue one lock
 * instead of two (on x86 each lock after writing the rings drains the CPU's write-combining
 * buffers). Queues only: a command buffer refuses it (`tg_cmdbuf_launch()`).
 */
#define TG_LAUNCH_SUBMIT 4

/**
 * `tg_device_set_limit()` / `tg_device_get_limit()`: stack bytes per GPU thread
 * (`CU_LIMIT_STACK_SIZE`); 1024 by default.
 */
#define TG_LIMIT_STACK_SIZE 0

/**
 * `tg_device_set_limit()` / `tg_device_get_limit()`: bytes of the heap that `malloc` in kernels
 * allocates from (`CU_LIMIT_MALLOC_HEAP_SIZE`, the same value 2); 8 MiB by default. Set it
 * before loading a module that calls `malloc` or `free`: the heap is allocated then.
 */
#define TG_LIMIT_MALLOC_HEAP_SIZE 2

/**
 * Largest block, threads (x·y·z).
 */
#define TG_DEVICE_ATTR_MAX_THREADS_PER_BLOCK 1

/**
 * Largest block x dimension.
 */
#define TG_DEVICE_ATTR_MAX_BLOCK_DIM_X 2

/**
 * Largest block y dimension.
 */
#define TG_DEVICE_ATTR_MAX_BLOCK_DIM_Y 3

/**
 * Largest block z dimension.
 */
#define TG_DEVICE_ATTR_MAX_BLOCK_DIM_Z 4

/**
 * Largest grid x dimension (2^31 - 1).
 */
#define TG_DEVICE_ATTR_MAX_GRID_DIM_X 5

/**
 * Largest grid y dimension.
 */
#define TG_DEVICE_ATTR_MAX_GRID_DIM_Y 6

/**
 * Largest grid z dimension.
 */
#define TG_DEVICE_ATTR_MAX_GRID_DIM_Z 7

/**
 * Shared memory a block may use without opting in, bytes (48 KiB).
 */
#define TG_DEVICE_ATTR_MAX_SHARED_MEMORY_PER_BLOCK 8

/**
 * Shared memory a block may use in all (static + dynamic), bytes: the largest carveout
 * less the 1 KiB the hardware reserves per block.
 */
#define TG_DEVICE_ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN 9

/**
 * Shared memory the hardware reserves per block, bytes.
 */
#define TG_DEVICE_ATTR_RESERVED_SHARED_MEMORY_PER_BLOCK 10

/**
 * Shared memory of one SM (the largest carveout), bytes.
 */
#define TG_DEVICE_ATTR_MAX_SHARED_MEMORY_PER_SM 11

/**
 * Constant memory for `__constant__` data, bytes.
 */
#define TG_DEVICE_ATTR_TOTAL_CONSTANT_MEMORY 12

/**
 * Threads per warp.
 */
#define TG_DEVICE_ATTR_WARP_SIZE 13

/**
 * 32-bit registers a block may use.
 */
#define TG_DEVICE_ATTR_MAX_REGISTERS_PER_BLOCK 14

/**
 * 32-bit registers of one SM.
 */
#define TG_DEVICE_ATTR_MAX_REGISTERS_PER_SM 15

/**
 * Resident threads per SM.
 */
#define TG_DEVICE_ATTR_MAX_THREADS_PER_SM 16

/**
 * Resident blocks per SM.
 */
#define TG_DEVICE_ATTR_MAX_BLOCKS_PER_SM 17

/**
 * Enabled SMs.
 */
#define TG_DEVICE_ATTR_SM_COUNT 18

/**
 * SM version major (compute capability).
 */
#define TG_DEVICE_ATTR_COMPUTE_CAPABILITY_MAJOR 19

/**
 * SM version minor.
 */
#define TG_DEVICE_ATTR_COMPUTE_CAPABILITY_MINOR 20

/**
 * Maximum GPU clock, kHz.
 */
#define TG_DEVICE_ATTR_CLOCK_RATE_KHZ 21

/**
 * Peak memory clock, kHz.
 */
#define TG_DEVICE_ATTR_MEMORY_CLOCK_RATE_KHZ 22

/**
 * Memory bus width, bits.
 */
#define TG_DEVICE_ATTR_MEMORY_BUS_WIDTH_BITS 23

/**
 * L2 cache, bytes.
 */
#define TG_DEVICE_ATTR_L2_CACHE_BYTES 24

/**
 * Memory usable for allocations, bytes (as `tg_device_info`'s `memory_bytes`).
 */
#define TG_DEVICE_ATTR_TOTAL_MEMORY_BYTES 25

/**
 * 1 when the GPU shares the CPU's memory (Jetson), else 0.
 */
#define TG_DEVICE_ATTR_INTEGRATED 26

/**
 * 1: buffers are mapped for the CPU and the GPU alike.
 */
#define TG_DEVICE_ATTR_CAN_MAP_HOST_MEMORY 27

/**
 * 1 when every buffer's CPU pointer equals its GPU address, else 0.
 */
#define TG_DEVICE_ATTR_UNIFIED_ADDRESSING 28

/**
 * 1: kernels of different queues may run at once.
 */
#define TG_DEVICE_ATTR_CONCURRENT_KERNELS 29

/**
 * Copy engines that work alongside kernels (as NVIDIA's driver counts them).
 */
#define TG_DEVICE_ATTR_ASYNC_ENGINE_COUNT 30

/**
 * 1 when ECC is enabled on the device's memory, else 0.
 */
#define TG_DEVICE_ATTR_ECC_ENABLED 31

/**
 * PCI domain (0 for the integrated GPU of a Jetson).
 */
#define TG_DEVICE_ATTR_PCI_DOMAIN_ID 32

/**
 * PCI bus (0 for the integrated GPU of a Jetson).
 */
#define TG_DEVICE_ATTR_PCI_BUS_ID 33

/**
 * PCI device (slot) (0 for the integrated GPU of a Jetson).
 */
#define TG_DEVICE_ATTR_PCI_DEVICE_ID 34

/**
 * PCI device id << 16 | PCI vendor id (0x233510DE for the H200).
 */
#define TG_DEVICE_ATTR_PCI_VENDOR_DEVICE_ID 35

/**
 * PCI subsystem device id << 16 | subsystem vendor id.
 */
#define TG_DEVICE_ATTR_PCI_SUBSYSTEM_ID 36

/**
 * 1: cooperative launches (grid-wide sync) are supported.
 */
#define TG_DEVICE_ATTR_COOPERATIVE_LAUNCH 37

/**
 * 1 when thread-block clusters are supported (sm_90 and later), else 0.
 */
#define TG_DEVICE_ATTR_CLUSTER_LAUNCH 38

/**
 * 1 when kernels have a run-time limit, else 0 (0: the library imposes none).
 */
#define TG_DEVICE_ATTR_KERNEL_EXEC_TIMEOUT 39

/**
 * 0: any number of processes may use the device.
 */
#define TG_DEVICE_ATTR_COMPUTE_MODE 40

/**
 * Largest pitch of a pitched copy, bytes.
 */
#define TG_DEVICE_ATTR_MAX_PITCH 41

/**
 * Alignment a texture's base address needs, bytes.
 */
#define TG_DEVICE_ATTR_TEXTURE_ALIGNMENT 42

/**
 * Alignment a pitched texture's pitch needs, bytes.
 */
#define TG_DEVICE_ATTR_TEXTURE_PITCH_ALIGNMENT 43

/**
 * Largest 1-D linear texture, elements.
 */
#define TG_DEVICE_ATTR_MAX_TEXTURE_1D_LINEAR_WIDTH 44

/**
 * Largest pitched 2-D texture width, elements.
 */
#define TG_DEVICE_ATTR_MAX_TEXTURE_2D_LINEAR_WIDTH 45

/**
 * Largest pitched 2-D texture height, rows.
 */
#define TG_DEVICE_ATTR_MAX_TEXTURE_2D_LINEAR_HEIGHT 46

/**
 * Largest pitched 2-D texture pitch, bytes.
 */
#define TG_DEVICE_ATTR_MAX_TEXTURE_2D_LINEAR_PITCH 47

/**
 * 1: global loads may be cached in L1.
 */
#define TG_DEVICE_ATTR_GLOBAL_L1_CACHE_SUPPORTED 48

/**
 * 1: local memory may be cached in L1.
 */
#define TG_DEVICE_ATTR_LOCAL_L1_CACHE_SUPPORTED 49

/**
 * Width of the GPU virtual address space, bits.
 */
#define TG_DEVICE_ATTR_VIRTUAL_ADDRESS_BITS 50

/**
 * `tg_texture_desc.kind`: `width` elements in a row (`tex1Dfetch(tex, i)`, integer index).
 */
#define TG_TEXTURE_LINEAR 1

/**
 * `tg_texture_desc.kind`: `height` rows of `width` elements, `pitch_bytes` apart
 * (`tex2D(tex, x, y)`; CUDA's `CU_RESOURCE_TYPE_PITCH2D`).
 */
#define TG_TEXTURE_PITCH2D 2

/**
 * `tg_texture_desc.format`: unsigned 8-bit channels.
 */
#define TG_TEXTURE_FORMAT_U8 0

/**
 * Signed 8-bit channels.
 */
#define TG_TEXTURE_FORMAT_S8 1

/**
 * Unsigned 16-bit channels.
 */
#define TG_TEXTURE_FORMAT_U16 2

/**
 * Signed 16-bit channels.
 */
#define TG_TEXTURE_FORMAT_S16 3

/**
 * Unsigned 32-bit channels.
 */
#define TG_TEXTURE_FORMAT_U32 4

/**
 * Signed 32-bit channels.
 */
#define TG_TEXTURE_FORMAT_S32 5

/**
 * 16-bit float (`__half`) channels.
 */
#define TG_TEXTURE_FORMAT_F16 6

/**
 * 32-bit float channels.
 */
#define TG_TEXTURE_FORMAT_F32 7

/**
 * `tg_texture_desc.address_mode[i]`: repeat (`cudaAddressModeWrap`; 2-D textures need
 * `TG_TEXTURE_NORMALIZED_COORDS`, as in CUDA).
 */
#define TG_ADDRESS_WRAP 0

/**
 * Clamp to the edge texel (`cudaAddressModeClamp`, the default).
 */
#define TG_ADDRESS_CLAMP 1

/**
 * Mirror at every edge (`cudaAddressModeMirror`; needs `TG_TEXTURE_NORMALIZED_COORDS`).
 */
#define TG_ADDRESS_MIRROR 2

/**
 * `border_color` outside the texture (`cudaAddressModeBorder`).
 */
#define TG_ADDRESS_BORDER 3

/**
 * `tg_texture_desc.flags`: 8- and 16-bit integer data reads as floats in [0, 1] (unsigned) or
 * [-1, 1] (signed) (`cudaReadModeNormalizedFloat`); without it, integers read as integers.
 */
#define TG_TEXTURE_READ_NORMALIZED_FLOAT 1

/**
 * Coordinates in [0, 1) across the texture instead of [0, width) (2-D textures).
 */
#define TG_TEXTURE_NORMALIZED_COORDS 2

/**
 * Bilinear filtering (`cudaFilterModeLinear`) instead of the nearest texel (2-D textures whose
 * fetches return floats: float formats, or `TG_TEXTURE_READ_NORMALIZED_FLOAT`).
 */
#define TG_TEXTURE_LINEAR_FILTER 4

/**
 * Which kernel driver a device is driven through.
 */
typedef enum tg_backend {
    /**
     * Jetson Orin: nvgpu.ko + nvmap.ko (or the emulated Orin).
     */
    TG_BACKEND_NVGPU = 0,
    /**
     * Desktop NVIDIA driver: nvidia.ko + nvidia-uvm.ko.
     */
    TG_BACKEND_RM = 1,
} tg_backend;

/**
 * Log levels, from quiet to verbose (`tg_set_log_level()`, `tg_log_fn`). A level shows its own
 * messages and those of every level above it in this list.
 */
typedef enum tg_log_level {
    /**
     * No messages (a level to set; messages never carry it).
     */
    TG_LOG_OFF = 0,
    /**
     * Failures the library reports or cannot recover from.
     */
    TG_LOG_ERROR = 1,
    /**
     * Problems the library works around (the default level).
     */
    TG_LOG_WARN = 2,
    /**
     * One line per device open: which backend was opened and why.
     */
    TG_LOG_INFO = 3,
    /**
     * Bring-up steps: device nodes, classes, address space, channels, USERD/doorbell mappings.
     */
    TG_LOG_DEBUG = 4,
    /**
     * Every ioctl with its name, key arguments, result and duration.
     */
    TG_LOG_TRACE = 5,
} tg_log_level;

/**
 * Which engine a queue feeds.
 */
typedef enum tg_queue_kind {
    /**
     * Kernel launches and SM copies with `tg_queue_copy()` (and signals, waits, barriers).
     */
    TG_QUEUE_COMPUTE = 0,
    /**
     * Copy-engine transfers with `tg_queue_copy()` (and signals, waits, barriers; no launches).
     */
    TG_QUEUE_COPY = 1,
} tg_queue_kind;

/**
 * Result of every fallible call. The values are stable: never renumbered, never reused.
 *
 * After any status other than `TG_OK`, `tg_last_error_message()` describes the failure.
 */
typedef enum tg_status {
    /**
     * Success.
     */
    TG_OK = 0,
    /**
     * An argument is out of range, malformed or inconsistent (zero size, unknown flag bits,
     * wrong `struct_size`, range outside a buffer, ...).
     */
    TG_ERROR_INVALID_ARGUMENT = 1,
    /**
     * A required pointer argument was NULL.
     */
    TG_ERROR_NULL_POINTER = 2,
    /**
     * A handle is NULL, destroyed, or of the wrong type.
     */
    TG_ERROR_INVALID_HANDLE = 3,
    /**
     * Host or GPU memory (or GPU virtual address space, or a ring) is exhausted, or a size is
     * larger than the library accepts.
     */
    TG_ERROR_OUT_OF_MEMORY = 4,
    /**
     * A named object (device, kernel, file) does not exist; also: no fault to report.
     */
    TG_ERROR_NOT_FOUND = 5,
    /**
     * The operation is not supported by this device, backend or build.
     */
    TG_ERROR_NOT_SUPPORTED = 6,
    /**
     * A wait ran past its timeout.
     */
    TG_ERROR_TIMEOUT = 7,
    /**
     * The GPU reported a fault (MMU fault, exception, channel error). Sticky per device: see
     * `tg_device_get_fault()`.
     */
    TG_ERROR_DEVICE_FAULT = 8,
    /**
     * A system call to the kernel driver failed (the message names the call and errno).
     */
    TG_ERROR_OS = 9,
    /**
     * A cubin (CUDA ELF) is malformed, truncated or built for another GPU.
     */
    TG_ERROR_INVALID_CUBIN = 10,
    /**
     * A launch does not fit the kernel: block size, shared memory, parameter size or count.
     */
    TG_ERROR_INVALID_LAUNCH = 11,
    /**
     * Run-time compilation (libnvrtc) failed; the message carries the compiler log.
     */
    TG_ERROR_COMPILE = 12,
    /**
     * An optional shared library (libnvrtc) is not installed.
     */
    TG_ERROR_LIBRARY_MISSING = 13,
    /**
     * The kernel driver's version or branch is not supported.
     */
    TG_ERROR_UNSUPPORTED_DRIVER = 14,
    /**
     * A bug in libtegragpu (a caught panic or a broken invariant).
     */
    TG_ERROR_INTERNAL = 15,
    /**
     * The device is unusable after an earlier fault; close it and open it again.
     */
    TG_ERROR_DEVICE_LOST = 16,
} tg_status;

/**
 * GPU memory that the CPU can access through `tg_buf_cpu_ptr()` (on Orin the memory is shared:
 * no copy is needed).
 *
 * Thread safety: all `tg_buf_*` functions may be called from any thread concurrently. The
 * memory itself is not synchronized: the caller orders CPU accesses against GPU work (signals,
 * `tg_queue_synchronize()`).
 */
typedef struct tg_buf tg_buf;

/**
 * A command buffer: launches, copies, signals, waits and barriers recorded once and replayed on
 * compute queues many times (`tg_queue_replay()`), with parameters and signal values updated
 * between replays. Thread safety: any thread; calls on one command buffer are serialized.
 */
typedef struct tg_cmdbuf tg_cmdbuf;

/**
 * An open GPU (real or emulated).
 *
 * Thread safety: all `tg_device_*` functions may be called from any thread concurrently.
 * Closing a device while its buffers, modules, kernels, queues or signals are alive is allowed:
 * they keep the device open until the last of them is destroyed.
 */
typedef struct tg_device tg_device;

/**
 * A kernel of a module; keeps its module loaded. Thread safety: any thread, concurrently; one
 * kernel may be launched on several queues.
 */
typedef struct tg_kernel tg_kernel;

/**
 * A loaded cubin. Thread safety: any thread, concurrently.
 */
typedef struct tg_module tg_module;

/**
 * A command queue (one GPU channel). Launches, copies, signals, waits and barriers are recorded
 * and made visible to the GPU by `tg_queue_submit()`; commands on one queue run in order.
 *
 * Thread safety: every function may be called from any thread; calls on the same queue are
 * serialized by a lock inside the queue (`tg_queue_synchronize()` holds it while it waits).
 * For parallel recording, use one queue per thread.
 */
typedef struct tg_queue tg_queue;

/**
 * A 64-bit timeline signal in GPU-visible memory: GPU queues write and wait for it, the CPU
 * reads, sets and waits for it. Thread safety: any thread, concurrently.
 */
typedef struct tg_signal tg_signal;

/**
 * A texture object: a read-only view of buffer memory that kernels sample with `tex1Dfetch`,
 * `tex2D`, ... through a `cudaTextureObject_t` parameter (`tg_texture_create()`). Thread safety:
 * any thread, concurrently.
 */
typedef struct tg_texture tg_texture;

/**
 * Static facts about a device (`tg_device_get_info()`).
 *
 * Set `struct_size = sizeof(tg_device_info)` before the call; on success the library sets it to
 * the number of bytes it filled.
 */
typedef struct tg_device_info {
    /**
     * In: `sizeof(tg_device_info)`. Out: bytes filled.
     */
    uint32_t struct_size;
    /**
     * Chip or product name, NUL-terminated (truncated to 63 bytes): "ga10b", "NVIDIA H200".
     */
    char name[64];
    /**
     * Architecture id as the driver reports it (nvgpu: 0x170 = GA10B; RM: e.g. 0x180 = GH100).
     */
    uint32_t arch;
    /**
     * SM version major, e.g. 8 for Orin (sm_87), 9 for Hopper (sm_90).
     */
    uint32_t sm_major;
    /**
     * SM version minor, e.g. 7 for Orin (sm_87).
     */
    uint32_t sm_minor;
    /**
     * Number of enabled SMs.
     */
    uint32_t sm_count;
    /**
     * Memory usable for allocations, bytes (Orin: system memory shared with the CPU).
     */
    uint64_t memory_bytes;
    /**
     * Width of the GPU virtual address space, bits.
     */
    uint32_t va_bits;
    /**
     * Kernel driver the device is driven through.
     */
    enum tg_backend backend;
    /**
     * True when the device is the in-process emulated Orin.
     */
    bool emulated;
} tg_device_info;

/**
 * A GPU fault (`tg_device_get_fault()`). Set `struct_size = sizeof(tg_fault_report)` before
 * the call; on success the library sets it to the number of bytes it filled.
 */
typedef struct tg_fault_report {
    /**
     * In: `sizeof(tg_fault_report)`. Out: bytes filled.
     */
    uint32_t struct_size;
    /**
     * Driver error code (nvgpu notifier: 31 = MMU fault, 13 = graphics exception, 8 = timeout).
     */
    uint32_t code;
    /**
     * Whether `address` holds the faulting GPU virtual address.
     */
    bool has_address;
    /**
     * Faulting GPU virtual address (valid when `has_address`).
     */
    uint64_t address;
    /**
     * Description naming the queue and what happened, NUL-terminated (truncated to 255 bytes).
     */
    char message[256];
} tg_fault_report;

/**
 * One GPU as `tg_device_list()` lists it, without opening it. Set `struct_size =
 * sizeof(tg_device_listing)` in the first element of the array; on success the library sets
 * it in every element it filled.
 */
typedef struct tg_device_listing {
    /**
     * In (first element): `sizeof(tg_device_listing)`. Out: bytes filled.
     */
    uint32_t struct_size;
    /**
     * The name `tg_device_get_info()` reports once it is open, NUL-terminated: "NVIDIA H200"
     * (desktop driver: the model name), "ga10b" (Jetson Orin and the emulated Orin).
     */
    char name[64];
    /**
     * The GPU's UUID. Desktop driver: as the driver reports it (zeros for a GPU the driver has
     * not initialised and whose procfs entry shows none). nvgpu, which reports none: built from
     * the driver's per-device identifier, chip and revision (stable for one board).
     */
    uint8_t uuid[16];
    /**
     * PCI location "domain:bus:device.function", NUL-terminated: "0000:00:06.0";
     * "0000:00:00.0" for the integrated GPU of a Jetson.
     */
    char pci_bus_id[32];
    /**
     * Kernel driver the GPU is driven through.
     */
    enum tg_backend backend;
    /**
     * True for the in-process emulated Orin.
     */
    bool emulated;
    /**
     * The spec `tg_device_open()` takes to open exactly this GPU, NUL-terminated: "rm:0",
     * "rm:1", ..., "nvgpu", "emu".
     */
    char spec[32];
} tg_device_listing;

/**
 * What a kernel needs and allows (`tg_kernel_get_attributes()`). Set
 * `struct_size = sizeof(tg_kernel_attributes)` before the call; on success the library sets it
 * to the number of bytes it filled.
 */
typedef struct tg_kernel_attributes {
    /**
     * In: `sizeof(tg_kernel_attributes)`. Out: bytes filled.
     */
    uint32_t struct_size;
    /**
     * Number of parameters (see `tg_kernel_get_param()`).
     */
    uint32_t num_params;
    /**
     * Total bytes of the packed parameter block `tg_launch()` takes.
     */
    uint32_t param_bytes;
    /**
     * Registers per thread.
     */
    uint32_t registers;
    /**
     * Static shared memory the kernel declares, bytes.
     */
    uint32_t static_shared_bytes;
    /**
     * Local memory (stack) per thread, bytes.
     */
    uint32_t local_bytes_per_thread;
    /**
     * Largest block (threads, x*y*z) a launch may use.
     */
    uint32_t max_threads_per_block;
    /**
     * Largest `dynamic_shared_bytes` a launch may request.
     */
    uint32_t max_dynamic_shared_bytes;
} tg_kernel_attributes;

/**
 * Grid, block and dynamic shared memory of one launch. Set
 * `struct_size = sizeof(tg_launch_config)`.
 */
typedef struct tg_launch_config {
    /**
     * `sizeof(tg_launch_config)`.
     */
    uint32_t struct_size;
    /**
     * Blocks in x, y, z (each at least 1; x ≤ 2^31-1, y and z ≤ 65535).
     */
    uint32_t grid[3];
    /**
     * Threads per block in x, y, z (each at least 1; x, y ≤ 1024, z ≤ 64; the product at most
     * the kernel's `max_threads_per_block`).
     */
    uint32_t block[3];
    /**
     * Dynamic shared memory per block, bytes (at most the kernel's `max_dynamic_shared_bytes`).
     */
    uint32_t dynamic_shared_bytes;
    /**
     * `TG_LAUNCH_*` bits; 0 for an ordinary launch. (Present when `struct_size` ≥ 36; callers
     * built against the 32-byte struct of version 0.1 keep working.)
     */
    uint32_t flags;
    /**
     * Thread-block cluster shape (`cudaLaunchAttributeClusterDimension`); `{0, 0, 0}` (or
     * `{1, 1, 1}`) for none. sm_90 (Hopper) only, at most 8 blocks, each dimension dividing the
     * grid's; a kernel with a compile-time shape (`__cluster_dims__`) always runs with it, and
     * a different shape here is refused. Other GPUs: `TG_ERROR_NOT_SUPPORTED`. In command
     * buffers too. (Present when `struct_size` ≥ 48.)
     */
    uint32_t cluster[3];
} tg_launch_config;

/**
 * What a texture object reads and how it samples (`tg_texture_create()`). Set
 * `struct_size = sizeof(tg_texture_desc)`; zero the fields you do not use.
 */
typedef struct tg_texture_desc {
    /**
     * `sizeof(tg_texture_desc)`.
     */
    uint32_t struct_size;
    /**
     * `TG_TEXTURE_LINEAR` or `TG_TEXTURE_PITCH2D`.
     */
    uint32_t kind;
    /**
     * Channel type, `TG_TEXTURE_FORMAT_*`.
     */
    uint32_t format;
    /**
     * Channels per element: 1, 2 or 4 (`float`, `float2`, `float4`, ...).
     */
    uint32_t channels;
    /**
     * `TG_TEXTURE_*` flag bits.
     */
    uint32_t flags;
    /**
     * Address modes for x and y (`TG_ADDRESS_*`; y is ignored for linear textures, which read 0
     * outside `[0, width)`).
     */
    uint32_t address_mode[2];
    /**
     * Color returned outside the texture with `TG_ADDRESS_BORDER` (RGBA).
     */
    float border_color[4];
    /**
     * Where the texture starts in the buffer, bytes (the GPU address must be 32-byte aligned).
     */
    uint64_t offset_bytes;
    /**
     * Elements per row (linear: at most 2^28; 2-D: at most 131072).
     */
    uint64_t width;
    /**
     * Rows (2-D only: 1 to 65000; 0 for linear textures).
     */
    uint64_t height;
    /**
     * Bytes from one row to the next (2-D only: a multiple of 32, at most 2^21 - 32, at least
     * one row; 0 for linear textures).
     */
    uint64_t pitch_bytes;
} tg_texture_desc;

/**
 * Receives the library's log messages (`tg_set_log_callback()`).
 *
 * - `level`: `TG_LOG_ERROR` ... `TG_LOG_TRACE` (never `TG_LOG_OFF`).
 * - `target`: the part of the library that wrote it, e.g. `"tegragpu::ioctl"` (ioctl records),
 *   `"tegragpu::backend::nvgpu"`, `"tegragpu::core::device"`.
 * - `message`: one line, without a trailing newline.
 * - `user`: the pointer given to `tg_set_log_callback()`.
 *
 * Both strings are NUL-terminated and valid only for the duration of the call: copy what you
 * keep. The callback runs on whichever thread logs (application threads inside `tg_*` calls,
 * the library's own threads), possibly on several at once: it must be thread-safe. It must
 * not call `tg_set_log_callback()` (refused there); messages from other `tg_*` calls it makes
 * go to stderr.
 */
typedef void (*tg_log_fn)(enum tg_log_level level,
                          const char *target,
                          const char *message,
                          void *user);

#ifdef __cplusplus
extern "C" {
#endif // __cplusplus

/**
 * The library's version, `(major << 16) | (minor << 8) | patch`. Compare
 * `tg_version() >> 16` with `TG_VERSION_MAJOR` to check that the loaded library matches the
 * header. Thread safety: any thread.
 */
uint32_t tg_version(void);

/**
 * A static, NUL-terminated description of a status, e.g.
 * "TG_ERROR_INVALID_ARGUMENT: invalid argument". Never NULL; values outside the enum give
 * "unknown tg_status". The string must not be freed. Thread safety: any thread.
 */
const char *tg_status_str(tg_status status);

/**
 * The message of the most recent failed call on the calling thread, e.g.
 * "tg_buf_alloc: size_bytes is 0". Names the call and the values involved (and, for system
 * calls, the ioctl and errno). Never NULL: "" when no call has failed on this thread yet.
 *
 * Ownership: the string belongs to the library and stays valid until the next failing call on
 * the same thread; successful calls leave it unchanged. Thread safety: thread-local.
 */
const char *tg_last_error_message(void);

/**
 * Open a device.
 *
 * - `spec`: `"emu"` = the emulated Orin (no hardware needed), `"nvgpu"` (Jetson Orin), `"rm"`
 *   (desktop NVIDIA driver, its first GPU), `"rm:N"` (its N-th GPU, from 0, in the order
 *   `nvidia-smi` lists them; `TG_ERROR_NOT_FOUND` when there is no such GPU). NULL or `""` = the default device: the one the environment
 *   variable `TEGRAGPU_DEVICE` names when it is set and non-empty, else the GPU found on this
 *   machine (nvgpu on Jetson Orin, else the desktop NVIDIA driver). An explicit spec always
 *   wins: `TEGRAGPU_DEVICE` only picks the device for callers that name none.
 * - `out`: receives the new device handle on success.
 *
 * At log level info, one message says which backend was opened and why (see
 * `tg_set_log_callback()`).
 *
 * Returns `TG_OK`; `TG_ERROR_NULL_POINTER` (`out` NULL); `TG_ERROR_INVALID_ARGUMENT` (unknown
 * spec, or, for a NULL spec, `TEGRAGPU_DEVICE` set to an unknown spec or to a value that is not
 * valid UTF-8: the message lists the valid specs); `TG_ERROR_NOT_FOUND` (no spec and no NVIDIA
 * GPU on this machine, or no N-th GPU for `"rm:N"`); `TG_ERROR_OS` / `TG_ERROR_UNSUPPORTED_DRIVER` (driver refused);
 * `TG_ERROR_NOT_SUPPORTED`.
 *
 * Ownership: the caller owns `*out` and releases it with `tg_device_close()`.
 * Thread safety: any thread.
 *
 * # Safety
 * `spec` is NULL or a NUL-terminated string; `out` is NULL or writable.
 */
enum tg_status tg_device_open(const char *spec,
                              struct tg_device **out);

/**
 * Close a device handle. Objects created from it stay valid and keep the device open until
 * they are destroyed; the device's resources are released with the last of them.
 * NULL is a no-op (`TG_OK`).
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE` (destroyed or not a device).
 * Thread safety: any thread; the handle must not be used after this call.
 *
 * # Safety
 * None beyond the handle contract (any value is checked).
 */
enum tg_status tg_device_close(struct tg_device *dev);

/**
 * Describe a device.
 *
 * - `out`: caller-allocated; set `out->struct_size = sizeof(tg_device_info)` first.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER` (`out` NULL);
 * `TG_ERROR_INVALID_ARGUMENT` (`struct_size` too small). Thread safety: any thread.
 *
 * # Safety
 * `out` is NULL or points to a writable `tg_device_info`.
 */
enum tg_status tg_device_get_info(const struct tg_device *dev, struct tg_device_info *out);

/**
 * Submit what is recorded on the device's queues, wait until all work submitted on every queue
 * of the device has completed, then print what kernels wrote with device-side `printf` to
 * `stdout` (docs/cuda-support.md), as `cuCtxSynchronize` after `cuLaunchKernel` does.
 *
 * Which queues it submits: every shared queue (once its lock is free within 200 ms; a queue
 * whose lock another thread holds longer is waited for as submitted so far), and the owned
 * queues of the calling thread. An owned queue of another thread is waited for as submitted
 * so far: its owner submits it.
 *
 * - `timeout_ns`: deadline in nanoseconds (`TG_TIMEOUT_INFINITE` = none).
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_TIMEOUT`; `TG_ERROR_DEVICE_FAULT` (the
 * device faulted: see `tg_device_get_fault()`). Thread safety: any thread.
 *
 * # Safety
 * None beyond the handle contract.
 */
enum tg_status tg_device_synchronize(const struct tg_device *dev, uint64_t timeout_ns);

/**
 * Report the device's sticky fault, if it has faulted.
 *
 * - `out`: caller-allocated; set `out->struct_size = sizeof(tg_fault_report)` first.
 *
 * Returns `TG_OK` (fault written to `*out`); `TG_ERROR_NOT_FOUND` (the device has not faulted;
 * `*out` untouched); `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`;
 * `TG_ERROR_INVALID_ARGUMENT` (`struct_size` too small). Thread safety: any thread.
 *
 * # Safety
 * `out` is NULL or points to a writable `tg_fault_report`.
 */
enum tg_status tg_device_get_fault(const struct tg_device *dev, struct tg_fault_report *out);

/**
 * Count the GPUs `tg_device_list()` lists, without opening any.
 *
 * - `spec`: NULL or `""` = the GPUs a program that names no device can use: the one
 *   `TEGRAGPU_DEVICE` names when it is set (`"rm"`: every GPU of the desktop driver; `"rm:N"`:
 *   only its N-th, none if there is no N-th; `"nvgpu"`, `"emu"`: one), else the GPUs of this
 *   machine (the Jetson's GPU, else every GPU of the desktop driver, else none: `*out` = 0).
 *   A spec lists what it names, as `tg_device_open()` would open it.
 * - `out`: receives the count.
 *
 * Returns `TG_OK`; `TG_ERROR_NULL_POINTER` (`out`); `TG_ERROR_INVALID_ARGUMENT` (unknown spec,
 * from the argument or `TEGRAGPU_DEVICE`); `TG_ERROR_OS` / `TG_ERROR_UNSUPPORTED_DRIVER` (the
 * driver refused the query). Thread safety: any thread.
 *
 * # Safety
 * `spec` is NULL or a NUL-terminated string; `out` is NULL or writable.
 */
enum tg_status tg_device_count(const char *spec, uint32_t *out);

/**
 * List the GPUs without opening them (no channel, no memory; on the desktop driver not even
 * the GPUs' device nodes), in the order of `"rm:N"`: `out[i].spec` opens the i-th.
 *
 * - `spec`: which GPUs, as for `tg_device_count()`.
 * - `out`, `capacity`: caller-allocated array of `capacity` elements; set
 *   `out[0].struct_size = sizeof(tg_device_listing)`. The first `min(capacity, count)`
 *   elements are written. `out` may be NULL when `capacity` is 0 (to ask for the count).
 * - `count`: receives how many GPUs there are (may exceed `capacity`).
 *
 * Returns `TG_OK`; `TG_ERROR_NULL_POINTER` (`count`, or `out` with a `capacity`);
 * `TG_ERROR_INVALID_ARGUMENT` (`struct_size` too small, unknown spec); `TG_ERROR_OS` /
 * `TG_ERROR_UNSUPPORTED_DRIVER`. Thread safety: any thread.
 *
 * # Safety
 * `spec` is NULL or a NUL-terminated string; `out` is NULL or points to `capacity` writable
 * elements of `out[0].struct_size` bytes each; `count` is NULL or writable.
 */
enum tg_status tg_device_list(const char *spec,
                              struct tg_device_listing *out,
                              uint32_t capacity,
                              uint32_t *count);

/**
 * Read one attribute of a device (`TG_DEVICE_ATTR_*`, like `cuDeviceGetAttribute`).
 *
 * Values come from the kernel driver where it reports them, from values NVIDIA's driver
 * reports for the GPU's PCI id (the H200), from the architecture, and from the limits the
 * library itself enforces. An attribute none of these knows for the device (for example the
 * memory clock of a Jetson) is `TG_ERROR_NOT_SUPPORTED`, never a guess. The first call may ask
 * the driver; later calls read a cache.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER` (`value`);
 * `TG_ERROR_INVALID_ARGUMENT` (unknown attribute); `TG_ERROR_NOT_SUPPORTED`. Thread safety:
 * any thread.
 *
 * # Safety
 * `value` is NULL or writable.
 */
enum tg_status tg_device_get_attribute(const struct tg_device *dev, uint32_t attr, int64_t *value);

/**
 * Free and total bytes of the memory the device's buffers come from, now (like
 * `cuMemGetInfo`). Jetson Orin: nvmap's IOVMM heap, which is the system memory the CPU shares
 * (the emulated Orin: `TEGRAGPU_EMU_MEMORY_BYTES`, less what its buffers hold); desktop GPUs:
 * the video memory heap.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER` (`free_bytes` or
 * `total_bytes`); `TG_ERROR_OS`; `TG_ERROR_NOT_SUPPORTED`. Thread safety: any thread.
 *
 * # Safety
 * `free_bytes` and `total_bytes` are NULL or writable.
 */
enum tg_status tg_device_memory_info(const struct tg_device *dev,
                                     uint64_t *free_bytes,
                                     uint64_t *total_bytes);

/**
 * Allocate GPU memory that the CPU can access.
 *
 * - `size_bytes`: at least 1 (rounded up to whole pages internally; `tg_buf_size()` reports the
 *   requested size).
 * - `flags`: at most one of `TG_BUF_CPU_CACHED`, `TG_BUF_WRITE_COMBINED`, `TG_BUF_DEVICE_LOCAL`
 *   (placement; see each flag), plus `TG_BUF_ZEROED`; 0 = CPU-cached, not zeroed.
 * - `out`: receives the new buffer handle.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`;
 * `TG_ERROR_INVALID_ARGUMENT` (`size_bytes` 0, unknown flag bits, conflicting flags);
 * `TG_ERROR_OUT_OF_MEMORY` (too large or memory exhausted); `TG_ERROR_DEVICE_FAULT`;
 * `TG_ERROR_OS`.
 *
 * Ownership: the caller owns `*out` and releases it with `tg_buf_free()`. The buffer keeps its
 * device open. Thread safety: any thread.
 *
 * # Safety
 * `out` is NULL or writable.
 */
enum tg_status tg_buf_alloc(const struct tg_device *dev,
                            uint64_t size_bytes,
                            uint32_t flags,
                            struct tg_buf **out);

/**
 * Free a buffer. The memory is released once GPU work already submitted no longer uses it;
 * CPU pointers from `tg_buf_cpu_ptr()` must not be used after this call. NULL is a no-op.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE` (destroyed or not a buffer).
 * Thread safety: any thread; the handle must not be used after this call.
 *
 * # Safety
 * None beyond the handle contract.
 */
enum tg_status tg_buf_free(struct tg_buf *buf);

/**
 * The CPU address of the buffer's first byte. Valid until `tg_buf_free()`; the size is
 * `tg_buf_size()`. On Orin the memory is shared with the CPU. On desktop GPUs video memory is
 * mapped for the CPU (through BAR1) on the first call: CPU writes are fast, CPU reads are slow
 * (use `TG_BUF_CPU_CACHED` for buffers the CPU reads back). It often equals
 * `tg_buf_gpu_address()`, but not always (e.g. under AddressSanitizer): give kernels the GPU
 * address.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`; `TG_ERROR_OS` or
 * `TG_ERROR_OUT_OF_MEMORY` when the CPU mapping cannot be made (BAR1 space exhausted);
 * `TG_ERROR_NOT_SUPPORTED` for an import (`tg_buf_import_fd()`) of another buffer's host memory
 * on desktop GPUs, which the driver maps only for GPUs.
 * Thread safety: any thread.
 *
 * # Safety
 * `out` is NULL or writable.
 */
enum tg_status tg_buf_cpu_ptr(const struct tg_buf *buf, void **out);

/**
 * The GPU virtual address of the buffer's first byte: pass it to kernels as a pointer.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`.
 * Thread safety: any thread.
 *
 * # Safety
 * `out` is NULL or writable.
 */
enum tg_status tg_buf_gpu_address(const struct tg_buf *buf, uint64_t *out);

/**
 * The buffer's size in bytes, as requested from `tg_buf_alloc()`.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`.
 * Thread safety: any thread.
 *
 * # Safety
 * `out` is NULL or writable.
 */
enum tg_status tg_buf_size(const struct tg_buf *buf, uint64_t *out);

/**
 * Export the buffer as a dma-buf file descriptor (for sharing with other drivers/processes).
 * On Jetson the dma-buf is nvmap's; on desktop GPUs the NVIDIA driver makes it
 * (`NV_ESC_EXPORT_TO_DMABUF_FD`) over the buffer's whole memory object (`tg_buf_size()`
 * rounded up to whole pages), and refuses memory it does not export that way with the
 * driver's status in the message.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`;
 * `TG_ERROR_NOT_SUPPORTED` (backend without dma-buf export); `TG_ERROR_OS`.
 *
 * Ownership: the caller owns `*fd_out` and closes it with `close()`.
 * Thread safety: any thread.
 *
 * # Safety
 * `fd_out` is NULL or writable.
 */
enum tg_status tg_buf_export_dmabuf(const struct tg_buf *buf, int *fd_out);

/**
 * Export the buffer for another driver (CUDA) or another process: a new file descriptor
 * that shares the buffer's memory, and the size of the memory object it carries.
 *
 * - On Jetson (nvgpu) the fd is a dma-buf, as from `tg_buf_export_dmabuf()`.
 * - On desktop GPUs (RM) the fd is an RM export fd: a `/dev/nvidiactl` file carrying the
 *   buffer's memory object, the kind of fd `cuMemExportToShareableHandle()` makes for
 *   `CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR`. `tg_buf_import_fd()` of this library, in this
 *   or another process, imports it. What CUDA accepts is in docs/api.md, "Sharing memory
 *   with CUDA and other processes".
 *
 * - `fd_out`: receives the new fd.
 * - `size_out`: receives the size of the shared memory object in bytes: the buffer's size
 *   rounded up to whole pages (4 KiB; 2 MiB for desktop buffers of 8 MiB and more). Importers
 *   that ask for the object's size (`cuImportExternalMemory()`) want this value.
 *
 * The memory stays allocated while the fd, or anything imported from it, exists, even after
 * `tg_buf_free()`.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`;
 * `TG_ERROR_NOT_SUPPORTED` (a backend without export; a buffer imported from another
 * driver's dma-buf); `TG_ERROR_INVALID_ARGUMENT` (a malformed `TEGRAGPU_RM_EXPORT_METADATA`);
 * `TG_ERROR_OS` (the driver refused: the message gives its answer).
 *
 * Ownership: the caller owns `*fd_out` and closes it with `close()` (or hands it to an
 * importer that takes ownership, as `cuImportExternalMemory()` does on success).
 * Thread safety: any thread.
 *
 * # Safety
 * `fd_out` and `size_out` are NULL or writable.
 */
enum tg_status tg_buf_export_fd(const struct tg_buf *buf, int *fd_out, uint64_t *size_out);

/**
 * Import memory that another driver or process exported as a file descriptor, as a buffer of
 * `dev`: mapped at a GPU address of `dev` (`tg_buf_gpu_address()`) and for the CPU where the
 * driver allows it (`tg_buf_cpu_ptr()`).
 *
 * - `fd`: on Jetson (nvgpu) a dma-buf (from `tg_buf_export_fd()`, `tg_buf_export_dmabuf()`,
 *   nvmap, or another driver whose dma-bufs nvgpu maps); on desktop GPUs (RM) an RM export fd
 *   (from `tg_buf_export_fd()`, or `cuMemExportToShareableHandle()` with
 *   `CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR`) of memory on this device's GPU.
 * - `size`: the bytes the buffer covers, from the start of the memory (at most its size); 0
 *   for the whole memory object. `tg_buf_size()` reports it.
 * - `flags`: 0 (no flags are defined yet).
 * - `out`: receives the new buffer handle.
 *
 * The library does not take ownership of `fd`: close it whenever you like after the call
 * (the buffer holds the memory). Desktop video memory is mapped for the CPU through BAR1 on
 * the first `tg_buf_cpu_ptr()`, as for `TG_BUF_DEVICE_LOCAL` buffers.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`;
 * `TG_ERROR_INVALID_ARGUMENT` (`fd` negative or not an fd of the expected kind, memory of
 * another GPU, `size` larger than the memory, unknown `flags`); `TG_ERROR_NOT_SUPPORTED`
 * (a backend or memory kind that cannot be imported); `TG_ERROR_OUT_OF_MEMORY`;
 * `TG_ERROR_OS`.
 *
 * Ownership: the caller owns `*out` and releases it with `tg_buf_free()`; the memory itself
 * lives until its last holder (exporter, fds, importers) lets go.
 * Thread safety: any thread.
 *
 * # Safety
 * `out` is NULL or writable.
 */
enum tg_status tg_buf_import_fd(const struct tg_device *dev,
                                int fd,
                                uint64_t size,
                                uint32_t flags,
                                struct tg_buf **out);

/**
 * Map `size` bytes of the caller's own memory at `ptr` for the GPU of `dev`, pinning it (like
 * `cuMemHostRegister`): a buffer over the whole 4 KiB pages around the range, mapped at the
 * GPU address equal to its CPU address, so that kernels use pointers into the range as they
 * are (`tg_buf_gpu_address()` and `tg_buf_cpu_ptr()` both give the first page's address).
 * The memory stays the caller's: keep it allocated until `tg_buf_free()`, which unmaps and
 * unpins it (once the GPU work recorded so far is done) without touching its contents.
 *
 * - `flags`: 0 (no flags are defined yet).
 * - `out`: receives the new buffer handle.
 *
 * Desktop GPUs (RM) only. Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`
 * (`ptr`, `out`); `TG_ERROR_INVALID_ARGUMENT` (`size` 0, a range past the end of the address
 * space, unknown `flags`); `TG_ERROR_NOT_SUPPORTED` (Jetson, where nvmap is not asked to map
 * foreign pages; a range whose addresses the GPU reserves; pages another registration
 * already maps), with the reason; `TG_ERROR_OS`.
 *
 * Ownership: the caller owns `*out` and releases it with `tg_buf_free()`.
 * Thread safety: any thread.
 *
 * # Safety
 * `ptr..ptr + size` is memory of this process that stays allocated while the buffer lives;
 * `out` is NULL or writable.
 */
enum tg_status tg_buf_register_host(const struct tg_device *dev,
                                    const void *ptr,
                                    uint64_t size,
                                    uint32_t flags,
                                    struct tg_buf **out);

/**
 * Load GPU code from memory: what `cuModuleLoadData` takes.
 *
 * - `data`, `size_bytes`: a cubin (`nvcc -cubin`, nvrtc, `nvlink`); a fatbin (`nvcc -fatbin`),
 *   or a host object or shared library that holds one (its `.nv_fatbin` section): the SASS
 *   for the device's SM is chosen (same major version, highest minor not above the device's),
 *   else the newest PTX not above it is compiled for the device; or PTX text (`nvcc -ptx`),
 *   compiled for the device. PTX is compiled with the NVIDIA driver's PTX compiler
 *   (`libnvidia-ptxjitcompiler.so.1`) or nvJitLink (`TEGRAGPU_PTXJIT` names either). The
 *   library copies what it needs, so the memory may be freed after the call.
 * - `out`: receives the new module handle.
 *
 * Kernels that need a feature libtegragpu lacks (surfaces, clusters, dynamic parallelism) do
 * not stop the module from loading: `tg_module_get_kernel()` refuses them with
 * `TG_ERROR_NOT_SUPPORTED` naming the feature. Device-side `printf` and `assert` work: the
 * first module that calls them also loads the library's implementations on the device.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`;
 * `TG_ERROR_INVALID_ARGUMENT` (`size_bytes` 0); `TG_ERROR_INVALID_CUBIN` (malformed, or no
 * code for the device's SM version); `TG_ERROR_NOT_SUPPORTED` (e.g. unlinked `-rdc` objects,
 * device-side `malloc`);
 * `TG_ERROR_LIBRARY_MISSING` (PTX to compile and no PTX compiler installed);
 * `TG_ERROR_COMPILE` (PTX rejected; the message carries the log); `TG_ERROR_OUT_OF_MEMORY`;
 * `TG_ERROR_DEVICE_FAULT`.
 *
 * Ownership: the caller owns `*out` and releases it with `tg_module_destroy()`.
 * Thread safety: any thread.
 *
 * # Safety
 * `data` is NULL or readable for `size_bytes` bytes; `out` is NULL or writable.
 */
enum tg_status tg_module_load(const struct tg_device *dev,
                              const void *data,
                              size_t size_bytes,
                              struct tg_module **out);

/**
 * Load a cubin from a file.
 *
 * The file must be a regular file of at most 1 GiB (2^30 bytes). It is opened with
 * `O_NONBLOCK`, so a FIFO cannot block the call, and checked with `fstat` before anything is
 * read: directories, FIFOs, character and block devices (e.g. `/dev/zero`) and sockets are
 * refused, as are larger files.
 *
 * Returns what `tg_module_load()` returns, and `TG_ERROR_NOT_FOUND` (no such file),
 * `TG_ERROR_INVALID_ARGUMENT` (not a regular file: the message names the path and its type; or
 * larger than 1 GiB: the message names the path and its size) or `TG_ERROR_OS` (other open or
 * read errors; the message names the path and errno).
 *
 * Ownership: the caller owns `*out` and releases it with `tg_module_destroy()`.
 * Thread safety: any thread.
 *
 * # Safety
 * `path` is NULL or a NUL-terminated string; `out` is NULL or writable.
 */
enum tg_status tg_module_load_file(const struct tg_device *dev,
                                   const char *path,
                                   struct tg_module **out);

/**
 * Compile CUDA C source at run time with libnvrtc (loaded on first use; never linked) for this
 * device's SM version, and load the result.
 *
 * - `source`: NUL-terminated CUDA C. Kernels should be `extern "C"` so their names are not
 *   mangled.
 * - `options`, `num_options`: extra nvrtc options (e.g. `"--std=c++17"`); the target
 *   architecture is added by the library. `options` may be NULL when `num_options` is 0.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER` (`source`, `out`,
 * `options` or one of its elements NULL); `TG_ERROR_LIBRARY_MISSING` (libnvrtc not installed:
 * `pip install nvidia-cuda-nvrtc-cu12`, or set `TEGRAGPU_NVRTC` to the library's path);
 * `TG_ERROR_COMPILE` (the message carries the compiler log); the statuses of
 * `tg_module_load()`.
 *
 * Ownership: the caller owns `*out` and releases it with `tg_module_destroy()`.
 * Thread safety: any thread.
 *
 * # Safety
 * `source` is NULL or NUL-terminated; `options` is NULL or points to `num_options` pointers,
 * each NULL or NUL-terminated; `out` is NULL or writable.
 */
enum tg_status tg_module_compile_cuda(const struct tg_device *dev,
                                      const char *source,
                                      const char *const *options,
                                      size_t num_options,
                                      struct tg_module **out);

/**
 * Destroy a module handle. Kernels taken from it stay valid (they keep the code loaded); GPU
 * memory is released once no kernel handle and no submitted work uses it. NULL is a no-op.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`. Thread safety: any thread; the handle must not be
 * used after this call.
 *
 * # Safety
 * None beyond the handle contract.
 */
enum tg_status tg_module_destroy(struct tg_module *module);

/**
 * Look up a kernel by name (the `extern "C"` name, or the mangled name).
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`;
 * `TG_ERROR_NOT_FOUND` (the message lists the module's kernels); `TG_ERROR_NOT_SUPPORTED`
 * (the kernel needs a feature libtegragpu lacks; the message names it and the attribute that
 * says so); `TG_ERROR_OUT_OF_MEMORY` (the kernel's local memory cannot be provided).
 *
 * Ownership: the caller owns `*out` and releases it with `tg_kernel_destroy()`; the kernel keeps
 * its module loaded. Thread safety: any thread.
 *
 * # Safety
 * `name` is NULL or NUL-terminated; `out` is NULL or writable.
 */
enum tg_status tg_module_get_kernel(const struct tg_module *module,
                                    const char *name,
                                    struct tg_kernel **out);

/**
 * Destroy a kernel handle. NULL is a no-op.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`. Thread safety: any thread; the handle must not be
 * used after this call.
 *
 * # Safety
 * None beyond the handle contract.
 */
enum tg_status tg_kernel_destroy(struct tg_kernel *kernel);

/**
 * What a kernel needs and allows.
 *
 * - `out`: caller-allocated; set `out->struct_size = sizeof(tg_kernel_attributes)` first.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`;
 * `TG_ERROR_INVALID_ARGUMENT` (`struct_size` too small). Thread safety: any thread.
 *
 * # Safety
 * `out` is NULL or points to a writable `tg_kernel_attributes`.
 */
enum tg_status tg_kernel_get_attributes(const struct tg_kernel *kernel,
                                        struct tg_kernel_attributes *out);

/**
 * Where parameter `index` (0-based, declaration order) lies in the packed parameter block that
 * `tg_launch()` takes: `*offset` bytes from the start, `*size` bytes long.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER` (`offset` or `size`
 * NULL); `TG_ERROR_INVALID_ARGUMENT` (`index` ≥ `num_params`). Thread safety: any thread.
 *
 * # Safety
 * `offset` and `size` are NULL or writable.
 */
enum tg_status tg_kernel_get_param(const struct tg_kernel *kernel,
                                   uint32_t index,
                                   uint32_t *offset,
                                   uint32_t *size);

/**
 * How many blocks of `block_threads` threads using `dynamic_shared_bytes` of dynamic shared
 * memory one SM runs at once (like `cuOccupancyMaxActiveBlocksPerMultiprocessor`): the
 * smallest of the limits set by warps, registers, shared memory and the SM's block limit.
 * Multiply by `tg_device_info.sm_count` for the largest cooperative grid.
 *
 * Returns `TG_OK` (`*out` is 0 when `dynamic_shared_bytes` is above the kernel's
 * `max_dynamic_shared_bytes`); `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`;
 * `TG_ERROR_INVALID_ARGUMENT` (`block_threads` 0 or above the kernel's
 * `max_threads_per_block`). Thread safety: any thread.
 *
 * # Safety
 * `out` is NULL or writable.
 */
enum tg_status tg_kernel_max_active_blocks(const struct tg_kernel *kernel,
                                           uint32_t block_threads,
                                           uint32_t dynamic_shared_bytes,
                                           uint32_t *out);

/**
 * Find a `__device__` or `__constant__` variable of a module by name (like
 * `cuModuleGetGlobal`). Any of the out pointers may be NULL.
 *
 * - `gpu_address`: the variable's GPU virtual address (pass it to kernels, copy to it).
 * - `cpu_ptr`: a CPU pointer to the same memory, valid while the module is loaded: write
 *   initial values before the launches that read them, read results after they finish.
 * - `size_bytes`: the variable's size.
 *
 * Names are as in the cubin: C++ variables are mangled unless declared `extern "C"`.
 * Each call makes every queue drop the GPU's constant and data caches before its next launch,
 * so call it again after changing through `cpu_ptr` a `__constant__` that launches already read.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER` (`name`);
 * `TG_ERROR_NOT_FOUND` (the message lists the module's variables). Thread safety: any thread.
 *
 * # Safety
 * `name` is NULL or NUL-terminated; each out pointer is NULL or writable.
 */
enum tg_status tg_module_get_global(const struct tg_module *module,
                                    const char *name,
                                    uint64_t *gpu_address,
                                    void **cpu_ptr,
                                    uint64_t *size_bytes);

/**
 * Set a device-wide limit (like `cuCtxSetLimit`).
 *
 * - `TG_LIMIT_STACK_SIZE`: stack bytes per GPU thread (default 1024, as in libcuda). Each
 *   launch recorded after the call gets the larger of this and the stack its kernel needs;
 *   recursion and other calls whose depth the compiler cannot bound run in it. The device
 *   reserves this much for every thread the GPU can hold (on an H100: about 300 MB per KiB),
 *   allocated by this call when the limit grows (`TG_ERROR_OUT_OF_MEMORY` if it cannot be).
 * - `TG_LIMIT_MALLOC_HEAP_SIZE`: bytes of the device heap that `malloc` in kernels allocates
 *   from (default 8 MiB, as in libcuda; 1 KiB to 64 GiB). The heap is allocated when the first
 *   module that calls `malloc` or `free` is loaded; after that only its current size is
 *   accepted. `malloc` returns NULL when the heap cannot hold a request.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_INVALID_ARGUMENT` (unknown limit,
 * value out of range, heap size after the heap was allocated). Thread safety: any thread.
 *
 * # Safety
 * None beyond the handle contract.
 */
enum tg_status tg_device_set_limit(const struct tg_device *dev, uint32_t limit, uint64_t value);

/**
 * Read a device-wide limit (see `tg_device_set_limit()`).
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`;
 * `TG_ERROR_INVALID_ARGUMENT` (unknown limit). Thread safety: any thread.
 *
 * # Safety
 * `value` is NULL or writable.
 */
enum tg_status tg_device_get_limit(const struct tg_device *dev, uint32_t limit, uint64_t *value);

/**
 * Create a command queue (a GPU channel).
 *
 * - `kind`: `TG_QUEUE_COMPUTE` (launches) or `TG_QUEUE_COPY` (copy engine).
 *
 * On the Orin (nvgpu) the queue takes one of the channels the device made when it opened
 * (`TEGRAGPU_CHANNELS`, default 4 compute and 2 copy) and gives it back when destroyed, so
 * neither preempts the device's running work; a channel beyond those is made only while the
 * device is idle. On desktop GPUs (RM) a channel is made only while the device is idle.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`;
 * `TG_ERROR_INVALID_ARGUMENT` (unknown kind); `TG_ERROR_OUT_OF_MEMORY` (also: the device
 * already has 128 channels, the most one nvgpu channel group holds); `TG_ERROR_NOT_SUPPORTED`
 * (no free channel of the kind and the device is running work: create queues while it is
 * idle); `TG_ERROR_OS`; `TG_ERROR_DEVICE_FAULT`.
 *
 * Ownership: the caller owns `*out` and releases it with `tg_queue_destroy()`.
 * Thread safety: any thread.
 *
 * # Safety
 * `out` is NULL or writable.
 */
enum tg_status tg_queue_create(const struct tg_device *dev,
                               tg_queue_kind kind,
                               struct tg_queue **out);

/**
 * Create a command queue with `depth` in-flight units instead of the default 1024: GPFIFO
 * entries (submissions) and, on compute queues, QMD slots (launches) that can be queued before
 * recording waits for the GPU. A power of two from 16 to 65536; each unit costs 8 bytes of
 * ring plus, on compute queues, 2 KiB of GPU memory.
 *
 * Returns what `tg_queue_create()` returns; `TG_ERROR_INVALID_ARGUMENT` for a bad `depth`.
 *
 * Ownership: the caller owns `*out` and releases it with `tg_queue_destroy()`.
 * Thread safety: any thread.
 *
 * # Safety
 * `out` is NULL or writable.
 */
enum tg_status tg_queue_create_with_depth(const struct tg_device *dev,
                                          tg_queue_kind kind,
                                          uint32_t depth,
                                          struct tg_queue **out);

/**
 * Create a queue that only the calling thread may use: like `tg_queue_create_with_depth()`
 * (`depth` 0 = the default), but every call on the queue (`tg_launch`, `tg_queue_submit`, ...,
 * `tg_queue_destroy`) must come from the thread that created it. In exchange a call takes no
 * lock and counts no references: the lowest CPU cost per launch the C API has (the Rust API's
 * `&mut Queue`). A call from another thread returns `TG_ERROR_INVALID_ARGUMENT` and changes
 * nothing; so does a call made from a log callback while a call on the same queue runs.
 * The queue keeps the kernels it launched recently alive until its next call after any handle
 * is destroyed, or until it is destroyed. If the creating thread exits without destroying the
 * queue, the queue stays until the process ends (a thread that later reuses the creating
 * thread's thread-local storage may use it).
 *
 * Returns what `tg_queue_create()` returns. Ownership: the caller releases `*out` with
 * `tg_queue_destroy()` from the same thread. Thread safety: see above.
 *
 * # Safety
 * `out` is NULL or writable.
 */
enum tg_status tg_queue_create_owned(const struct tg_device *dev,
                                     tg_queue_kind kind,
                                     uint32_t depth,
                                     struct tg_queue **out);

/**
 * Destroy a queue: submits what was recorded, waits (up to 10 s) for the queue's work to
 * finish, then releases the channel. NULL is a no-op.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_INVALID_ARGUMENT` (an owned queue from
 * another thread than its creator). Thread safety: any thread (an owned queue: its creating
 * thread); the handle must not be used after this call.
 *
 * # Safety
 * None beyond the handle contract.
 */
enum tg_status tg_queue_destroy(struct tg_queue *queue);

/**
 * Abandon a queue's work and destroy the queue at once: what was recorded is not submitted,
 * nothing is waited for, and the queue's hardware channel is torn down, so the GPU stops the
 * running kernel and drops the queued work. The recovery for a kernel that does not end:
 * `tg_signal_wait` / `tg_queue_synchronize` return `TG_ERROR_TIMEOUT`, then `tg_queue_abort`
 * and a new queue; the device, its other queues and its buffers stay usable. Memory the
 * abandoned work held (buffers freed meanwhile, the queue's rings) is released once the
 * channel is gone; signals the work would have written keep their values. NULL is a no-op.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_INVALID_ARGUMENT` (an owned queue from
 * another thread than its creator). Thread safety: any thread (an owned queue: its creating
 * thread); returns after calls on this queue running in other threads (e.g. a
 * `tg_queue_synchronize`) have returned; the handle must not be used after this call.
 *
 * # Safety
 * None beyond the handle contract.
 */
enum tg_status tg_queue_abort(struct tg_queue *queue);

/**
 * Record a kernel launch with a packed parameter block.
 *
 * - `cfg`: grid, block and dynamic shared memory; `cfg->struct_size = sizeof(tg_launch_config)`.
 * - `params`, `params_size_bytes`: the parameters laid out as the kernel declares them
 *   (`tg_kernel_get_param()` gives each offset and size); `params_size_bytes` must equal the
 *   kernel's `param_bytes`. `params` may be NULL when the kernel takes no parameters. The
 *   bytes are copied: the memory may be reused after the call.
 *
 * The launch runs after `tg_queue_submit()`, in order with the queue's other commands; with
 * `TG_LAUNCH_SUBMIT` in `cfg->flags` this call submits the queue itself once the launch is
 * recorded.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`;
 * `TG_ERROR_INVALID_ARGUMENT` (copy queue, kernel of another device, `struct_size`);
 * `TG_ERROR_INVALID_LAUNCH` (parameter size, zero or too large grid/block, block above the
 * kernel's `max_threads_per_block`, too much shared memory); `TG_ERROR_DEVICE_FAULT`;
 * `TG_ERROR_TIMEOUT` (no ring space within 10 s).
 *
 * Thread safety: any thread; serialized per queue.
 *
 * # Safety
 * `cfg` is NULL or readable; `params` is NULL or readable for `params_size_bytes` bytes.
 */
enum tg_status tg_launch(const struct tg_queue *queue,
                         const struct tg_kernel *kernel,
                         const struct tg_launch_config *cfg,
                         const void *params,
                         size_t params_size_bytes);

/**
 * Record a kernel launch with one pointer per parameter, like `cuLaunchKernel`'s
 * `kernelParams`: `args[i]` points to the value of parameter `i` (its size is the parameter's
 * size, see `tg_kernel_get_param()`).
 *
 * - `num_args`: must equal the kernel's `num_params`; `args` may be NULL when it is 0.
 *
 * Returns what `tg_launch()` returns; `TG_ERROR_INVALID_LAUNCH` when `num_args` differs from the
 * kernel's parameter count; `TG_ERROR_NULL_POINTER` when `args` or an element is NULL.
 *
 * Thread safety: any thread; serialized per queue.
 *
 * # Safety
 * `args` is NULL or points to `num_args` pointers, each NULL or readable for its parameter's
 * size.
 */
enum tg_status tg_launch_args(const struct tg_queue *queue,
                              const struct tg_kernel *kernel,
                              const struct tg_launch_config *cfg,
                              void **args,
                              size_t num_args);

/**
 * Record a copy of `size_bytes` from `src` at `src_offset` to `dst` at `dst_offset`. On a copy
 * queue the copy engine moves the bytes; on a compute queue the library's built-in copy kernel
 * does (the SMs: full memory bandwidth, ordered after earlier launches on the queue like any
 * kernel; this is how libcuda copies device to device). Both ranges must lie inside their
 * buffers and must not overlap; a zero size records nothing. The buffers belong to the queue's
 * device, or to a device it has peer access to (`tg_device_enable_peer_access()`): a copy
 * between two GPUs runs on this queue's engine, over NVLink or PCIe.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_INVALID_ARGUMENT` (range outside a
 * buffer, overlapping ranges, buffer of another device without peer access enabled: the
 * message names both GPUs); `TG_ERROR_NOT_SUPPORTED` (compute queue on a GPU without a
 * built-in copy kernel; buffer of a device the queue's device can have no peer access to:
 * the message names both GPUs and the reason); `TG_ERROR_DEVICE_FAULT`; `TG_ERROR_TIMEOUT`.
 *
 * Thread safety: any thread; serialized per queue.
 *
 * # Safety
 * None beyond the handle contract.
 */
enum tg_status tg_queue_copy(const struct tg_queue *queue,
                             const struct tg_buf *dst,
                             uint64_t dst_offset,
                             const struct tg_buf *src,
                             uint64_t src_offset,
                             uint64_t size_bytes);

/**
 * Record a GPU write of `value` to `signal` once all earlier work on the queue has completed
 * and its writes are visible.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_INVALID_ARGUMENT` (signal of another
 * device); `TG_ERROR_DEVICE_FAULT`; `TG_ERROR_TIMEOUT`. Thread safety: any thread; serialized
 * per queue.
 *
 * # Safety
 * None beyond the handle contract.
 */
enum tg_status tg_queue_signal(const struct tg_queue *queue,
                               const struct tg_signal *signal,
                               uint64_t value);

/**
 * Record a GPU wait: later commands on the queue start only once `signal` ≥ `value`.
 *
 * Signal values compare as unsigned 64-bit integers, on the GPU (`tg_queue_wait()`) and on the
 * CPU (`tg_signal_wait()`) alike: a wait for `v` is satisfied once the value is ≥ `v`. Nothing
 * wraps around: `UINT64_MAX` satisfies every wait, and a wait for a value above the current one
 * blocks however far above it is (e.g. a wait for 2^63 + 1 blocks at 0).
 *
 * `signal` may belong to another device that the queue's device has peer access to
 * (`tg_device_enable_peer_access(queue's device, signal's device)`): the queue then waits for
 * that device's work on the GPU, as `cuStreamWaitEvent` does with an event of another device.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_INVALID_ARGUMENT` (signal of another
 * device without peer access enabled); `TG_ERROR_NOT_SUPPORTED` (signal of a device the
 * queue's device has no peer path to, or whose signal memory the driver could not map into
 * it: the message says why); `TG_ERROR_DEVICE_FAULT`; `TG_ERROR_TIMEOUT`. Thread safety: any
 * thread; serialized per queue.
 *
 * # Safety
 * None beyond the handle contract.
 */
enum tg_status tg_queue_wait(const struct tg_queue *queue,
                             const struct tg_signal *signal,
                             uint64_t value);

/**
 * Record a GPU write of `value` to the 32-bit word (`TG_VALUE_64`: the 64-bit word) at
 * `offset` of `buf`, in order with the queue's other commands (like `cuStreamWriteValue32` /
 * `64`): once earlier work on the queue is complete and its writes are visible, unless
 * `TG_VALUE_NO_BARRIER` lets it pass them. The CPU, or another queue with
 * `tg_queue_wait_value()`, can wait for the word.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_INVALID_ARGUMENT` (unknown flags, an
 * offset not aligned to the word's width, a word outside the buffer, a buffer of another
 * device, a value wider than a 32-bit word); `TG_ERROR_DEVICE_FAULT`; `TG_ERROR_TIMEOUT`.
 * Thread safety: any thread; serialized per queue.
 *
 * # Safety
 * None beyond the handle contract.
 */
enum tg_status tg_queue_write_value(const struct tg_queue *queue,
                                    const struct tg_buf *buf,
                                    uint64_t offset,
                                    uint64_t value,
                                    uint32_t flags);

/**
 * Record a GPU wait, before later work on the queue starts, until the 32-bit word
 * (`TG_VALUE_64`: the 64-bit word) at `offset` of `buf` satisfies `cond` against `value`
 * (`TG_VALUE_EQ`, `TG_VALUE_GEQ`, `TG_VALUE_GEQ_WRAPPING`, `TG_VALUE_AND`, `TG_VALUE_NOR`;
 * like `cuStreamWaitValue32` / `64`). The GPU polls the word; the queue's later work waits,
 * other queues run. A word that never satisfies it holds the queue until
 * `tg_queue_synchronize()` times out.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_INVALID_ARGUMENT` (unknown `cond` or
 * flags, an offset not aligned to the word's width, a word outside the buffer, a buffer of
 * another device, a value wider than a 32-bit word); `TG_ERROR_DEVICE_FAULT`;
 * `TG_ERROR_TIMEOUT`. Thread safety: any thread; serialized per queue.
 *
 * # Safety
 * None beyond the handle contract.
 */
enum tg_status tg_queue_wait_value(const struct tg_queue *queue,
                                   const struct tg_buf *buf,
                                   uint64_t offset,
                                   uint64_t value,
                                   uint32_t cond,
                                   uint32_t flags);

/**
 * Record a full barrier: earlier work on the queue completes and its writes are visible to the
 * CPU and other engines before later work starts.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_DEVICE_FAULT`; `TG_ERROR_TIMEOUT`.
 * Thread safety: any thread; serialized per queue.
 *
 * # Safety
 * None beyond the handle contract.
 */
enum tg_status tg_queue_barrier(const struct tg_queue *queue);

/**
 * Make everything recorded on the queue visible to the GPU (no system call: a GPFIFO entry and
 * a doorbell write). Returns immediately; use signals or `tg_queue_synchronize()` to wait.
 * Recorded work does not start before a submit; `tg_queue_synchronize()`,
 * `tg_device_synchronize()` and a `tg_signal_wait()` for a release recorded on the queue submit
 * it themselves.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_DEVICE_FAULT`; `TG_ERROR_TIMEOUT` (the
 * ring stayed full for 10 s). Thread safety: any thread; serialized per queue.
 *
 * # Safety
 * None beyond the handle contract.
 */
enum tg_status tg_queue_submit(const struct tg_queue *queue);

/**
 * Submit what was recorded on the queue (as `tg_queue_submit()`), wait until all of the
 * queue's work has completed, then print device-side `printf` output to `stdout`: a launch
 * followed by `tg_queue_synchronize()` runs, as `cuLaunchKernel` + `cuStreamSynchronize` does.
 * `tg_queue_submit()` stays for batching: recorded work starts on the GPU at the submit, and a
 * synchronize, a device synchronize or a signal wait that needs it submits it too.
 *
 * - `timeout_ns`: deadline in nanoseconds (`TG_TIMEOUT_INFINITE` = none).
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_TIMEOUT`; `TG_ERROR_DEVICE_FAULT`.
 * Thread safety: any thread; holds the queue's lock while waiting.
 *
 * # Safety
 * None beyond the handle contract.
 */
enum tg_status tg_queue_synchronize(const struct tg_queue *queue, uint64_t timeout_ns);

/**
 * Record a fill of `count` elements of `elem_bytes` (1, 2 or 4) bytes of `dst`, starting at
 * `dst_offset` (a multiple of `elem_bytes`), with the low `elem_bytes` bytes of `value` (like
 * `cuMemsetD8Async` / `D16` / `D32`), in order with the queue's other commands. On a copy
 * queue the copy engine writes the constant; on a compute queue the first (up to 64 KiB)
 * bytes are staged from the host and the library's copy kernel doubles them over the range.
 * The range must lie inside the buffer; `count` 0 records nothing.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_INVALID_ARGUMENT` (`elem_bytes` not 1,
 * 2 or 4, `value` wider than `elem_bytes`, misaligned offset, range outside the buffer, buffer
 * of another device); `TG_ERROR_OUT_OF_MEMORY` (no staging memory); `TG_ERROR_DEVICE_FAULT`;
 * `TG_ERROR_TIMEOUT`. Thread safety: any thread; serialized per queue.
 *
 * # Safety
 * None beyond the handle contract.
 */
enum tg_status tg_queue_fill(const struct tg_queue *queue,
                             const struct tg_buf *dst,
                             uint64_t dst_offset,
                             uint32_t value,
                             uint32_t elem_bytes,
                             uint64_t count);

/**
 * Record a copy of `size_bytes` of host memory at `src` to `dst` at `dst_offset`, in order
 * with the queue's other commands (like `cuMemcpyHtoDAsync`). The bytes are copied into the
 * device's staging buffers during the call, so `src` may be reused as soon as it returns; the
 * GPU copies them into the buffer when the queue reaches the command (after
 * `tg_queue_submit()`). Transfers above 4 MiB are split into 4 MiB chunks; a queue keeps at
 * most 8 chunks in flight and waits for the oldest (submitting it if needed) before staging
 * more. The range must lie inside the buffer; `src` may be NULL when `size_bytes` is 0 (which
 * records nothing).
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER` (`src`);
 * `TG_ERROR_INVALID_ARGUMENT` (range outside the buffer, buffer of another device);
 * `TG_ERROR_OUT_OF_MEMORY` (no staging memory); `TG_ERROR_NOT_SUPPORTED` (compute queue on a
 * GPU without a built-in copy kernel); `TG_ERROR_DEVICE_FAULT`; `TG_ERROR_TIMEOUT`.
 * Thread safety: any thread; serialized per queue.
 *
 * # Safety
 * `src` is NULL or readable for `size_bytes` bytes.
 */
enum tg_status tg_queue_write(const struct tg_queue *queue,
                              const struct tg_buf *dst,
                              uint64_t dst_offset,
                              const void *src,
                              uint64_t size_bytes);

/**
 * Copy `size_bytes` of `src` at `src_offset` to host memory at `dst`, in order with the
 * queue's other commands (like `cuMemcpyDtoH`): the copy is recorded after the work already
 * recorded, the queue is submitted, and the call returns once the bytes are in `dst`, so it
 * waits for the queue's earlier work (holding the queue's lock, as `tg_queue_synchronize()`
 * does). The GPU copies through the device's staging buffers, 4 MiB at a time, and the CPU
 * copies each chunk out as it completes. The range must lie inside the buffer; `dst` may be
 * NULL when `size_bytes` is 0 (which reads nothing and does not wait). On an error `dst` holds
 * an unspecified part of the data.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER` (`dst`);
 * `TG_ERROR_INVALID_ARGUMENT` (range outside the buffer, buffer of another device);
 * `TG_ERROR_OUT_OF_MEMORY`; `TG_ERROR_NOT_SUPPORTED`; `TG_ERROR_DEVICE_FAULT`;
 * `TG_ERROR_TIMEOUT` (the queue's work did not finish within 10 s). Thread safety: any
 * thread; serialized per queue.
 *
 * # Safety
 * `dst` is NULL or writable for `size_bytes` bytes.
 */
enum tg_status tg_queue_read(const struct tg_queue *queue,
                             void *dst,
                             const struct tg_buf *src,
                             uint64_t src_offset,
                             uint64_t size_bytes);

/**
 * Create a timeline signal with value `initial`.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`;
 * `TG_ERROR_OUT_OF_MEMORY`.
 *
 * Ownership: the caller owns `*out` and releases it with `tg_signal_destroy()`.
 * Thread safety: any thread.
 *
 * # Safety
 * `out` is NULL or writable.
 */
enum tg_status tg_signal_create(const struct tg_device *dev,
                                uint64_t initial,
                                struct tg_signal **out);

/**
 * Create a signal whose value lives in a buffer: the little-endian 64-bit word at `offset` of
 * `buf`. Use it to order work with another driver or process that shares the buffer
 * (`tg_buf_export_fd()`, `tg_buf_import_fd()`): the other side writes the word to release
 * waits of this library (`tg_queue_wait()`, `tg_signal_wait()`) and waits for the word to
 * reach the values this library releases (`tg_queue_signal()`), e.g. with CUDA's
 * `cuStreamWriteValue64()` / `cuStreamWaitValue64(..., CU_STREAM_WAIT_VALUE_GEQ)`. Waits
 * compare unsigned 64-bit, "value ≥ target", on both sides.
 *
 * - `offset`: a multiple of 16, with `offset + 16` inside the buffer: a GPU release of this
 *   library writes the value at `offset` and its GPU timestamp at `offset + 8`
 *   (`tg_signal_timestamp()`), so keep other data out of those 16 bytes.
 * - The buffer's memory is not written: the signal's value is whatever the word holds
 *   (zero it before sharing, e.g. allocate with `TG_BUF_ZEROED`; or `tg_signal_set()`).
 * - The signal needs the buffer's CPU mapping (made here on first use, as
 *   `tg_buf_cpu_ptr()`); CPU reads of desktop video memory are slow, so prefer waits on the
 *   GPU, or a host-memory buffer for values the CPU polls.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`;
 * `TG_ERROR_INVALID_ARGUMENT` (`offset` not a multiple of 16, or outside the buffer);
 * `TG_ERROR_NOT_SUPPORTED` or `TG_ERROR_OS` (the buffer cannot be mapped for the CPU).
 *
 * Ownership: the caller owns `*out` and releases it with `tg_signal_destroy()`. The signal
 * keeps the buffer's memory alive (`tg_buf_free()` of the buffer is allowed meanwhile).
 * Thread safety: any thread.
 *
 * # Safety
 * `out` is NULL or writable.
 */
enum tg_status tg_signal_create_in_buffer(const struct tg_buf *buf,
                                          uint64_t offset,
                                          struct tg_signal **out);

/**
 * Destroy a signal. Its memory is reused only after work already submitted can no longer write
 * it. NULL is a no-op.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`. Thread safety: any thread; the handle must not be
 * used after this call.
 *
 * # Safety
 * None beyond the handle contract.
 */
enum tg_status tg_signal_destroy(struct tg_signal *signal);

/**
 * Read the signal's current value.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`.
 * Thread safety: any thread.
 *
 * # Safety
 * `out` is NULL or writable.
 */
enum tg_status tg_signal_value(const struct tg_signal *signal, uint64_t *out);

/**
 * Read the GPU timestamp written with the signal's last GPU release (`tg_queue_signal()`): the
 * GPU's nanosecond timer at the moment the work recorded before that release was complete.
 * 0 until the GPU first releases the signal; `tg_signal_set()` does not change it.
 *
 * Use it to time GPU work: record `tg_queue_signal(q, start, v)`, the launches, then
 * `tg_queue_signal(q, end, v)`; after `tg_signal_wait(end, v, ...)` the difference of the two
 * timestamps is the GPU time of the launches in nanoseconds (including the wait for earlier work
 * on the queue to finish before `start` was released). Timestamps of one device compare with
 * each other, not with CPU clocks. Read it after waiting for the value you care about: a later
 * release overwrites it.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`.
 * Thread safety: any thread.
 *
 * # Safety
 * `out` is NULL or writable.
 */
enum tg_status tg_signal_timestamp(const struct tg_signal *signal, uint64_t *out);

/**
 * Set the signal's value from the CPU: releases every GPU (`tg_queue_wait()`) and CPU
 * (`tg_signal_wait()`) wait for a value ≤ `value`. Setting a lower value than before does not
 * undo waits that already passed.
 *
 * Signal values compare as unsigned 64-bit integers, on the GPU (`tg_queue_wait()`) and on the
 * CPU (`tg_signal_wait()`) alike: a wait for `v` is satisfied once the value is ≥ `v`. Nothing
 * wraps around: `UINT64_MAX` satisfies every wait, and a wait for a value above the current one
 * blocks however far above it is (e.g. a wait for 2^63 + 1 blocks at 0).
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`. Thread safety: any thread.
 *
 * # Safety
 * None beyond the handle contract.
 */
enum tg_status tg_signal_set(const struct tg_signal *signal, uint64_t value);

/**
 * Wait on the CPU until the signal's value is ≥ `value`.
 *
 * Signal values compare as unsigned 64-bit integers, on the GPU (`tg_queue_wait()`) and on the
 * CPU (`tg_signal_wait()`) alike: a wait for `v` is satisfied once the value is ≥ `v`. Nothing
 * wraps around: `UINT64_MAX` satisfies every wait, and a wait for a value above the current one
 * blocks however far above it is (e.g. a wait for 2^63 + 1 blocks at 0).
 *
 * - `timeout_ns`: deadline in nanoseconds (`TG_TIMEOUT_INFINITE` = none); 0 = just test.
 *
 * Unsubmitted work: when the value is not reached yet and the last release recorded for the
 * signal (`tg_queue_signal()`, or a `tg_queue_replay()` of a command buffer with
 * `tg_cmdbuf_signal()`) is of a value ≥ `value` but its queue has not submitted it, the wait
 * first submits that queue (as `tg_queue_submit()` would; an owned queue only when the caller
 * is its owner thread, a shared queue once its lock is free within 200 ms). So
 * `tg_queue_signal(q, s, 1)` followed by `tg_signal_wait(s, 1, ...)` completes.
 *
 * A wait that returns `TG_OK` prints device-side `printf` output written so far to `stdout`.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_TIMEOUT` (the message gives the value
 * reached and where the release stands: none recorded, recorded but not submitted on a named
 * queue, or submitted on a named queue that has not completed it); `TG_ERROR_DEVICE_FAULT` (the device faulted while waiting; a failed device-side
 * `assert` puts libcuda's assertion line in the message).
 * Thread safety: any thread; several threads may wait on one signal.
 *
 * # Safety
 * None beyond the handle contract.
 */
enum tg_status tg_signal_wait(const struct tg_signal *signal,
                              uint64_t value,
                              uint64_t timeout_ns);

/**
 * Create an empty command buffer on `dev`: record launches, copies, signals, waits and barriers
 * into it once (`tg_cmdbuf_launch()` ... `tg_cmdbuf_finish()`), then replay it on compute queues
 * any number of times with `tg_queue_replay()` + `tg_queue_submit()` (one doorbell), changing
 * kernel parameters and signal values between replays with `tg_cmdbuf_set_params()` and
 * `tg_cmdbuf_set_value()`. Like a CUDA graph (`cuGraphInstantiate` / `cuGraphLaunch`).
 *
 * Each recording call returns the new command's node index (0, 1, 2, ... in recording order)
 * through its optional `node_out`; updates name the node by that index.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`; `TG_ERROR_DEVICE_FAULT`.
 * Ownership: the caller releases `*out` with `tg_cmdbuf_destroy()`. Thread safety: any thread;
 * calls on one command buffer are serialized.
 *
 * # Safety
 * `out` is NULL or writable.
 */
enum tg_status tg_cmdbuf_create(const struct tg_device *dev, struct tg_cmdbuf **out);

/**
 * Create an empty command buffer that only the calling thread may use: like
 * `tg_cmdbuf_create()`, but every call on it (recording, `tg_cmdbuf_finish`, updates,
 * `tg_queue_replay` with it, `tg_cmdbuf_destroy`) must come from the thread that created it.
 * In exchange a call takes no lock and no reference count, which on x86 each cost an atomic
 * read-modify-write that waits for the previous submit's doorbell store to leave the CPU:
 * replays and updates cost what they cost through the Rust API (`docs/performance.md`). A
 * call from another thread returns `TG_ERROR_INVALID_ARGUMENT` and changes nothing. It may be
 * replayed on any compute queue of the device the owner thread may use (shared queues, and
 * queues it owns). If the creating thread exits without destroying it, the command buffer
 * stays until the process ends.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`; `TG_ERROR_DEVICE_FAULT`.
 * Ownership: the caller releases `*out` with `tg_cmdbuf_destroy()` from the same thread.
 * Thread safety: see above.
 *
 * # Safety
 * `out` is NULL or writable.
 */
enum tg_status tg_cmdbuf_create_owned(const struct tg_device *dev, struct tg_cmdbuf **out);

/**
 * Destroy a command buffer. Replays already recorded on queues still run: its memory, and the
 * kernels, buffers and signals it holds, are released once they have completed. NULL is a
 * no-op.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_INVALID_ARGUMENT` (an owned command
 * buffer from another thread than its creator). Thread safety: any thread (an owned command
 * buffer: its creating thread); the handle must not be used after this call.
 *
 * # Safety
 * None beyond the handle contract.
 */
enum tg_status tg_cmdbuf_destroy(struct tg_cmdbuf *cmdbuf);

/**
 * Record a kernel launch with its packed parameter block (as `tg_launch()`). The launch checks
 * of `tg_launch()` apply now (for a cooperative launch: all its blocks resident at once).
 * Launches in a command buffer run one after another, like launches on a queue. A cooperative
 * launch is sent after a wait for idle, as on a queue, and is not chained to the launches
 * before and after it; each has a grid barrier of its own. Thread-block cluster launches
 * (sm_90) are chained like other launches.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_INVALID_ARGUMENT` (finished command
 * buffer, kernel of another device); `TG_ERROR_INVALID_LAUNCH`; `TG_ERROR_NULL_POINTER`;
 * `TG_ERROR_NOT_SUPPORTED`. Thread safety: any thread.
 *
 * # Safety
 * `cfg` is NULL or readable; `params` is NULL or readable for `params_size_bytes` bytes;
 * `node_out` is NULL or writable.
 */
enum tg_status tg_cmdbuf_launch(const struct tg_cmdbuf *cmdbuf,
                                const struct tg_kernel *kernel,
                                const struct tg_launch_config *cfg,
                                const void *params,
                                size_t params_size_bytes,
                                uint32_t *node_out);

/**
 * Record a copy of `size_bytes` from `src` at `src_offset` to `dst` at `dst_offset`, done by
 * the SMs as on a compute queue. The command buffer holds both buffers until it is destroyed
 * and its replays have completed. The buffers belong to the command buffer's device, or to a
 * device it has peer access to (`tg_device_enable_peer_access()`): the copy then runs on this
 * device's SMs over NVLink or PCIe, like `tg_queue_copy()` on a compute queue.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_INVALID_ARGUMENT` (range outside a
 * buffer, overlap, size 0, finished command buffer, buffer of another device without peer
 * access enabled: the message names both GPUs); `TG_ERROR_NOT_SUPPORTED` (buffer of a device
 * this device can have no peer access to: the message names both GPUs and the reason).
 * Thread safety: any thread.
 *
 * # Safety
 * `node_out` is NULL or writable.
 */
enum tg_status tg_cmdbuf_copy(const struct tg_cmdbuf *cmdbuf,
                              const struct tg_buf *dst,
                              uint64_t dst_offset,
                              const struct tg_buf *src,
                              uint64_t src_offset,
                              uint64_t size_bytes,
                              uint32_t *node_out);

/**
 * Record a GPU write of `value` (with a timestamp) to `signal` once the earlier commands have
 * completed. `tg_cmdbuf_set_value()` changes the value for later replays.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_INVALID_ARGUMENT`.
 * Thread safety: any thread.
 *
 * # Safety
 * `node_out` is NULL or writable.
 */
enum tg_status tg_cmdbuf_signal(const struct tg_cmdbuf *cmdbuf,
                                const struct tg_signal *signal,
                                uint64_t value,
                                uint32_t *node_out);

/**
 * Record a GPU wait until `signal` ≥ `value` (unsigned 64-bit) before later commands start.
 * `tg_cmdbuf_set_value()` changes the value for later replays. The signal belongs to the
 * command buffer's device, or to a device it has peer access to (`tg_device_enable_peer_access()`),
 * as for `tg_queue_wait()`.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_INVALID_ARGUMENT` (signal of another
 * device without peer access enabled: the message names both GPUs); `TG_ERROR_NOT_SUPPORTED`
 * (signal of a device this device can have no peer access to, or whose signal memory could
 * not be mapped here: the message says why).
 * Thread safety: any thread.
 *
 * # Safety
 * `node_out` is NULL or writable.
 */
enum tg_status tg_cmdbuf_wait(const struct tg_cmdbuf *cmdbuf,
                              const struct tg_signal *signal,
                              uint64_t value,
                              uint32_t *node_out);

/**
 * Record a full barrier: earlier commands complete and their writes are visible before later
 * ones start.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_INVALID_ARGUMENT` (finished).
 * Thread safety: any thread.
 *
 * # Safety
 * `node_out` is NULL or writable.
 */
enum tg_status tg_cmdbuf_barrier(const struct tg_cmdbuf *cmdbuf, uint32_t *node_out);

/**
 * End recording: the commands are written once into the command buffer's GPU memory. Replays
 * and updates need it; recording afterwards is refused.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_INVALID_ARGUMENT` (nothing recorded,
 * already finished); `TG_ERROR_OUT_OF_MEMORY`. Thread safety: any thread.
 *
 * # Safety
 * None beyond the handle contract.
 */
enum tg_status tg_cmdbuf_finish(const struct tg_cmdbuf *cmdbuf);

/**
 * Replace the parameters of launch node `node` for later replays: `kernel` must be the kernel
 * the node launches and `params` its whole packed parameter block. Waits until the replays
 * recorded so far have completed (they run with the values they were recorded with); submit
 * them first (`tg_queue_submit()`), or this waits for the timeout (10 s) and returns
 * `TG_ERROR_TIMEOUT`.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_INVALID_ARGUMENT` (not finished, no such
 * node, not a launch, another kernel); `TG_ERROR_INVALID_LAUNCH` (wrong size);
 * `TG_ERROR_NULL_POINTER`; `TG_ERROR_TIMEOUT`; `TG_ERROR_DEVICE_FAULT`. Thread safety: any thread.
 *
 * # Safety
 * `params` is NULL or readable for `params_size_bytes` bytes.
 */
enum tg_status tg_cmdbuf_set_params(const struct tg_cmdbuf *cmdbuf,
                                    uint32_t node,
                                    const struct tg_kernel *kernel,
                                    const void *params,
                                    size_t params_size_bytes);

/**
 * Replace the launch configuration of launch node `node` for later replays: grid, block and
 * dynamic shared memory (as `cuGraphExecKernelNodeSetParams` changes a kernel node's
 * dimensions). `kernel` must be the kernel the node launches; `cfg` is checked like
 * `tg_cmdbuf_launch()`'s, and its `TG_LAUNCH_CONCURRENT` bit must be the one the node was
 * recorded with, as must its `TG_LAUNCH_COOPERATIVE` bit. A cluster launch may take another
 * cluster shape but stays a cluster launch, and a plain launch stays plain. Waits like
 * `tg_cmdbuf_set_params()`; rewrites only that node.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`;
 * `TG_ERROR_INVALID_ARGUMENT` (not finished, no such node, not a launch, another kernel, the
 * concurrent or cooperative bit changed, a change between cluster and plain launch,
 * `TG_LAUNCH_SUBMIT`, `struct_size`); `TG_ERROR_INVALID_LAUNCH` (the dimensions, cluster shape
 * or shared memory do not fit the kernel, a cooperative grid that cannot be resident at once);
 * `TG_ERROR_TIMEOUT`; `TG_ERROR_DEVICE_FAULT`. Thread safety: any thread.
 *
 * # Safety
 * `cfg` is NULL or readable.
 */
enum tg_status tg_cmdbuf_set_launch(const struct tg_cmdbuf *cmdbuf,
                                    uint32_t node,
                                    const struct tg_kernel *kernel,
                                    const struct tg_launch_config *cfg);

/**
 * Replace the value of signal or wait node `node` for later replays. Waits like
 * `tg_cmdbuf_set_params()`.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_INVALID_ARGUMENT` (not finished, no such
 * node, not a signal or wait); `TG_ERROR_TIMEOUT`; `TG_ERROR_DEVICE_FAULT`.
 * Thread safety: any thread.
 *
 * # Safety
 * None beyond the handle contract.
 */
enum tg_status tg_cmdbuf_set_value(const struct tg_cmdbuf *cmdbuf, uint32_t node, uint64_t value);

/**
 * Record a replay of the finished command buffer `cmdbuf` on the compute queue `queue`, after
 * the work recorded on it so far; `tg_queue_submit()` makes it visible (one GPFIFO entry and one
 * doorbell for the whole command buffer). A command buffer may be replayed many times, on one
 * queue or several, with or without submits in between; one with cooperative launches on one
 * queue at a time (their grid barriers serve one replay). No system call; no allocation after
 * the first replay of a command buffer on a queue.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_INVALID_ARGUMENT` (not finished, copy
 * queue, another device, cooperative launches with a replay on another queue not yet
 * completed); `TG_ERROR_DEVICE_FAULT`; `TG_ERROR_TIMEOUT` (ring full and the GPU makes no
 * progress). Thread safety: any thread; serialized per queue.
 *
 * # Safety
 * None beyond the handle contract.
 */
enum tg_status tg_queue_replay(const struct tg_queue *queue, const struct tg_cmdbuf *cmdbuf);

/**
 * `tg_queue_replay()` followed by `tg_queue_submit()` on the same queue, in one call (as
 * `TG_LAUNCH_SUBMIT` does for a launch): the replay, and everything recorded on the queue
 * before it, becomes visible to the GPU with one doorbell. One handle lookup instead of two;
 * on a shared queue one lock instead of two.
 *
 * Returns what `tg_queue_replay()` returns, and `TG_ERROR_TIMEOUT` as `tg_queue_submit()` does
 * (the ring stayed full for 10 s). When the replay is refused nothing is recorded or
 * submitted. Thread safety: any thread; serialized per queue.
 *
 * # Safety
 * None beyond the handle contract.
 */
enum tg_status tg_queue_replay_submit(const struct tg_queue *queue, const struct tg_cmdbuf *cmdbuf);

/**
 * Create a texture object over buffer memory.
 *
 * - `buf`: the memory the texture reads; it stays allocated while the texture exists, even if
 *   `tg_buf_free()` is called first. GPU writes to it become visible to texture fetches of
 *   later launches.
 * - `desc`: layout, format and sampling (`tg_texture_desc`).
 * - `out`: receives the texture handle; `tg_texture_handle()` gives the value to pass as the
 *   kernel's `cudaTextureObject_t` parameter.
 *
 * A device holds up to 4095 texture objects at once; a destroyed one's slot is reused once the
 * work submitted before its destroy has completed.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`;
 * `TG_ERROR_INVALID_ARGUMENT` (`struct_size`, unknown kind, format, flags or address mode,
 * channels not 1/2/4, a range outside the buffer, misaligned offset or pitch, sizes beyond the
 * limits, linear filtering or normalized reads of formats that do not allow them);
 * `TG_ERROR_OUT_OF_MEMORY` (4095 textures alive); `TG_ERROR_DEVICE_FAULT`.
 *
 * Ownership: the caller owns `*out` and releases it with `tg_texture_destroy()`.
 * Thread safety: any thread.
 *
 * # Safety
 * `desc` is NULL or points to a `tg_texture_desc`; `out` is NULL or writable.
 */
enum tg_status tg_texture_create(const struct tg_buf *buf,
                                 const struct tg_texture_desc *desc,
                                 struct tg_texture **out);

/**
 * The value a kernel receives as its `cudaTextureObject_t` (`unsigned long long`) parameter:
 * put it in the parameter block passed to `tg_launch()`. Handles are small integers (1, 2, ...),
 * as libcuda's are, and valid on every queue of the device.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`.
 * Thread safety: any thread.
 *
 * # Safety
 * `out` is NULL or writable.
 */
enum tg_status tg_texture_handle(const struct tg_texture *tex, uint64_t *out);

/**
 * Destroy a texture object. Launches submitted before this call may still read it; its slot
 * is reused, and the buffer freed if `tg_buf_free()` was called, once they have completed. Do
 * not launch kernels with the old value afterwards: the slot may by then describe another
 * texture or nothing. NULL is a no-op.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`. Thread safety: any thread; the handle must not be
 * used after this call.
 *
 * # Safety
 * None beyond the handle contract.
 */
enum tg_status tg_texture_destroy(struct tg_texture *tex);

/**
 * Route the library's log messages to `cb` instead of stderr, like `wgpuSetLogCallback`.
 *
 * - `cb`: called once per message (see `tg_log_fn`); NULL restores the default, one line per
 *   message on stderr: `tegragpu[LEVEL] target: message`.
 * - `user`: passed to every call of `cb` unchanged; may be NULL.
 *
 * Which messages are produced is set by `tg_set_log_level()` or, until that is called, the
 * environment variable `TEGRAGPU_LOG` (`error`, `warn`, `info`, `debug`, `trace`, `off`;
 * default `warn`), read at the first device open or the first call of this function.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_ARGUMENT` (called from inside the callback).
 * Thread safety: any thread. Replacing or removing a callback waits until calls of the old
 * one running on other threads have returned: after this function returns, the old callback
 * is never called again and its `user` may be freed.
 *
 * # Safety
 * `cb`, if not NULL, is a function with the `tg_log_fn` signature, callable from any thread
 * until it is replaced.
 */
enum tg_status tg_set_log_callback(tg_log_fn cb, void *user);

/**
 * Set the log level, overriding the environment variable `TEGRAGPU_LOG`: messages of `level`
 * and of the levels above it are produced; `TG_LOG_OFF` silences the library. Takes effect
 * at once, on every thread.
 *
 * Cost: a message whose level is off is skipped with one atomic load and a compare, before
 * anything is formatted; `TG_LOG_TRACE` formats a line for every ioctl (device open, buffer
 * allocation, channel creation, fault polling during waits). Launches and submits log nothing
 * at any level.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_ARGUMENT` (not a `tg_log_level`). Thread safety: any
 * thread.
 */
enum tg_status tg_set_log_level(tg_log_level level);

/**
 * Whether `dev` can read and write the memory of `peer` once peer access is enabled
 * (`tg_device_enable_peer_access()`): two GPUs of the desktop driver joined by NVLink or by a
 * PCIe path the driver allows peer transfers over.
 *
 * - `out_can_access`: receives the answer.
 * - `reason`: NULL, or a buffer of `reason_size` bytes that receives a NUL-terminated
 *   explanation (truncated to fit): why not, naming both GPUs and what the driver reported;
 *   or, when it can, the link (`"peer access over NVLink (atomics supported)"`).
 *
 * A device is not its own peer (`false`). On Jetson Orin (nvgpu, one GPU) and the emulated
 * Orin the answer is always `false`.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER` (`out_can_access` NULL);
 * `TG_ERROR_OS` (the driver refused the query). Thread safety: any thread.
 *
 * # Safety
 * `out_can_access` is NULL or writable; `reason` is NULL or writable for `reason_size` bytes.
 */
enum tg_status tg_device_can_access_peer(const struct tg_device *dev,
                                         const struct tg_device *peer,
                                         bool *out_can_access,
                                         char *reason,
                                         size_t reason_size);

/**
 * Let `dev`'s queues and kernels read and write `peer`'s memory: every buffer of `peer`, those
 * allocated later included, is mapped into `dev`'s GPU at its own address
 * (`tg_buf_gpu_address()`). Afterwards `tg_queue_copy()` on a queue of `dev` accepts buffers of
 * `peer` (the copy runs on `dev`'s engine), and kernels on `dev` may take `peer`'s buffer
 * addresses. Access is one-way: enable `peer` → `dev` too for copies on `peer`'s queues.
 * Enabling an enabled pair does nothing; access lasts as long as both devices.
 *
 * A buffer of `peer` that is freed while queued work of `dev` may still use it is released
 * once that work is done, as for the device's own queues.
 *
 * Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_INVALID_ARGUMENT` (`dev` and `peer`
 * are the same device); `TG_ERROR_NOT_SUPPORTED` (no peer path between the two GPUs, or a
 * backend without peer access such as nvgpu: the message names both GPUs and the reason, as
 * `tg_device_can_access_peer()` gives it); `TG_ERROR_OS` (a driver call failed: the message
 * names it and the driver's status); `TG_ERROR_DEVICE_FAULT`. Thread safety: any thread.
 *
 * # Safety
 * None beyond the handle contract.
 */
enum tg_status tg_device_enable_peer_access(const struct tg_device *dev,
                                            const struct tg_device *peer);

#ifdef __cplusplus
}  // extern "C"
#endif  // __cplusplus

#endif  /* TEGRAGPU_H */
