//! Device-side `printf` and `assert`: the CUDA syscalls `vprintf` and `__assertfail` that a
//! user's cubin may call. The first module that imports one loads the built-in syscall module
//! (`src/builtin/syscalls.cu`) and allocates the syscall area; every importing module's
//! relocations against `vprintf` / `__assertfail` then resolve to its functions.
//!
//! * `printf`: the GPU appends records to a ring in the area; the host formats them with the C
//!   library's `snprintf`, one conversion at a time, and writes them to `stdout` at its
//!   synchronization points ([`crate::core::Device::synchronize`], [`crate::core::Queue::synchronize`],
//!   a [`crate::core::Signal::wait`] that returns, and when the device is closed), as libcuda
//!   does at its own. A record that does not fit the ring is dropped and counted (warning).
//! * `assert`: the first failing assertion's text, file, line, function, block and thread are
//!   written to the area and the kernel traps; the device's fault report then begins with
//!   libcuda's assertion message.

use crate::backend::{Allocation, Backend};
use crate::cubin::{self, Syscall};
use crate::error::{Error, Result, Status};
use parking_lot::Mutex;

/// Bytes of `tg_sys_area` (rounded up); the printf ring follows it.
const AREA_BYTES: u64 = 4096;
/// Bytes of the printf ring (libcuda's default `CU_LIMIT_PRINTF_FIFO_SIZE`: 1 MiB).
pub const PRINTF_RING_BYTES: u32 = 1 << 20;

// Offsets in `tg_sys_area` (src/builtin/syscalls.cu).
const ASSERT_STATE: usize = 0;
const ASSERT_LINE: usize = 4;
const ASSERT_BLOCK: usize = 8;
const ASSERT_THREAD: usize = 20;
const PRINTF_HEAD: usize = 32;
const PRINTF_TAIL: usize = 36;
const PRINTF_CAP: usize = 40;
const PRINTF_DROPPED: usize = 44;
const PRINTF_RING: usize = 48;
const ASSERT_MESSAGE: usize = 56;
const ASSERT_FILE: usize = 312;
const ASSERT_FUNCTION: usize = 568;
const ASSERT_TEXT_BYTES: usize = 256;
const HEAP_BASE: usize = 824;
const HEAP_SIZE: usize = 832;
const HEAP_TOP: usize = 840;

/// Record kinds (`TG_REC_*`).
const REC_PRINTF: u32 = 1;
const REC_FILL: u32 = 2;

/// The built-in syscall module of one device and its area.
pub(crate) struct Syscalls {
    code: Option<Allocation>,
    area: Option<Allocation>,
    /// GPU addresses of the implementations, in [`Syscall::ALL`] order.
    addresses: [u64; 5],
    /// The device heap (`malloc`/`free`), allocated when a module that imports them loads.
    heap: Mutex<Option<Allocation>>,
    /// Largest stack frame of the syscall functions: every kernel of an importing module gets
    /// this much more stack.
    pub frame_bytes: u32,
    /// Most registers a syscall function uses: an importing kernel's QMD gets at least these.
    pub registers: u32,
    /// Host side of the ring: bytes consumed, and the dropped count last reported.
    ring: Mutex<(u32, u32)>,
}

impl Syscalls {
    /// Load the syscall module for SM `sm` and set up its area.
    pub(crate) fn load(
        backend: &dyn Backend,
        sm: (u32, u32),
        flags: crate::backend::MemFlags,
    ) -> Result<Syscalls> {
        let bytes = crate::builtin::syscalls_cubin(sm.0, sm.1).ok_or_else(|| {
            Error::new(
                Status::NotSupported,
                format!(
                    "device-side printf/assert: libtegragpu has no built-in syscall module for sm_{}{}",
                    sm.0, sm.1
                ),
            )
        })?;
        let cub = cubin::Module::parse(bytes, sm)?;
        let f = |s: Syscall| {
            cub.function(s.builtin_function()).cloned().ok_or_else(|| {
                Error::new(
                    Status::Internal,
                    format!(
                        "built-in syscall module: no function {}",
                        s.builtin_function()
                    ),
                )
            })
        };
        let funcs = [
            f(Syscall::Vprintf)?,
            f(Syscall::Assertfail)?,
            f(Syscall::Malloc)?,
            f(Syscall::Free)?,
            f(Syscall::SetConditional)?,
        ];
        let global = cub.global_symbol("tg_sys").cloned().ok_or_else(|| {
            Error::new(
                Status::Internal,
                "built-in syscall module: no variable tg_sys",
            )
        })?;
        let image_len = cub.image().len() as u64;
        let code = backend.alloc(image_len.max(4096), flags)?;
        let mut s = Syscalls {
            addresses: [0, 1, 2, 3, 4].map(|i| code.gpu_va + funcs[i].offset),
            heap: Mutex::new(None),
            frame_bytes: funcs
                .iter()
                .map(|f| f.frame_size.unwrap_or(0))
                .max()
                .unwrap_or(0),
            registers: funcs
                .iter()
                .map(|f| f.register_count.unwrap_or(24))
                .max()
                .unwrap_or(24),
            code: Some(code),
            area: None,
            ring: Mutex::new((0, 0)),
        };
        let area = match backend.alloc(AREA_BYTES + u64::from(PRINTF_RING_BYTES), flags) {
            Ok(a) => a,
            Err(e) => {
                s.free(backend);
                return Err(e);
            }
        };
        s.area = Some(area);
        let code = s
            .code
            .as_ref()
            .map(|a| (a.gpu_va, a.cpu))
            .unwrap_or_default();
        let area = s
            .area
            .as_ref()
            .map(|a| (a.gpu_va, a.cpu))
            .unwrap_or_default();
        let mut image = cub.image().to_vec();
        if let Err(e) = cub.relocate(&mut image, code.0) {
            s.free(backend);
            return Err(e);
        }
        image[global.offset as usize..global.offset as usize + 8]
            .copy_from_slice(&area.0.to_le_bytes());
        // SAFETY: both allocations are CPU-mapped (code memory) and large enough.
        unsafe {
            std::ptr::copy_nonoverlapping(image.as_ptr(), code.1, image.len());
            std::ptr::write_bytes(area.1, 0, AREA_BYTES as usize);
            put_u32(area.1, PRINTF_CAP, PRINTF_RING_BYTES);
            std::ptr::write_unaligned(area.1.add(PRINTF_RING) as *mut u64, area.0 + AREA_BYTES);
        }
        // x86-64: `mfence` drains the write-combining buffers now. aarch64: `dmb ish` orders
        // only for the other CPUs; the GPU reads this memory only for work submitted after it,
        // and that submit's `dsb st` (crate::hw::barrier::before_gp_put, cumulative) makes these
        // stores visible to the GPU first.
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        Ok(s)
    }

    /// GPU address of the implementation of `s`.
    pub(crate) fn address(&self, s: Syscall) -> u64 {
        self.addresses[s as usize]
    }

    /// Allocate the device heap (`heap_bytes`) unless it exists, and tell the GPU side where it
    /// is. Called when a module that imports `malloc` or `free` loads, before its first launch.
    pub(crate) fn ensure_heap(
        &self,
        backend: &dyn Backend,
        heap_bytes: u64,
        flags: crate::backend::MemFlags,
    ) -> Result<()> {
        let mut h = self.heap.lock();
        if h.is_some() {
            return Ok(());
        }
        let Some(area) = self.area_ptr() else {
            return Err(Error::new(Status::Internal, "syscall area is not mapped"));
        };
        let a = backend.alloc(heap_bytes, flags)?;
        // SAFETY: the area is CPU-mapped and AREA_BYTES long; the heap words lie inside it. No
        // kernel can have used the heap yet (heap_size was 0 until now, so malloc returned NULL).
        unsafe {
            std::ptr::write_unaligned(area.add(HEAP_BASE) as *mut u64, a.gpu_va);
            std::ptr::write_unaligned(area.add(HEAP_TOP) as *mut u64, 0);
            std::ptr::write_unaligned(area.add(HEAP_SIZE) as *mut u64, heap_bytes);
        }
        // x86-64: `mfence` drains the write-combining buffers now. aarch64: `dmb ish` orders
        // only for the other CPUs; the GPU reads this memory only for work submitted after it,
        // and that submit's `dsb st` (crate::hw::barrier::before_gp_put, cumulative) makes these
        // stores visible to the GPU first.
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        *h = Some(a);
        Ok(())
    }

    /// Bytes of the device heap, if it was allocated.
    pub(crate) fn heap_bytes(&self) -> Option<u64> {
        self.heap.lock().as_ref().map(|a| a.size)
    }

    /// Free the module, the area and the heap (the device is closing).
    pub(crate) fn free(&mut self, backend: &dyn Backend) {
        let heap = self.heap.get_mut().take();
        for a in [self.code.take(), self.area.take(), heap]
            .into_iter()
            .flatten()
        {
            let _ = backend.free(&a);
        }
    }

    fn area_ptr(&self) -> Option<*mut u8> {
        self.area.as_ref().map(|a| a.cpu).filter(|p| !p.is_null())
    }

    /// libcuda's message for the first failed assertion, if a kernel failed one.
    pub(crate) fn assertion(&self) -> Option<String> {
        let p = self.area_ptr()?;
        // SAFETY: the area is CPU-mapped and AREA_BYTES long; the GPU writes state 2 last.
        unsafe {
            if get_u32(p, ASSERT_STATE) != 2 {
                return None;
            }
            let dims = |off: usize| [get_u32(p, off), get_u32(p, off + 4), get_u32(p, off + 8)];
            let text = |off: usize| {
                let b: Vec<u8> = (0..ASSERT_TEXT_BYTES)
                    .map(|i| std::ptr::read_volatile(p.add(off + i)))
                    .take_while(|&c| c != 0)
                    .collect();
                String::from_utf8_lossy(&b).into_owned()
            };
            let (b, t) = (dims(ASSERT_BLOCK), dims(ASSERT_THREAD));
            Some(format!(
                "{}:{}: {}: block: [{},{},{}], thread: [{},{},{}] Assertion `{}` failed.",
                text(ASSERT_FILE),
                get_u32(p, ASSERT_LINE),
                text(ASSERT_FUNCTION),
                b[0],
                b[1],
                b[2],
                t[0],
                t[1],
                t[2],
                text(ASSERT_MESSAGE)
            ))
        }
    }

    /// Format and write every complete printf record to `stdout`; warn about dropped ones.
    pub(crate) fn flush_printf(&self) {
        let out = self.drain_printf();
        if !out.is_empty() {
            write_stdout(&out);
        }
    }

    /// The text of every complete printf record, which are then released to the GPU.
    fn drain_printf(&self) -> Vec<u8> {
        let Some(p) = self.area_ptr() else {
            return Vec::new();
        };
        let mut ring = self.ring.lock();
        let mut out = Vec::new();
        // SAFETY: the area and the ring behind it are CPU-mapped; offsets stay inside them
        // (records are checked against the capacity before they are read).
        unsafe {
            let cap = PRINTF_RING_BYTES;
            let base = p.add(AREA_BYTES as usize);
            let head = get_u32(p, PRINTF_HEAD);
            let mut tail = ring.0;
            while head.wrapping_sub(tail) >= 16 {
                let pos = (tail % cap) as usize;
                let bytes = get_u32(base, pos);
                if bytes == 0 {
                    break; // reserved, not written yet
                }
                if bytes % 8 != 0 || bytes as usize > cap as usize - pos {
                    crate::log::warn!(
                        "device printf: malformed record of {bytes} bytes at ring offset {pos}; \
                         the rest of the ring is discarded"
                    );
                    tail = head;
                    break;
                }
                let rec: Vec<u8> = (0..bytes as usize)
                    .map(|i| std::ptr::read_volatile(base.add(pos + i)))
                    .collect();
                match le32(&rec, 4) {
                    REC_PRINTF => out.extend(format_record(&rec)),
                    REC_FILL => {} // the rest of the ring before it wraps
                    k => crate::log::warn!("device printf: record of unknown kind {k} skipped"),
                }
                std::ptr::write_volatile(base.add(pos) as *mut u32, 0);
                tail = tail.wrapping_add(bytes);
            }
            ring.0 = tail;
            put_u32(p, PRINTF_TAIL, tail);
            let dropped = get_u32(p, PRINTF_DROPPED);
            if dropped != ring.1 {
                crate::log::warn!(
                    "device printf: {} records did not fit the {cap}-byte ring and were dropped \
                     (synchronize more often)",
                    dropped.wrapping_sub(ring.1)
                );
                ring.1 = dropped;
            }
        }
        out
    }
}

unsafe fn get_u32(p: *const u8, off: usize) -> u32 {
    std::ptr::read_volatile(p.add(off) as *const u32)
}

unsafe fn put_u32(p: *mut u8, off: usize, v: u32) {
    std::ptr::write_volatile(p.add(off) as *mut u32, v)
}

fn le32(b: &[u8], off: usize) -> u32 {
    b.get(off..off + 4)
        .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
        .unwrap_or(0)
}

/// Write to the C library's `stdout` (so that the output keeps its place among a C program's
/// own `printf` output, as libcuda's does) and flush it.
fn write_stdout(b: &[u8]) {
    extern "C" {
        static mut stdout: *mut libc::FILE;
    }
    // SAFETY: `stdout` is the C library's standard output stream.
    unsafe {
        let f = stdout;
        if !f.is_null() {
            libc::fwrite(b.as_ptr() as *const libc::c_void, 1, b.len(), f);
            libc::fflush(f);
        }
    }
}

/// The text of one printf record (see `tg_sys_vprintf`): the format, with each conversion
/// formatted by the C library's `snprintf` from the argument bytes the kernel passed.
pub fn format_record(rec: &[u8]) -> Vec<u8> {
    let fmt_len = le32(rec, 8) as usize;
    let arg_len = le32(rec, 12) as usize;
    let f8 = (fmt_len + 7) & !7;
    let a8 = (arg_len + 7) & !7;
    let fmt = rec.get(16..16 + fmt_len.saturating_sub(1)).unwrap_or(&[]);
    let args = rec.get(16 + f8..16 + f8 + arg_len).unwrap_or(&[]);
    let strings = rec.get(16 + f8 + a8..).unwrap_or(&[]);
    format_printf(fmt, args, strings)
}

/// Format `fmt` (without its NUL) with the argument bytes `args` laid out as the CUDA
/// compiler passes them to `vprintf` (each argument at its natural alignment) and the `%s`
/// strings `strings` (NUL-terminated, in order).
pub fn format_printf(fmt: &[u8], args: &[u8], strings: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut a = 0usize; // offset in args
    let mut strs = strings.split(|&c| c == 0);
    let mut i = 0usize;
    let take = |a: &mut usize, size: usize| -> u64 {
        *a = (*a + size - 1) & !(size - 1);
        let v = args
            .get(*a..*a + size)
            .map(|s| {
                let mut b = [0u8; 8];
                b[..size].copy_from_slice(s);
                u64::from_le_bytes(b)
            })
            .unwrap_or(0);
        *a += size;
        v
    };
    while i < fmt.len() {
        let c = fmt[i];
        if c != b'%' {
            out.push(c);
            i += 1;
            continue;
        }
        let start = i;
        i += 1;
        if fmt.get(i) == Some(&b'%') {
            out.push(b'%');
            i += 1;
            continue;
        }
        let mut stars = Vec::new();
        while matches!(fmt.get(i), Some(b'-' | b'+' | b' ' | b'#' | b'0')) {
            i += 1;
        }
        // Width, then precision after a '.': a '*' (an int argument) or digits.
        let mut field = |i: &mut usize, a: &mut usize| {
            if fmt.get(*i) == Some(&b'*') {
                stars.push(take(a, 4) as u32 as i32);
                *i += 1;
            }
            while fmt.get(*i).is_some_and(u8::is_ascii_digit) {
                *i += 1;
            }
        };
        field(&mut i, &mut a);
        if fmt.get(i) == Some(&b'.') {
            i += 1;
            field(&mut i, &mut a);
        }
        let mut wide = false;
        let len_start = i;
        while let Some(&m @ (b'h' | b'l' | b'L' | b'z' | b'j' | b't' | b'q')) = fmt.get(i) {
            wide |= m != b'h';
            i += 1;
        }
        let Some(&conv) = fmt.get(i) else {
            out.extend_from_slice(&fmt[start..]);
            break;
        };
        i += 1;
        // The spec handed to snprintf: flags, width, precision, then a length modifier that
        // matches the value passed (ll for 64-bit integers, none otherwise).
        let mut spec: Vec<u8> = fmt[start..len_start].to_vec();
        let value = match conv {
            b'c' => Some(Arg::Int(
                take(&mut a, if wide { 8 } else { 4 }) as u32 as u64
            )),
            b'd' | b'i' | b'u' | b'x' | b'X' | b'o' => {
                if wide {
                    spec.extend_from_slice(b"ll");
                    Some(Arg::Int(take(&mut a, 8)))
                } else {
                    spec.extend_from_slice(&fmt[len_start..i - 1]);
                    Some(Arg::Int(take(&mut a, 4)))
                }
            }
            b'f' | b'F' | b'e' | b'E' | b'g' | b'G' | b'a' | b'A' => {
                Some(Arg::Double(f64::from_bits(take(&mut a, 8))))
            }
            b'p' => Some(Arg::Ptr(take(&mut a, 8))),
            b's' => {
                take(&mut a, 8);
                Some(Arg::Str(strs.next().unwrap_or(&[]).to_vec()))
            }
            b'n' => {
                take(&mut a, 8); // writes nothing back, as libcuda
                None
            }
            _ => None,
        };
        let Some(value) = value else {
            if conv != b'n' {
                out.extend_from_slice(&fmt[start..i]);
            }
            continue;
        };
        spec.push(conv);
        out.extend(snprintf(&spec, &stars, value));
    }
    out
}

enum Arg {
    Int(u64),
    Double(f64),
    Ptr(u64),
    Str(Vec<u8>),
}

/// One conversion through the C library.
fn snprintf(spec: &[u8], stars: &[i32], value: Arg) -> Vec<u8> {
    let Ok(spec) = std::ffi::CString::new(spec) else {
        return Vec::new();
    };
    let mut buf = vec![0u8; 512];
    loop {
        let (b, n) = (buf.as_mut_ptr() as *mut libc::c_char, buf.len());
        let f = spec.as_ptr();
        // SAFETY: `spec` holds exactly one conversion whose length modifier matches the value
        // passed (a 32-bit int, a 64-bit long long, a double, a pointer or a C string), after
        // as many int arguments as it has `*`.
        let r = unsafe {
            macro_rules! call {
                ($v:expr) => {
                    match stars {
                        [] => libc::snprintf(b, n, f, $v),
                        [w] => libc::snprintf(b, n, f, *w, $v),
                        [w, p, ..] => libc::snprintf(b, n, f, *w, *p, $v),
                    }
                };
            }
            match &value {
                Arg::Int(v) => {
                    if spec.as_bytes().ends_with_ll() {
                        call!(*v as libc::c_longlong)
                    } else {
                        call!(*v as u32 as libc::c_int)
                    }
                }
                Arg::Double(d) => call!(*d),
                Arg::Ptr(p) => call!(*p as usize as *const libc::c_void),
                Arg::Str(s) => {
                    let c = std::ffi::CString::new(s.clone()).unwrap_or_default();
                    call!(c.as_ptr())
                }
            }
        };
        if r < 0 {
            return Vec::new();
        }
        if (r as usize) < n {
            buf.truncate(r as usize);
            return buf;
        }
        buf.resize(r as usize + 1, 0);
    }
}

trait EndsWithLl {
    fn ends_with_ll(&self) -> bool;
}

impl EndsWithLl for [u8] {
    /// Whether the conversion (last byte) follows an `ll` length modifier.
    fn ends_with_ll(&self) -> bool {
        self.len() >= 3 && &self[self.len() - 3..self.len() - 1] == b"ll"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(parts: &[(usize, u64)]) -> Vec<u8> {
        let mut v = Vec::new();
        for &(size, x) in parts {
            while v.len() % size != 0 {
                v.push(0);
            }
            v.extend_from_slice(&x.to_le_bytes()[..size]);
        }
        v
    }

    #[test]
    fn conversions_match_the_c_library() {
        let a = args(&[(4, 42), (8, 1.5f64.to_bits()), (8, 0)]);
        assert_eq!(
            format_printf(b"hello %d %f %s\n", &a, b"str\0"),
            b"hello 42 1.500000 str\n"
        );
        let a = args(&[
            (4, (-7i32) as u32 as u64),
            (4, 255),
            (8, u64::MAX),
            (4, b'x' as u64),
        ]);
        assert_eq!(
            format_printf(b"[%5d|%-4x|%llu|%c|%%]", &a, b""),
            b"[   -7|ff  |18446744073709551615|x|%]"
        );
        // * width and precision take int arguments first.
        let a = args(&[(4, 6), (4, 2), (8, 1.23456f64.to_bits())]);
        assert_eq!(format_printf(b"%*.*f", &a, b""), b"  1.23");
        let a = args(&[(8, (-5i64) as u64), (4, 3), (8, 0x1234)]);
        assert_eq!(format_printf(b"%ld %hd %p", &a, b""), b"-5 3 0x1234");
        // A trailing lone % is copied; an unknown conversion is copied as written.
        assert_eq!(format_printf(b"100%", &[], b""), b"100%");
        assert_eq!(format_printf(b"%y!", &[], b""), b"%y!");
        // Missing argument bytes read as zero instead of running past the record.
        assert_eq!(format_printf(b"%d %s|", &[], b""), b"0 |");
    }

    /// A printf record for `fmt` (with its NUL) and no arguments.
    fn record(fmt: &[u8]) -> Vec<u8> {
        let f8 = (fmt.len() + 7) & !7;
        let mut r = vec![0u8; 16 + f8];
        r[0..4].copy_from_slice(&((16 + f8) as u32).to_le_bytes());
        r[4..8].copy_from_slice(&REC_PRINTF.to_le_bytes());
        r[8..12].copy_from_slice(&(fmt.len() as u32).to_le_bytes());
        r[16..16 + fmt.len()].copy_from_slice(fmt);
        r
    }

    #[test]
    fn the_ring_is_drained_in_order_across_its_end() {
        let mut mem = vec![0u8; AREA_BYTES as usize + PRINTF_RING_BYTES as usize];
        let area = Allocation {
            gpu_va: 0x1000_0000,
            cpu: mem.as_mut_ptr(),
            size: mem.len() as u64,
            id: 0,
        };
        let s = Syscalls {
            code: None,
            area: Some(area),
            addresses: [0; 5],
            heap: Mutex::new(None),
            frame_bytes: 0,
            registers: 24,
            ring: Mutex::new((0, 0)),
        };
        let cap = PRINTF_RING_BYTES as usize;
        let ring = AREA_BYTES as usize;
        let put = |mem: &mut [u8], at: usize, b: &[u8]| {
            mem[ring + at..ring + at + b.len()].copy_from_slice(b)
        };
        // Lap 1: two records end 24 bytes before the end of the ring, then a fill record, then
        // a record at the start of lap 2; the GPU has reserved one more that it has not written.
        let (a, b, c) = (record(b"one\n\0"), record(b"two\n\0"), record(b"three\n\0"));
        let start = (cap - 24 - a.len() - b.len()) as u32;
        put(&mut mem, start as usize, &a);
        put(&mut mem, start as usize + a.len(), &b);
        let mut fill = [0u8; 8];
        fill[0..4].copy_from_slice(&24u32.to_le_bytes());
        fill[4..8].copy_from_slice(&REC_FILL.to_le_bytes());
        put(&mut mem, cap - 24, &fill);
        put(&mut mem, 0, &c);
        let head = start + (a.len() + b.len() + 24 + c.len() + 32) as u32;
        mem[PRINTF_HEAD..PRINTF_HEAD + 4].copy_from_slice(&head.to_le_bytes());
        mem[PRINTF_DROPPED..PRINTF_DROPPED + 4].copy_from_slice(&2u32.to_le_bytes());
        *s.ring.lock() = (start, 0);
        assert_eq!(s.drain_printf(), b"one\ntwo\nthree\n");
        // Consumed up to the unwritten record; headers cleared; the tail published.
        let tail = head - 32;
        assert_eq!(*s.ring.lock(), (tail, 2));
        assert_eq!(le32(&mem, PRINTF_TAIL), tail);
        assert_eq!(le32(&mem, ring + start as usize), 0);
        // The GPU finishes the last record: the next drain prints it alone.
        let d = record(b"four+four\0");
        assert_eq!(d.len(), 32);
        put(&mut mem, c.len(), &d);
        assert_eq!(s.drain_printf(), b"four+four");
        assert_eq!(s.drain_printf(), b"");
    }

    #[test]
    fn records_carry_format_arguments_and_strings() {
        let fmt = b"t%d=%s\0";
        let a = args(&[(4, 3), (8, 0xdead_beef)]);
        let mut rec = Vec::new();
        let f8 = (fmt.len() + 7) & !7;
        let a8 = (a.len() + 7) & !7;
        let total = 16 + f8 + a8 + 8;
        rec.extend_from_slice(&(total as u32).to_le_bytes());
        rec.extend_from_slice(&REC_PRINTF.to_le_bytes());
        rec.extend_from_slice(&(fmt.len() as u32).to_le_bytes());
        rec.extend_from_slice(&(a.len() as u32).to_le_bytes());
        rec.extend_from_slice(fmt);
        rec.resize(16 + f8, 0);
        rec.extend_from_slice(&a);
        rec.resize(16 + f8 + a8, 0);
        rec.extend_from_slice(b"ok\0");
        rec.resize(total, 0);
        assert_eq!(format_record(&rec), b"t3=ok");
        // A truncated record formats what it has.
        assert_eq!(format_record(&rec[..20]), b"");
    }
}
