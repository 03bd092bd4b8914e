//! The emulated texture unit: reads a texture object's header (TIC) and sampler (TSC) from the
//! pools the compute class was given, and fetches texels with nearest-point sampling.
//!
//! Field positions are this module's own, written from `clc797tex.h` (TEXHEAD_1D,
//! TEXHEAD_PITCH, TEXSAMP0/1): the emulated Orin uses the Maxwell-style layouts. It shares
//! nothing with the encoder in `crate::hw::texture`. What the model does not cover (linear
//! filtering, normalized coordinates, other header versions, formats other than the 8/16/32-bit
//! R, RG and RGBA ones) makes the fetch fail with a message instead of returning a guess.

use super::hwif::MmuFault;
use super::kernels::GpuMem;

/// The pools bound with SET_TEX_HEADER_POOL_A/B/C and SET_TEX_SAMPLER_POOL_A/B/C.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TexturePools {
    pub headers: u64,
    pub header_max_index: u32,
    pub samplers: u64,
    pub sampler_max_index: u32,
}

fn bits(w: &[u32; 8], hi: u32, lo: u32) -> u64 {
    (lo..=hi).fold(0u64, |acc, b| {
        acc | (u64::from((w[(b / 32) as usize] >> (b % 32)) & 1) << (b - lo))
    })
}

fn err(what: String) -> MmuFault {
    MmuFault {
        address: 0,
        write: false,
        what,
    }
}

fn read_entry(mem: &mut GpuMem, va: u64) -> Result<[u32; 8], MmuFault> {
    let mut w = [0u32; 8];
    for (i, x) in w.iter_mut().enumerate() {
        *x = mem.read_u32(va + 4 * i as u64)?;
    }
    Ok(w)
}

impl TexturePools {
    /// The value of channel X (the first channel the header's X_SOURCE selects) of the texel at
    /// (`x`, `y`) of the texture `handle`, as the sampler returns it (floats for FLOAT, UNORM and
    /// SNORM data; integers converted with `as f32` for UINT/SINT). A 1-D buffer fetch outside
    /// the texture reads 0; a 2-D fetch applies the sampler's clamp or border mode.
    pub fn fetch_x(&self, mem: &mut GpuMem, handle: u64, x: i64, y: i64) -> Result<f32, MmuFault> {
        // SAMPLER_INDEX VIA_HEADER_INDEX: the sampler sits at the header's index.
        let idx = handle & 0xF_FFFF;
        if idx > u64::from(self.header_max_index) || idx > u64::from(self.sampler_max_index) {
            return Err(err(format!(
                "texture handle {handle:#x} is beyond the pools (max index {} / {})",
                self.header_max_index, self.sampler_max_index
            )));
        }
        let tic = read_entry(mem, self.headers + 32 * idx)?;
        let tsc = read_entry(mem, self.samplers + 32 * idx)?;
        let comps = bits(&tic, 6, 0);
        let (chan_bytes, channels) = match comps {
            0x0f => (4, 1),
            0x04 => (4, 2),
            0x01 => (4, 4),
            0x1b => (2, 1),
            0x0c => (2, 2),
            0x03 => (2, 4),
            0x1d => (1, 1),
            0x18 => (1, 2),
            0x08 => (1, 4),
            c => {
                return Err(err(format!(
                    "texture {handle}: COMPONENTS {c:#x} is not modelled"
                )))
            }
        };
        let dtype = bits(&tic, 9, 7);
        let xsrc = bits(&tic, 21, 19);
        let version = bits(&tic, 87, 85);
        let ttype = bits(&tic, 154, 151);
        let elem = chan_bytes * channels;
        let addr_hi = bits(&tic, 80, 64) << 32;
        let texel_va = match (version, ttype) {
            (0, 6) => {
                let width = (bits(&tic, 111, 96) << 16 | bits(&tic, 143, 128)) + 1;
                if x < 0 || x as u64 >= width || y != 0 {
                    return Ok(0.0);
                }
                (addr_hi | bits(&tic, 63, 32)) + x as u64 * elem
            }
            (2, 7) => {
                if bits(&tic, 191, 191) != 0 || bits(&tsc, 57, 57) == 0 {
                    return Err(err(format!(
                        "texture {handle}: normalized coordinates are not modelled"
                    )));
                }
                if bits(&tsc, 34, 32) != 1 || bits(&tsc, 37, 36) != 1 {
                    return Err(err(format!(
                        "texture {handle}: only point filtering is modelled"
                    )));
                }
                let width = bits(&tic, 144, 128) as i64 + 1;
                let height = (bits(&tic, 146, 146) << 16 | bits(&tic, 175, 160)) as i64 + 1;
                let pitch = (bits(&tic, 145, 145) << 21) | (bits(&tic, 111, 96) << 5);
                let mut c = [x, y];
                for (i, (v, n)) in c.iter_mut().zip([width, height]).enumerate() {
                    let mode = bits(&tsc, 3 * i as u32 + 2, 3 * i as u32);
                    match mode {
                        2 => *v = (*v).clamp(0, n - 1),
                        3 if *v < 0 || *v >= n => return Ok(f32::from_bits(tsc[4])),
                        3 => {}
                        m => {
                            return Err(err(format!(
                                "texture {handle}: address mode {m} is not modelled"
                            )))
                        }
                    }
                }
                (addr_hi | (bits(&tic, 63, 37) << 5)) + c[1] as u64 * pitch + c[0] as u64 * elem
            }
            (v, t) => {
                return Err(err(format!(
                    "texture {handle}: header version {v} with texture type {t} is not modelled"
                )))
            }
        };
        let ch = match xsrc {
            2..=5 if xsrc - 2 < channels => xsrc - 2,
            0 => return Ok(0.0),
            s => {
                return Err(err(format!(
                    "texture {handle}: X_SOURCE {s} is not modelled"
                )))
            }
        };
        let va = texel_va + ch * chan_bytes;
        let word = mem.read_u32(va & !3)? >> ((va & 3) * 8);
        let raw = match chan_bytes {
            1 => word & 0xff,
            2 => word & 0xffff,
            _ => word,
        };
        let sext = |v: u32, n: u32| ((v << (32 - n)) as i32) >> (32 - n);
        let nbits = 8 * chan_bytes as u32;
        Ok(match (dtype, chan_bytes) {
            (7, 4) => f32::from_bits(raw),
            (7, 2) => half_to_f32(raw as u16),
            (4, _) => raw as f32,
            (3, _) => sext(raw, nbits) as f32,
            (2, 1 | 2) => raw as f32 / ((1u32 << nbits) - 1) as f32,
            (1, 1 | 2) => (sext(raw, nbits) as f32 / ((1u32 << (nbits - 1)) - 1) as f32).max(-1.0),
            (d, b) => {
                return Err(err(format!(
                    "texture {handle}: data type {d} with {b}-byte channels is not modelled"
                )))
            }
        })
    }
}

fn half_to_f32(h: u16) -> f32 {
    let s = u32::from(h >> 15) << 31;
    let e = u32::from((h >> 10) & 0x1f);
    let m = u32::from(h & 0x3ff);
    let bits = match (e, m) {
        (0, 0) => s,
        (0, m) => {
            // Subnormal: normalise.
            let shift = m.leading_zeros() - 21;
            s | ((113 - shift) << 23) | ((m << shift) & 0x3ff) << 13
        }
        (0x1f, m) => s | 0x7f80_0000 | (m << 13),
        (e, m) => s | ((e + 112) << 23) | (m << 13),
    };
    f32::from_bits(bits)
}

#[cfg(test)]
mod tests {
    use super::half_to_f32;

    #[test]
    fn halves() {
        assert_eq!(half_to_f32(0x3c00), 1.0);
        assert_eq!(half_to_f32(0xc000), -2.0);
        assert_eq!(half_to_f32(0x0001), 2f32.powi(-24));
        assert_eq!(half_to_f32(0x7bff), 65504.0);
    }
}
