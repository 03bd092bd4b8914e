//! Tensor maps (TMA descriptors): `cuTensorMapEncodeTiled` and `cuTensorMapReplaceAddress`.
//!
//! A `CUtensorMap` is 128 bytes that a kernel hands to the tensor memory accelerator
//! (`cp.async.bulk.tensor`). The layout below was read from NVIDIA's libcuda 580 on an H200:
//! its outputs for 1,190 accepted and 1,097 refused parameter sets, every one of which this
//! encoder reproduces bit for bit (`cuda/data/tensormap-h200.txt` holds 1,487 of them, and the
//! driver test `tensormap` checks them). Words (32-bit, little-endian):
//!
//! | word | contents |
//! |---|---|
//! | 0-1 | the global address |
//! | 2 | bits 4-6 rank - 1; 7-10 element type (the hardware's numbering); 11-12 interleave; 13-14 swizzle; 15 NaN out-of-bounds fill; 16 TF32 rounding; 17-18 L2 promotion |
//! | 3-6 | global strides 0-3 in 16-byte units, low 32 bits |
//! | 7 | bits 32-35 of those strides, 4 bits each |
//! | 8-12 | global dimensions - 1 |
//! | 13 | bits 0-14 element strides - 1 (3 bits each); 24-31 box dimension 0 - 1 |
//! | 14 | box dimensions 1-4 - 1, a byte each |
//! | 16 | bytes the box brings in: element size × Π ⌊box / element stride⌋ |
//! | 18 | bit 4 without swizzle, else bit 7 + swizzle |
//!
//! The rules are NVIDIA's on the H200 (the same data): those of the CUDA documentation, and the
//! box may bring in no more than a multiprocessor's shared memory (228 KiB on the H200).
//! The im2col forms (`cuTensorMapEncodeIm2col`, `Im2colWide`) are not implemented.

use crate::error::*;
use crate::types::*;
use std::ffi::c_void;

/// Bytes per element of each `CUtensorMapDataType` this library encodes (0-12; the packed
/// types 13-15 are refused, as NVIDIA's libcuda refuses them on the H200).
const ELEMENT_BYTES: [u64; 13] = [1, 2, 4, 4, 8, 8, 2, 4, 8, 2, 4, 4, 4];
/// The hardware's element type for each `CUtensorMapDataType` (word 2, bits 7-10).
const HW_TYPE: [u32; 13] = [0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 8, 7, 8];
const TFLOAT32: u32 = 11;
const TFLOAT32_FTZ: u32 = 12;
const FLOAT16: u32 = 6;
const INTERLEAVE_32B: u32 = 2;

/// The parameters of `cuTensorMapEncodeTiled`, read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Tiled {
    pub dtype: u32,
    pub rank: u32,
    pub addr: u64,
    pub dims: [u64; 5],
    pub strides: [u64; 4],
    pub boxes: [u32; 5],
    pub estrides: [u32; 5],
    pub interleave: u32,
    pub swizzle: u32,
    pub l2: u32,
    pub oob: u32,
}

impl Tiled {
    /// Bytes the box brings in (the traversal: ⌊box / element stride⌋ elements per dimension).
    fn box_bytes(&self) -> u64 {
        let mut n = ELEMENT_BYTES[self.dtype as usize];
        for i in 0..self.rank as usize {
            n = n.saturating_mul(u64::from(self.boxes[i] / self.estrides[i]));
        }
        n
    }

    /// NVIDIA's rules; `shared` is the bytes of shared memory of a multiprocessor.
    pub(crate) fn check(&self, shared: u64) -> R {
        let bad = |what: String| Err(invalid(format!("cuTensorMapEncodeTiled: {what}")));
        if self.dtype as usize >= ELEMENT_BYTES.len() {
            return bad(format!(
                "tensorDataType {}: the types 0 to 12 are supported",
                self.dtype
            ));
        }
        if !(1..=5).contains(&self.rank) {
            return bad(format!("tensorRank {}: 1 to 5", self.rank));
        }
        if self.interleave > INTERLEAVE_32B {
            return bad(format!("interleave {}", self.interleave));
        }
        if self.interleave != 0 && self.rank < 3 {
            return bad(format!(
                "interleave {} needs tensorRank 3 or more (it is {})",
                self.interleave, self.rank
            ));
        }
        if self.swizzle > 3 {
            return bad(format!(
                "swizzle {}: NONE, 32B, 64B and 128B on this GPU",
                self.swizzle
            ));
        }
        if self.l2 > 3 {
            return bad(format!("l2Promotion {}", self.l2));
        }
        if self.oob > 1 || (self.oob == 1 && self.dtype < FLOAT16) {
            return bad(format!(
                "oobFill {} with tensorDataType {}: the NaN fill is for floating-point types",
                self.oob, self.dtype
            ));
        }
        let align = if self.interleave == INTERLEAVE_32B {
            32
        } else {
            16
        };
        if self.addr % align != 0 {
            return bad(format!(
                "globalAddress {:#x} is not {align}-byte aligned",
                self.addr
            ));
        }
        let r = self.rank as usize;
        for i in 0..r {
            if !(1..=1u64 << 32).contains(&self.dims[i]) {
                return bad(format!("globalDim[{i}] {}: 1 to 2^32", self.dims[i]));
            }
            if !(1..=256).contains(&self.boxes[i]) {
                return bad(format!("boxDim[{i}] {}: 1 to 256", self.boxes[i]));
            }
            if !(1..=8).contains(&self.estrides[i]) {
                return bad(format!("elementStrides[{i}] {}: 1 to 8", self.estrides[i]));
            }
        }
        for i in 0..r - 1 {
            let s = self.strides[i];
            if s % align != 0 || s >= 1 << 40 {
                return bad(format!(
                    "globalStrides[{i}] {s:#x}: a multiple of {align} below 2^40"
                ));
            }
        }
        let inner = u64::from(self.boxes[0]) * ELEMENT_BYTES[self.dtype as usize];
        if inner % 16 != 0 {
            return bad(format!(
                "boxDim[0] {} × {} bytes is not a multiple of 16 bytes",
                self.boxes[0], ELEMENT_BYTES[self.dtype as usize]
            ));
        }
        if self.interleave == 0 {
            if self.swizzle != 0 && inner > 16 << self.swizzle {
                return bad(format!(
                    "the box's inner dimension, {inner} bytes, exceeds the swizzle span of {} bytes",
                    16 << self.swizzle
                ));
            }
        } else if inner > 16 * u64::from(self.interleave) {
            return bad(format!(
                "the box's inner dimension, {inner} bytes, exceeds the interleave of {} bytes",
                16 * self.interleave
            ));
        }
        let b = self.box_bytes();
        if b > shared {
            return bad(format!(
                "the box brings in {b} bytes, more than a multiprocessor's {shared} bytes of shared memory"
            ));
        }
        Ok(())
    }

    /// The 32 words of the descriptor (checked parameters).
    pub(crate) fn encode(&self) -> [u32; 32] {
        let mut w = [0u32; 32];
        w[0] = self.addr as u32;
        w[1] = (self.addr >> 32) as u32;
        let tf32 = matches!(self.dtype, TFLOAT32 | TFLOAT32_FTZ) as u32;
        w[2] = ((self.rank - 1) << 4)
            | (HW_TYPE[self.dtype as usize] << 7)
            | (self.interleave << 11)
            | (self.swizzle << 13)
            | (self.oob << 15)
            | (tf32 << 16)
            | (self.l2 << 17);
        let r = self.rank as usize;
        for i in 0..r - 1 {
            let s = self.strides[i] >> 4;
            w[3 + i] = s as u32;
            w[7] |= ((s >> 32) as u32) << (4 * i);
        }
        for i in 0..r {
            w[8 + i] = (self.dims[i] - 1) as u32;
            w[13] |= (self.estrides[i] - 1) << (3 * i);
        }
        w[13] |= (self.boxes[0] - 1) << 24;
        for i in 1..r {
            w[14] |= (self.boxes[i] - 1) << (8 * (i - 1));
        }
        w[16] = self.box_bytes() as u32;
        w[18] = if self.swizzle == 0 {
            0x10
        } else {
            0x80 << self.swizzle
        };
        w
    }
}

/// Bytes of shared memory of a multiprocessor of the current context's device.
fn shared_per_sm() -> R<u64> {
    let d = crate::context::current_device()?;
    Ok(crate::attributes::attribute(d, 81).unwrap_or(0).max(0) as u64)
}

/// `n` values at `p` (NULL: an error naming `what`).
unsafe fn read<T: Copy + Default, const N: usize>(p: *const T, n: usize, what: &str) -> R<[T; N]> {
    let mut a = [T::default(); N];
    if n == 0 {
        return Ok(a);
    }
    if p.is_null() {
        return Err(invalid(format!("cuTensorMapEncodeTiled: {what} is NULL")));
    }
    for (i, v) in a.iter_mut().enumerate().take(n.min(N)) {
        *v = *p.add(i);
    }
    Ok(a)
}

fn map_out<'a>(map: *mut c_void, what: &str) -> R<&'a mut [u32; 32]> {
    if map.is_null() {
        return Err(invalid(format!("{what}: tensorMap is NULL")));
    }
    if map as usize % 64 != 0 {
        return Err(invalid(format!(
            "{what}: tensorMap {map:?} is not 64-byte aligned"
        )));
    }
    // SAFETY: a non-NULL, aligned pointer to the caller's 128-byte CUtensorMap.
    Ok(unsafe { &mut *(map as *mut [u32; 32]) })
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn cuTensorMapEncodeTiled(
    map: *mut c_void,
    dtype: u32,
    rank: u32,
    addr: *mut c_void,
    dims: *const u64,
    strides: *const u64,
    boxes: *const u32,
    estrides: *const u32,
    interleave: u32,
    swizzle: u32,
    l2: u32,
    oob: u32,
) -> CUresult {
    guard("cuTensorMapEncodeTiled", || {
        let out = map_out(map, "cuTensorMapEncodeTiled")?;
        let r = if (1..=5).contains(&rank) {
            rank as usize
        } else {
            0
        };
        let t = Tiled {
            dtype,
            rank,
            addr: addr as u64,
            dims: read(dims, r, "globalDim")?,
            strides: read(strides, r.saturating_sub(1), "globalStrides")?,
            boxes: read(boxes, r, "boxDim")?,
            estrides: read(estrides, r, "elementStrides")?,
            interleave,
            swizzle,
            l2,
            oob,
        };
        t.check(shared_per_sm()?)?;
        *out = t.encode();
        Ok(())
    })
}

/// `cuTensorMapReplaceAddress`: a new global address (16-byte aligned; 32 with 32-byte
/// interleave) in a descriptor of `cuTensorMapEncodeTiled`.
#[no_mangle]
pub unsafe extern "C" fn cuTensorMapReplaceAddress(
    map: *mut c_void,
    addr: *mut c_void,
) -> CUresult {
    guard("cuTensorMapReplaceAddress", || {
        crate::context::current()?;
        let m = map_out(map, "cuTensorMapReplaceAddress")?;
        let align = if (m[2] >> 11) & 3 == INTERLEAVE_32B {
            32
        } else {
            16
        };
        let a = addr as u64;
        if a % align != 0 {
            return Err(invalid(format!(
                "cuTensorMapReplaceAddress: globalAddress {a:#x} is not {align}-byte aligned"
            )));
        }
        m[0] = a as u32;
        m[1] = (a >> 32) as u32;
        Ok(())
    })
}
