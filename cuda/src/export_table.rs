//! `cuGetExportTable`: the CUDA runtime's private interface to the driver. The CUDA runtime
//! (`libcudart`, linked statically into cuBLAS, cuRAND and most CUDA programs) asks for tables
//! of functions by UUID when it starts, loads its kernels through them and checks the driver
//! with a keyed hash. What is answered here, by table (slot 0 of most tables holds the table's
//! size in bytes; the slots this library does not know answer `CUDA_ERROR_NOT_SUPPORTED`, logged
//! once, in the runtime and tools tables, and are null in the others):
//!
//! - the runtime interface (`6bd5fb6c-5bf4-e74a-8987-d93912fd9df9`, 13 slots): module loading
//!   from a `__fatBinC_Wrapper_t` or a fatbin (slots 1, 6, 8), a device's primary context
//!   without retaining it (slot 2), nothing (slot 7), loading the compilers (slot 12: they are
//!   loaded when needed);
//! - the tools' thread-local storage (`42d85a81-23f6-cb47-8298-f6e78a3aecdc`, 3 slots, as
//!   NVIDIA's libcuda 580 has it): the calling thread's current context, set (slot 1) and read
//!   (slot 2) as `cuCtxSetCurrent` and `cuCtxGetCurrent` do (NVIDIA's slots read and replace the
//!   top of the thread's context stack);
//! - the tools' runtime callback hooks (`a094798c-2e74-2e74-93f2-0800200c0a66`, 7 slots): two
//!   zeroed buffers of 1,024 and 14 words (slots 2 and 6) that no tool fills;
//! - context-local storage (`c693336e-1121-df11-a8c3-68f355d89593`, no size slot): put, delete
//!   and get of a value by (context, key);
//! - the integrity check (`d4082055-bde6-704b-8d34-ba123c66e1f2`, slot 1): HMAC-MD2 over the
//!   reported driver version, the caller's version and time, the process, the thread, the
//!   addresses of this table, of the runtime interface and of the check itself, and each
//!   device's UUID and PCI domain, bus and device numbers;
//! - context checks (`263e8860-7cd2-6143-92f6-bbd5006dfa7e`): slot 2 reports 0, slot 3 returns
//!   0;
//! - context internals (`21318c60-9714-3248-8ca6-41ff7324c8f2`, 93 slots, as NVIDIA's libcuda
//!   580 has them), which cuBLAS and cuBLASLt key their per-context and per-stream state with: a
//!   context's id (slot 4, `cuCtxGetId`), a stream's own handle for a public one (slot 51) and
//!   its id (slot 39, `cuStreamGetId`); the other slots answer `CUDA_ERROR_NOT_SUPPORTED`
//!   (logged once per slot);
//! - a table cuBLASLt asks for before it picks half-precision kernels
//!   (`1734dc26-800d-4745-8726-c0f1e7dd8bca`, 17 slots): every slot answers
//!   `CUDA_ERROR_NOT_SUPPORTED`, and cuBLASLt goes on without the data;
//! - module internals (`6e163fbe-b958-444d-835c-e182aff1991e`, 99 slots), which cuFFT finds
//!   the kernels of its modules with: slot 7 visits a module's kernels; the other slots answer
//!   `CUDA_ERROR_NOT_SUPPORTED` (logged once per slot);
//! - context creation bypass, heap access and extended device queries
//!   (`0ca50b8c-1004-929a-89a7-d0df10e77286`, `195bcbf4-d67d-024a-acc5-1d29cea631ae`,
//!   `b10541e1-f7c7-c74a-9f64-f223be99f1e2`): present, each function answering
//!   `CUDA_ERROR_NOT_SUPPORTED` (logged once).
//!
//! The CUDA 13 runtime (statically linked into an `nvcc` program, and PyTorch's), cuBLAS,
//! cuBLASLt 13 and cuFFT 12 accept these answers on an H200. Any other UUID is
//! `CUDA_ERROR_INVALID_VALUE`.

use crate::error::{guard, invalid, Fail, R};
use crate::types::*;
use hmac::{Hmac, Mac};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::ffi::c_void;
use std::ptr::null;
use std::sync::atomic::AtomicBool;

/// A table of function addresses as the runtime reads it.
#[repr(transparent)]
struct Table<const N: usize>([*const c_void; N]);

// SAFETY: the tables are immutable after initialisation and hold only function addresses and
// sizes.
unsafe impl<const N: usize> Sync for Table<N> {}

impl<const N: usize> Table<N> {
    /// A table of `N` slots: slot 0 its size in bytes, `fns` at their slots, `other` in the
    /// rest.
    const fn sized(fns: &[(usize, *const c_void)], other: *const c_void) -> Table<N> {
        let mut t = Table::bare(fns, other);
        t.0[0] = (N * std::mem::size_of::<usize>()) as *const c_void;
        t
    }
    /// A table of `N` slots with `fns` at their slots, `other` in the rest, and no size.
    const fn bare(fns: &[(usize, *const c_void)], other: *const c_void) -> Table<N> {
        Table::over([other; N], fns)
    }
    /// The slots `base` with `fns` at their slots, and slot 0 the table's size in bytes.
    const fn sized_over(base: [*const c_void; N], fns: &[(usize, *const c_void)]) -> Table<N> {
        let mut t = Table::over(base, fns);
        t.0[0] = (N * std::mem::size_of::<usize>()) as *const c_void;
        t
    }
    const fn over(base: [*const c_void; N], fns: &[(usize, *const c_void)]) -> Table<N> {
        let mut t = base;
        let mut i = 0;
        while i < fns.len() {
            t[fns[i].0] = fns[i].1;
            i += 1;
        }
        Table(t)
    }
    fn start(&'static self) -> *const c_void {
        self.0.as_ptr().cast()
    }
}

type Uuid = [u8; 16];

const RUNTIME: Uuid = uuid(0x6bd5fb6c_5bf4_e74a_8987_d93912fd9df9);
const TOOLS_TLS: Uuid = uuid(0x42d85a81_23f6_cb47_8298_f6e78a3aecdc);
const TOOLS_HOOKS: Uuid = uuid(0xa094798c_2e74_2e74_93f2_0800200c0a66);
const CONTEXT_STORAGE: Uuid = uuid(0xc693336e_1121_df11_a8c3_68f355d89593);
const CTX_CREATE_BYPASS: Uuid = uuid(0x0ca50b8c_1004_929a_89a7_d0df10e77286);
const HEAP_ACCESS: Uuid = uuid(0x195bcbf4_d67d_024a_acc5_1d29cea631ae);
const DEVICE_EXTENDED: Uuid = uuid(0xb10541e1_f7c7_c74a_9f64_f223be99f1e2);
const INTEGRITY: Uuid = uuid(0xd4082055_bde6_704b_8d34_ba123c66e1f2);
const CONTEXT_CHECKS: Uuid = uuid(0x263e8860_7cd2_6143_92f6_bbd5006dfa7e);
const CONTEXT_INTERNALS: Uuid = uuid(0x21318c60_9714_3248_8ca6_41ff7324c8f2);
const HEURISTICS_DATA: Uuid = uuid(0x1734dc26_800d_4745_8726_c0f1e7dd8bca);
const MODULE_INTERNALS: Uuid = uuid(0x6e163fbe_b958_444d_835c_e182aff1991e);

/// The bytes of a UUID written as one 128-bit number, first byte first.
const fn uuid(v: u128) -> Uuid {
    v.to_be_bytes()
}

macro_rules! f {
    ($e:expr) => {
        $e as *const c_void
    };
}

static RUNTIME_TABLE: Table<13> = Table::sized(
    &[
        (
            1,
            f!(module_from_wrapper as unsafe extern "C" fn(_, _) -> _),
        ),
        (2, f!(primary_context as unsafe extern "C" fn(_, _) -> _)),
        (
            6,
            f!(module_from_wrapper_ext as unsafe extern "C" fn(_, _, _, _, _) -> _),
        ),
        (7, f!(nothing as unsafe extern "C" fn(_))),
        (
            8,
            f!(module_from_fatbin_ext as unsafe extern "C" fn(_, _, _, _, _) -> _),
        ),
        (12, f!(load_compilers as unsafe extern "C" fn() -> _)),
    ],
    f!(unknown_runtime_slot as unsafe extern "C" fn() -> _),
);
static TOOLS_TLS_TABLE: Table<3> = Table::sized(
    &[
        (1, f!(tools_set_current as unsafe extern "C" fn(_) -> _)),
        (2, f!(tools_get_current as unsafe extern "C" fn(_) -> _)),
    ],
    null(),
);
static TOOLS_HOOKS_TABLE: Table<7> = Table::sized(
    &[
        (2, f!(hooks_buffer_1 as unsafe extern "C" fn(_, _))),
        (6, f!(hooks_buffer_2 as unsafe extern "C" fn(_, _))),
    ],
    f!(unknown_tools_slot as unsafe extern "C" fn() -> _),
);
static CONTEXT_STORAGE_TABLE: Table<4> = Table::bare(
    &[
        (0, f!(storage_put as unsafe extern "C" fn(_, _, _, _) -> _)),
        (1, f!(storage_delete as unsafe extern "C" fn(_, _) -> _)),
        (2, f!(storage_get as unsafe extern "C" fn(_, _, _) -> _)),
    ],
    f!(unknown_runtime_slot as unsafe extern "C" fn() -> _),
);
static CTX_CREATE_BYPASS_TABLE: Table<2> = Table::sized(
    &[(1, f!(refused_ctx_create as unsafe extern "C" fn() -> _))],
    null(),
);
static HEAP_ACCESS_TABLE: Table<3> = Table::sized(
    &[
        (1, f!(refused_heap as unsafe extern "C" fn() -> _)),
        (2, f!(refused_heap as unsafe extern "C" fn() -> _)),
    ],
    null(),
);
static DEVICE_EXTENDED_TABLE: Table<26> =
    Table::sized(&[], f!(refused_device_query as unsafe extern "C" fn() -> _));
static INTEGRITY_TABLE: Table<3> = Table::sized(
    &[(1, f!(integrity_check as unsafe extern "C" fn(_, _, _) -> _))],
    null(),
);
static CONTEXT_CHECKS_TABLE: Table<4> = Table::sized(
    &[
        (2, f!(context_check as unsafe extern "C" fn(_, _, _) -> _)),
        (3, f!(context_check_3 as unsafe extern "C" fn() -> _)),
    ],
    null(),
);

/// Slot `$n` of refused table `$t`, for each `$n`.
macro_rules! refused_slots {
    ($t:literal; $($n:literal)*) => {
        [$(f!(refused_slot::<$t, $n> as unsafe extern "C" fn() -> _)),*]
    };
}
/// The context internals (93 slots, as NVIDIA's libcuda 580 has them): a context's id (slot
/// 4), a stream's own handle for a public one (slot 51) and its id (slot 39). cuBLASLt keys its
/// per-context and per-stream state with them.
static CONTEXT_INTERNALS_TABLE: Table<93> = Table::sized_over(
    refused_slots!(0; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92),
    &[
        (4, f!(context_id as unsafe extern "C" fn(_, _) -> _)),
        (
            39,
            f!(stream_identity as unsafe extern "C" fn(_, _, _) -> _),
        ),
        (
            51,
            f!(stream_handle as unsafe extern "C" fn(_, _, _, _) -> _),
        ),
    ],
);
/// A table cuBLASLt 13 asks for before it picks half-precision kernels (17 slots, as NVIDIA's
/// libcuda 580 has them): every slot answers `CUDA_ERROR_NOT_SUPPORTED`. cuBLASLt calls slot 4
/// and goes on without its data when it fails (NVIDIA's slot 4 itself answers
/// `CUDA_ERROR_NOT_SUPPORTED` where the device has no function to read the data); without the
/// table it calls through a null pointer.
static HEURISTICS_DATA_TABLE: Table<17> = Table::sized_over(
    refused_slots!(1; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16),
    &[],
);

/// A table cuFFT asks for (99 slots, as NVIDIA's libcuda 580 has them): slot 7 visits the
/// kernels of a module ([`module_kernels`]); every other slot answers
/// `CUDA_ERROR_NOT_SUPPORTED`. cuFFT finds the kernels of the modules it loads through slot 7
/// and fails every plan without them (`CUFFT_INTERNAL_ERROR`).
static MODULE_INTERNALS_TABLE: Table<99> = Table::sized_over(
    refused_slots!(2; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95 96 97 98),
    &[(
        7,
        f!(module_kernels as unsafe extern "C" fn(_, _, _, _) -> _),
    )],
);

/// What slot 7 of the module internals calls for each kernel: (`user`, the kernel's
/// `CUfunction`, its NUL-terminated name).
type KernelVisitor = unsafe extern "C" fn(*mut c_void, *mut c_void, *const std::ffi::c_char);

/// Slot 7 of the module internals: `visit(user, function, name)` for each kernel of module
/// `m` (a NULL `visit` only counts them); the number of kernels, or -1 where `m` is not a module
/// of this library. The first argument is not used (NVIDIA's slot 7 does not read it). As read
/// from NVIDIA's slot 7, which walks the module's functions, calls the visitor for the kernels
/// and returns their count; cuFFT passes a module it loaded and a visitor that records the
/// kernels.
unsafe extern "C" fn module_kernels(
    _unused: *mut c_void,
    m: *mut c_void,
    visit: Option<KernelVisitor>,
    user: *mut c_void,
) -> i32 {
    let r = (|| -> R<i32> {
        let md = crate::module::mod_ref(m)?;
        let names = md.module.kernel_names();
        for n in &names {
            let f = md.function(n)? as *const crate::module::Func as *mut c_void;
            if let Some(visit) = visit {
                let mut name: *const std::ffi::c_char = std::ptr::null();
                crate::module::cuFuncGetName(&mut name, f);
                visit(user, f, name);
            }
        }
        Ok(i32::try_from(names.len()).unwrap_or(i32::MAX))
    })();
    match r {
        Ok(n) => n,
        Err(Fail(code, msg)) => {
            crate::error::log(
                tegragpu::log::Level::Debug,
                format_args!(
                    "cuGetExportTable: module internals, slot 7: {code}: {}",
                    msg.unwrap_or_default()
                ),
            );
            -1
        }
    }
}

/// The table `id` names.
fn table(id: &Uuid) -> Option<*const c_void> {
    Some(match *id {
        RUNTIME => RUNTIME_TABLE.start(),
        TOOLS_TLS => TOOLS_TLS_TABLE.start(),
        TOOLS_HOOKS => TOOLS_HOOKS_TABLE.start(),
        CONTEXT_STORAGE => CONTEXT_STORAGE_TABLE.start(),
        CTX_CREATE_BYPASS => CTX_CREATE_BYPASS_TABLE.start(),
        HEAP_ACCESS => HEAP_ACCESS_TABLE.start(),
        DEVICE_EXTENDED => DEVICE_EXTENDED_TABLE.start(),
        INTEGRITY => INTEGRITY_TABLE.start(),
        CONTEXT_CHECKS => CONTEXT_CHECKS_TABLE.start(),
        CONTEXT_INTERNALS => CONTEXT_INTERNALS_TABLE.start(),
        HEURISTICS_DATA => HEURISTICS_DATA_TABLE.start(),
        MODULE_INTERNALS => MODULE_INTERNALS_TABLE.start(),
        _ => return None,
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGetExportTable(
    table_out: *mut *const c_void,
    id: *const Uuid,
) -> CUresult {
    guard("cuGetExportTable", || {
        let o = crate::device::out(table_out, "ppExportTable")?;
        let id = id
            .as_ref()
            .ok_or_else(|| invalid("pExportTableId is NULL"))?;
        let name = id.iter().map(|b| format!("{b:02x}")).collect::<String>();
        crate::error::log(
            tegragpu::log::Level::Debug,
            format_args!("cuGetExportTable: table {name}"),
        );
        *o = table(id).ok_or_else(|| {
            invalid(format!(
                "export table {name}: not a table this library answers"
            ))
        })?;
        Ok(())
    })
}

// --- The runtime interface ---------------------------------------------------------------------

/// Slot 1: a module from a `__fatBinC_Wrapper_t` (or any image `cuModuleLoadData` takes).
unsafe extern "C" fn module_from_wrapper(
    module: *mut *mut c_void,
    image: *const c_void,
) -> CUresult {
    guard("cuGetExportTable: runtime interface: module load", || {
        crate::module::load_image(module, image)
    })
}

/// Slot 6: slot 1 with three more arguments, which must be empty.
unsafe extern "C" fn module_from_wrapper_ext(
    module: *mut *mut c_void,
    image: *const c_void,
    a3: *mut c_void,
    a4: *mut c_void,
    a5: u32,
) -> CUresult {
    guard(
        "cuGetExportTable: runtime interface: module load (extended)",
        || {
            no_extras(a3, a4, a5)?;
            crate::module::load_image(module, image)
        },
    )
}

/// Slot 8: a module from a fatbin, the module's place second.
unsafe extern "C" fn module_from_fatbin_ext(
    image: *const c_void,
    module: *mut *mut c_void,
    a3: *mut c_void,
    a4: *mut c_void,
    a5: u32,
) -> CUresult {
    guard("cuGetExportTable: runtime interface: fatbin load", || {
        no_extras(a3, a4, a5)?;
        crate::module::load_image(module, image)
    })
}

fn no_extras(a3: *mut c_void, a4: *mut c_void, a5: u32) -> R {
    if !a3.is_null() || !a4.is_null() || a5 != 0 {
        return Err(crate::error::fail(
            CUDA_ERROR_NOT_SUPPORTED,
            format!("options {a3:?}, {a4:?}, {a5}: module load options are not supported"),
        ));
    }
    Ok(())
}

/// Slot 2: device `dev`'s primary context, made if needed, not retained.
unsafe extern "C" fn primary_context(ctx: *mut *mut c_void, dev: CUdevice) -> CUresult {
    guard(
        "cuGetExportTable: runtime interface: primary context",
        || {
            let o = crate::device::out(ctx, "pctx")?;
            *o = crate::context::primary(dev)?.handle();
            Ok(())
        },
    )
}

unsafe extern "C" fn nothing(_: usize) {}

unsafe extern "C" fn load_compilers() -> CUresult {
    CUDA_SUCCESS
}

// --- Tools' thread-local storage ---------------------------------------------------------------

/// Slot 1: make `ctx` the calling thread's current context.
unsafe extern "C" fn tools_set_current(ctx: *mut c_void) -> CUresult {
    crate::context::cuCtxSetCurrent(ctx)
}

/// Slot 2: the calling thread's current context (NULL when there is none).
unsafe extern "C" fn tools_get_current(ctx: *mut *mut c_void) -> CUresult {
    crate::context::cuCtxGetCurrent(ctx)
}

// --- Tools' callback hooks ---------------------------------------------------------------------

/// Zeroed words no tool fills in.
struct Words<const N: usize>(std::cell::UnsafeCell<[u32; N]>);
// SAFETY: the words are only handed out; this library never reads or writes them.
unsafe impl<const N: usize> Sync for Words<N> {}
static HOOKS_1: Words<1024> = Words(std::cell::UnsafeCell::new([0; 1024]));
static HOOKS_2: Words<14> = Words(std::cell::UnsafeCell::new([0; 14]));

unsafe extern "C" fn hooks_buffer_1(ptr: *mut *mut c_void, len: *mut usize) {
    hand_out(&HOOKS_1, ptr, len)
}

unsafe extern "C" fn hooks_buffer_2(ptr: *mut *mut c_void, len: *mut usize) {
    hand_out(&HOOKS_2, ptr, len)
}

unsafe fn hand_out<const N: usize>(w: &'static Words<N>, ptr: *mut *mut c_void, len: *mut usize) {
    if let Some(p) = ptr.as_mut() {
        *p = w.0.get().cast();
    }
    if let Some(l) = len.as_mut() {
        *l = N;
    }
}

// --- Context-local storage ---------------------------------------------------------------------

type Destructor = Option<unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_void)>;

/// (context, key) → (value, destructor).
type Storage = HashMap<(usize, usize), (usize, Destructor)>;
static STORAGE: Mutex<Option<Storage>> = Mutex::new(None);

/// `ctx`, or the current context where it is NULL.
unsafe fn context_or_current(ctx: *mut c_void) -> R<usize> {
    Ok(if ctx.is_null() {
        crate::context::current()?.handle() as usize
    } else {
        crate::context::ctx_ref(ctx)?.handle() as usize
    })
}

unsafe extern "C" fn storage_put(
    ctx: *mut c_void,
    key: *mut c_void,
    value: *mut c_void,
    destructor: Destructor,
) -> CUresult {
    guard("cuGetExportTable: context-local storage: put", || {
        let c = context_or_current(ctx)?;
        STORAGE
            .lock()
            .get_or_insert_with(HashMap::new)
            .insert((c, key as usize), (value as usize, destructor));
        Ok(())
    })
}

unsafe extern "C" fn storage_delete(ctx: *mut c_void, key: *mut c_void) -> CUresult {
    guard("cuGetExportTable: context-local storage: delete", || {
        let c = context_or_current(ctx)?;
        if let Some(m) = STORAGE.lock().as_mut() {
            m.remove(&(c, key as usize));
        }
        Ok(())
    })
}

unsafe extern "C" fn storage_get(
    value: *mut *mut c_void,
    ctx: *mut c_void,
    key: *mut c_void,
) -> CUresult {
    guard("cuGetExportTable: context-local storage: get", || {
        let o = crate::device::out(value, "value")?;
        let c = context_or_current(ctx)?;
        let v = STORAGE
            .lock()
            .as_ref()
            .and_then(|m| m.get(&(c, key as usize)).map(|e| e.0));
        *o = v.ok_or_else(|| {
            crate::error::fail(
                CUDA_ERROR_INVALID_HANDLE,
                format!("no value for key {key:?} in context {c:#x}"),
            )
        })? as *mut c_void;
        Ok(())
    })
}

/// Drop the values a context holds, calling their destructors (the context `ctx` is going).
pub(crate) fn release_context_storage(ctx: *mut c_void) {
    let gone: Vec<(usize, usize, usize, Destructor)> = match STORAGE.lock().as_mut() {
        Some(m) => {
            let keys: Vec<(usize, usize)> =
                m.keys().filter(|k| k.0 == ctx as usize).copied().collect();
            keys.into_iter()
                .filter_map(|k| m.remove(&k).map(|(v, d)| (k.0, k.1, v, d)))
                .collect()
        }
        None => return,
    };
    for (c, k, v, d) in gone {
        if let Some(d) = d {
            // SAFETY: the runtime's destructor for the value it stored, called once.
            unsafe { d(c as *mut c_void, k as *mut c_void, v as *mut c_void) };
        }
    }
}

// --- Context internals -------------------------------------------------------------------------

/// Slot 4: the id of `ctx` (the current context where NULL), as `cuCtxGetId`.
unsafe extern "C" fn context_id(ctx: *mut c_void, id: *mut u64) -> CUresult {
    crate::queries::cuCtxGetId(ctx, id)
}

/// Slot 51: the stream a public handle names in `ctx` (NULL: the current context): the legacy
/// stream for NULL and `CU_STREAM_LEGACY`, the thread's stream for `CU_STREAM_PER_THREAD` and
/// for NULL where `per_thread` is set, and the stream itself otherwise.
unsafe extern "C" fn stream_handle(
    ctx: *mut c_void,
    stream: *mut c_void,
    out: *mut *mut c_void,
    per_thread: i32,
) -> CUresult {
    guard("cuGetExportTable: context internals: stream handle", || {
        let o = crate::device::out(out, "stream")?;
        let s = match stream as usize {
            0 | CU_STREAM_LEGACY | CU_STREAM_PER_THREAD => {
                let c = if ctx.is_null() {
                    crate::context::current()?
                } else {
                    crate::context::ctx_ref(ctx)?
                };
                crate::stream::special_stream(c, stream as usize, per_thread != 0)?
            }
            _ => crate::stream::stream_of(stream, false)?,
        };
        *o = s as *const crate::stream::Stream as *mut c_void;
        Ok(())
    })
}

/// Slot 39: the id of a stream slot 51 handed out, as `cuStreamGetId`.
unsafe extern "C" fn stream_identity(
    _ctx: *mut c_void,
    stream: *mut c_void,
    id: *mut u64,
) -> CUresult {
    guard("cuGetExportTable: context internals: stream id", || {
        let o = crate::device::out(id, "id")?;
        if stream.is_null() {
            return Err(invalid("stream is NULL"));
        }
        *o = crate::stream::stream_of(stream, false)?.id;
        Ok(())
    })
}

/// The tables whose slots [`refused_slot`] answers, by its `T`.
const REFUSED_TABLES: [&str; 3] = [
    "context internals",
    "cuBLASLt heuristics data",
    "module internals",
];
static SLOT_ONCE: [[AtomicBool; 100]; 3] = [const { [const { AtomicBool::new(false) }; 100] }; 3];

/// Slot `N` of table `T` of [`REFUSED_TABLES`], which this library does not know:
/// `CUDA_ERROR_NOT_SUPPORTED`, logged once per slot.
unsafe extern "C" fn refused_slot<const T: usize, const N: usize>() -> CUresult {
    if !SLOT_ONCE[T][N].swap(true, std::sync::atomic::Ordering::Relaxed) {
        tegragpu::log::init();
        crate::error::log(
            tegragpu::log::Level::Warn,
            format_args!(
                "cuGetExportTable: slot {N} of the {} table is not implemented by this \
                 libcuda: CUDA_ERROR_NOT_SUPPORTED",
                REFUSED_TABLES[T]
            ),
        );
    }
    CUDA_ERROR_NOT_SUPPORTED
}

// --- Refused tables ----------------------------------------------------------------------------

static CTX_CREATE_ONCE: AtomicBool = AtomicBool::new(false);
static RUNTIME_SLOT_ONCE: AtomicBool = AtomicBool::new(false);
static TOOLS_SLOT_ONCE: AtomicBool = AtomicBool::new(false);

/// The slots of the runtime interface this library does not know: a caller gets
/// `CUDA_ERROR_NOT_SUPPORTED` (logged once) instead of a jump to address 0.
unsafe extern "C" fn unknown_runtime_slot() -> CUresult {
    crate::error::not_supported(
        "cuGetExportTable: a runtime interface slot",
        &RUNTIME_SLOT_ONCE,
    )
}

/// The slots of the tools' callback-hook table this library does not know:
/// `CUDA_ERROR_NOT_SUPPORTED` (logged once).
unsafe extern "C" fn unknown_tools_slot() -> CUresult {
    crate::error::not_supported("cuGetExportTable: a tools interface slot", &TOOLS_SLOT_ONCE)
}
static HEAP_ONCE: AtomicBool = AtomicBool::new(false);
static DEVICE_QUERY_ONCE: AtomicBool = AtomicBool::new(false);

unsafe extern "C" fn refused_ctx_create() -> CUresult {
    crate::error::not_supported(
        "cuGetExportTable: context creation bypass",
        &CTX_CREATE_ONCE,
    )
}

unsafe extern "C" fn refused_heap() -> CUresult {
    crate::error::not_supported("cuGetExportTable: heap access", &HEAP_ONCE)
}

unsafe extern "C" fn refused_device_query() -> CUresult {
    crate::error::not_supported(
        "cuGetExportTable: extended device query",
        &DEVICE_QUERY_ONCE,
    )
}

// --- The integrity check -----------------------------------------------------------------------

/// The HMAC key of versions 2 and later.
const INTEGRITY_KEY: [u8; 16] = [
    0x14, 0x6A, 0xDD, 0xAE, 0x53, 0xA9, 0xA7, 0x52, 0xAA, 0x08, 0x41, 0x36, 0x0B, 0xF5, 0x5A, 0x9F,
];

/// What the hash covers, in this layout (48 bytes), then each device's [`DeviceFacts`].
#[repr(C)]
struct IntegrityInput {
    driver_version: u32,
    version: u32,
    process: u32,
    thread: u32,
    runtime_table: u64,
    integrity_table: u64,
    check_fn: u64,
    unix_seconds: u64,
}

/// One device's part of the hash (28 bytes).
#[repr(C)]
struct DeviceFacts {
    uuid: [u8; 16],
    pci_domain: i32,
    pci_bus: i32,
    pci_device: i32,
}

/// The raw bytes of a `repr(C)` value without padding.
fn bytes_of<T>(v: &T) -> &[u8] {
    // SAFETY: `v` is a live value of `size_of::<T>()` bytes; the types used have no padding.
    unsafe { std::slice::from_raw_parts((v as *const T).cast(), std::mem::size_of::<T>()) }
}

/// The check's answer for `version` at `unix_seconds` (see the module's comment); versions
/// ending in 0 and 1 have fixed answers.
pub(crate) fn integrity_hash(
    version: u32,
    unix_seconds: u64,
    process: u32,
    thread: u32,
    devices: &[([u8; 16], i32, i32, i32)],
) -> [u64; 2] {
    match version % 10 {
        0 => return [0x3341_181C_03CB_675C, 0x8ED3_83AA_1F4C_D1E8],
        1 => return [0x1841_181C_03CB_675C, 0x8ED3_83AA_1F4C_D1E8],
        _ => {}
    }
    let input = IntegrityInput {
        driver_version: crate::device::DRIVER_VERSION as u32,
        version,
        process,
        thread,
        runtime_table: RUNTIME_TABLE.start() as u64,
        integrity_table: INTEGRITY_TABLE.start() as u64,
        check_fn: INTEGRITY_TABLE.0[1] as u64,
        unix_seconds,
    };
    let mut mac = <Hmac<md2::Md2> as Mac>::new_from_slice(&INTEGRITY_KEY).expect("any key length");
    mac.update(bytes_of(&input));
    for d in devices {
        let f = DeviceFacts {
            uuid: d.0,
            pci_domain: d.1,
            pci_bus: d.2,
            pci_device: d.3,
        };
        mac.update(bytes_of(&f));
    }
    let out = mac.finalize().into_bytes();
    [
        u64::from_ne_bytes(out[..8].try_into().expect("16 bytes")),
        u64::from_ne_bytes(out[8..].try_into().expect("16 bytes")),
    ]
}

unsafe extern "C" fn integrity_check(
    version: u32,
    unix_seconds: u64,
    out: *mut [u64; 2],
) -> CUresult {
    guard("cuGetExportTable: integrity check", || {
        let o = crate::device::out(out, "result")?;
        let mut devices = Vec::new();
        for ordinal in 0..crate::device::count()? {
            devices.push(crate::device::hash_facts(ordinal)?);
        }
        // SAFETY: pthread_self has no preconditions.
        let thread = unsafe { libc::pthread_self() } as u32;
        *o = integrity_hash(version, unix_seconds, std::process::id(), thread, &devices);
        Ok(())
    })
}

// --- Context checks ----------------------------------------------------------------------------

unsafe extern "C" fn context_check(
    _ctx: *mut c_void,
    result: *mut u32,
    _result2: *mut *const c_void,
) -> CUresult {
    if let Some(r) = result.as_mut() {
        *r = 0;
    }
    CUDA_SUCCESS
}

unsafe extern "C" fn context_check_3() -> u32 {
    0
}

#[cfg(test)]
mod tests {
    use super::*;
    use hmac::digest::Digest;

    #[test]
    fn md2_is_rfc_1319s() {
        let hex = |d: &[u8]| d.iter().map(|b| format!("{b:02x}")).collect::<String>();
        assert_eq!(
            hex(&md2::Md2::digest(b"")),
            "8350e5a3e24c153df2275c9f80692773"
        );
        assert_eq!(
            hex(&md2::Md2::digest(b"abc")),
            "da853b0d3f88d99b30283a69e6ded6bb"
        );
    }

    #[test]
    fn integrity_hash_covers_its_inputs() {
        let dev = ([7u8; 16], 0, 0x1b, 0);
        assert_eq!(
            integrity_hash(10, 5, 1, 2, &[dev]),
            [0x3341_181C_03CB_675C, 0x8ED3_83AA_1F4C_D1E8]
        );
        assert_eq!(
            integrity_hash(21, 5, 1, 2, &[dev])[0],
            0x1841_181C_03CB_675C
        );
        let a = integrity_hash(12, 5, 1, 2, &[dev]);
        assert_eq!(a, integrity_hash(12, 5, 1, 2, &[dev]));
        assert_ne!(a, integrity_hash(12, 6, 1, 2, &[dev]), "time");
        assert_ne!(a, integrity_hash(12, 5, 3, 2, &[dev]), "process");
        assert_ne!(a, integrity_hash(12, 5, 1, 2, &[dev, dev]), "devices");
        assert_ne!(a, integrity_hash(22, 5, 1, 2, &[dev]), "version");
    }

    #[test]
    fn tables_by_uuid() {
        assert_eq!(std::mem::size_of::<IntegrityInput>(), 48);
        assert_eq!(std::mem::size_of::<DeviceFacts>(), 28);
        let t = table(&RUNTIME).expect("runtime interface") as *const usize;
        // SAFETY: the table has 13 slots.
        unsafe {
            assert_eq!(*t, 13 * 8);
            assert_ne!(*t.add(2), 0);
            assert_eq!(*t.add(3), unknown_runtime_slot as *const () as usize);
        }
        let s = table(&CONTEXT_STORAGE).expect("storage") as *const usize;
        // SAFETY: the table has 4 slots; slot 0 is a function.
        unsafe { assert_eq!(*s, storage_put as *const () as usize) };
        let c = table(&CONTEXT_INTERNALS).expect("context internals") as *const usize;
        let h = table(&HEURISTICS_DATA).expect("heuristics data") as *const usize;
        // SAFETY: the tables have 93 and 17 slots.
        unsafe {
            assert_eq!((*c, *h), (93 * 8, 17 * 8));
            assert_eq!(*c.add(4), context_id as *const () as usize);
            assert_eq!(*c.add(92), refused_slot::<0, 92> as *const () as usize);
            assert_eq!(*h.add(16), refused_slot::<1, 16> as *const () as usize);
        }
        let mi = table(&MODULE_INTERNALS).expect("module internals") as *const usize;
        // SAFETY: the table has 99 slots.
        unsafe {
            assert_eq!(*mi, 99 * 8);
            assert_eq!(*mi.add(7), module_kernels as *const () as usize);
            assert_eq!(*mi.add(98), refused_slot::<2, 98> as *const () as usize);
        }
        assert!(table(&[0; 16]).is_none());
    }
}
