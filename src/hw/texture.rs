//! Texture headers (TIC) and texture samplers (TSC) for CUDA-style texture objects.
//!
//! Each entry is 32 bytes (8 little-endian dwords). A texture object's handle is its index `i`
//! in the header pool; the sampler lives at the same index of the sampler pool (QMD
//! SAMPLER_INDEX = VIA_HEADER_INDEX, as libcuda launches: its handles are 1, 2, 3, ...).
//!
//! Layouts, with bit numbers `MW(hi:lo)` over the 8 dwords, from NVIDIA's class headers:
//! - Ampere and earlier (`clc797tex.h`): `TEXHEAD_1D` (1-D buffer) and `TEXHEAD_PITCH`.
//! - Hopper and later (`clcb97tex.h`, `clcd97tex.h`): `TEXHEAD_V2_1DRT` and `TEXHEAD_V2_PITCH`,
//!   selected with SET_TEXTURE_HEADER_VERSION 1 on the compute class, as NVIDIA's own Hopper
//!   code does.
//! - Samplers (`TEXSAMP0..7`) are the same on every architecture.
//!
//! Encoding is pure: it checks the values against the fields and returns the 8 dwords.

use crate::error::{Error, Result};

/// Bytes per header or sampler entry.
pub const ENTRY_BYTES: u64 = 32;
/// Required alignment of a texture's base address and row pitch.
pub const TEXTURE_ALIGN: u64 = 32;
/// Largest 1-D linear texture, in elements (CUDA's maxTexture1DLinear on sm_80+: 2^28).
pub const MAX_LINEAR_WIDTH: u64 = 1 << 28;
/// Largest pitch-linear 2-D texture: width, height (elements) and pitch (bytes), as CUDA's
/// maxTexture2DLinear (131072 x 65000, pitch 2^21 - 32).
pub const MAX_PITCH2D_WIDTH: u64 = 131_072;
pub const MAX_PITCH2D_HEIGHT: u64 = 65_000;
pub const MAX_PITCH2D_PITCH: u64 = (1 << 21) - 32;

/// Element type of one channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TexFormat {
    U8,
    S8,
    U16,
    S16,
    U32,
    S32,
    F16,
    F32,
}

impl TexFormat {
    /// Bytes per channel.
    pub fn bytes(self) -> u64 {
        match self {
            TexFormat::U8 | TexFormat::S8 => 1,
            TexFormat::U16 | TexFormat::S16 | TexFormat::F16 => 2,
            TexFormat::U32 | TexFormat::S32 | TexFormat::F32 => 4,
        }
    }
    fn is_float(self) -> bool {
        matches!(self, TexFormat::F16 | TexFormat::F32)
    }
    fn is_signed(self) -> bool {
        matches!(self, TexFormat::S8 | TexFormat::S16 | TexFormat::S32)
    }
}

/// Sampler address mode for coordinates outside the texture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressMode {
    Wrap,
    Clamp,
    Mirror,
    Border,
}

/// Memory layout of the texture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TexLayout {
    /// `width` elements at `address` (`tex1Dfetch`).
    Linear { address: u64, width: u64 },
    /// `height` rows of `width` elements, rows `pitch` bytes apart (`tex2D`).
    Pitch2d {
        address: u64,
        width: u64,
        height: u64,
        pitch: u64,
    },
}

/// Everything the header and sampler encode.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TexDesc {
    pub layout: TexLayout,
    pub format: TexFormat,
    /// 1, 2 or 4.
    pub channels: u32,
    /// 8- and 16-bit integer data reads as floats in [0, 1] (unsigned) or [-1, 1] (signed).
    pub read_normalized_float: bool,
    /// Coordinates in [0, 1) instead of [0, width) (2-D only).
    pub normalized_coords: bool,
    /// Bilinear filtering instead of nearest-point sampling (2-D, float results only).
    pub linear_filter: bool,
    /// Address modes for x and y.
    pub address: [AddressMode; 2],
    /// Border color (RGBA) for [`AddressMode::Border`].
    pub border: [f32; 4],
}

// TEXHEAD (clc797tex.h) per-channel data types.
const DT_SNORM: u32 = 1;
const DT_UNORM: u32 = 2;
const DT_SINT: u32 = 3;
const DT_UINT: u32 = 4;
const DT_FLOAT: u32 = 7;
// TEXHEAD_V2 (clcb97tex.h) data types.
const DT2_UNORM: u32 = 0;
const DT2_SNORM: u32 = 1;
const DT2_FLOAT: u32 = 2;
const DT2_UINT: u32 = 6;
const DT2_SINT: u32 = 7;
// Channel sources.
const SRC_ZERO: u32 = 0;
const SRC_R: u32 = 2;
// COMPONENTS (sizes).
const C_R32_G32_B32_A32: u32 = 0x01;
const C_R16_G16_B16_A16: u32 = 0x03;
const C_R32_G32: u32 = 0x04;
const C_A8B8G8R8: u32 = 0x08;
const C_R16_G16: u32 = 0x0c;
const C_R32: u32 = 0x0f;
const C_G8R8: u32 = 0x18;
const C_R16: u32 = 0x1b;
const C_R8: u32 = 0x1d;
// HEADER_VERSION.
const HV_ONE_D_BUFFER: u32 = 0;
const HV_PITCH: u32 = 2;
const HV2_PITCH: u32 = 2;
const HV2_ONE_D_RAW_TYPED: u32 = 5;
// TEXTURE_TYPE.
const TT_ONE_D_BUFFER: u32 = 6;
const TT_TWO_D_NO_MIPMAP: u32 = 7;
// TEXHEAD_PITCH BORDER_SIZE_BORDER_SAMPLER_COLOR; TEXHEAD_V2 BORDER_SOURCE_BORDER_COLOR.
const BORDER_SIZE_SAMPLER_COLOR: u32 = 7;
const BORDER_SOURCE_COLOR: u32 = 1;
// TEXSAMP.
const ADDR_WRAP: u32 = 0;
const ADDR_MIRROR: u32 = 1;
const ADDR_CLAMP_TO_EDGE: u32 = 2;
const ADDR_BORDER: u32 = 3;
const FILTER_POINT: u32 = 1;
const FILTER_LINEAR: u32 = 2;
const MIP_FILTER_NONE: u32 = 1;

/// Set bits `hi:lo` (absolute bit numbers over the 8 dwords) to `v`.
fn put(w: &mut [u32; 8], hi: u32, lo: u32, v: u64) {
    debug_assert!(hi >= lo && hi - lo < 64 && hi / 32 < 8);
    for bit in lo..=hi {
        if (v >> (bit - lo)) & 1 != 0 {
            w[(bit / 32) as usize] |= 1 << (bit % 32);
        }
    }
}

/// COMPONENTS for (`format`, `channels`).
fn components(format: TexFormat, channels: u32) -> u32 {
    match (format.bytes(), channels) {
        (4, 1) => C_R32,
        (4, 2) => C_R32_G32,
        (4, _) => C_R32_G32_B32_A32,
        (2, 1) => C_R16,
        (2, 2) => C_R16_G16,
        (2, _) => C_R16_G16_B16_A16,
        (_, 1) => C_R8,
        (_, 2) => C_G8R8,
        _ => C_A8B8G8R8,
    }
}

/// Whether a fetch returns floats.
fn returns_float(d: &TexDesc) -> bool {
    d.format.is_float() || d.read_normalized_float
}

/// X/Y/Z/W sources: the texture's channels, then 0 for every missing channel, alpha included
/// (what libcuda's textures return: a one-channel float texture read as `float4` gives
/// (r, 0, 0, 0) on the H100).
fn sources(d: &TexDesc) -> [u32; 4] {
    let mut s = [SRC_ZERO; 4];
    for (i, v) in s.iter_mut().enumerate().take(d.channels as usize) {
        *v = SRC_R + i as u32;
    }
    s
}

/// Check `d` against the hardware fields and CUDA's rules for texture objects.
pub fn check(d: &TexDesc) -> Result<()> {
    if !matches!(d.channels, 1 | 2 | 4) {
        return Err(Error::invalid(format!(
            "channels {} is not 1, 2 or 4",
            d.channels
        )));
    }
    if d.read_normalized_float && d.format.bytes() == 4 {
        return Err(Error::invalid(format!(
            "read_normalized_float needs an 8- or 16-bit integer format, not {:?}",
            d.format
        )));
    }
    if d.read_normalized_float && d.format == TexFormat::F16 {
        return Err(Error::invalid(
            "read_normalized_float needs an integer format, not F16",
        ));
    }
    let elem = d.format.bytes() * u64::from(d.channels);
    let (TexLayout::Linear { address, .. } | TexLayout::Pitch2d { address, .. }) = d.layout;
    if address % TEXTURE_ALIGN != 0 {
        return Err(Error::invalid(format!(
            "address {address:#x} is not {TEXTURE_ALIGN}-byte aligned"
        )));
    }
    match d.layout {
        TexLayout::Linear { width, .. } => {
            if width == 0 || width > MAX_LINEAR_WIDTH {
                return Err(Error::invalid(format!(
                    "width {width} elements is outside 1..={MAX_LINEAR_WIDTH}"
                )));
            }
        }
        TexLayout::Pitch2d {
            width,
            height,
            pitch,
            ..
        } => {
            if width == 0 || width > MAX_PITCH2D_WIDTH {
                return Err(Error::invalid(format!(
                    "width {width} is outside 1..={MAX_PITCH2D_WIDTH}"
                )));
            }
            if height == 0 || height > MAX_PITCH2D_HEIGHT {
                return Err(Error::invalid(format!(
                    "height {height} is outside 1..={MAX_PITCH2D_HEIGHT}"
                )));
            }
            if pitch % TEXTURE_ALIGN != 0 || pitch > MAX_PITCH2D_PITCH {
                return Err(Error::invalid(format!(
                    "pitch_bytes {pitch} must be a multiple of {TEXTURE_ALIGN} and at most {MAX_PITCH2D_PITCH}"
                )));
            }
            if pitch < width * elem {
                return Err(Error::invalid(format!(
                    "pitch_bytes {pitch} is less than a row: width {width} x {elem} bytes"
                )));
            }
            if !d.normalized_coords
                && d.address
                    .iter()
                    .any(|m| matches!(m, AddressMode::Wrap | AddressMode::Mirror))
            {
                return Err(Error::invalid(format!(
                    "address modes {:?}: wrap and mirror need normalized coordinates (as in CUDA)",
                    d.address
                )));
            }
            if d.linear_filter && !returns_float(d) {
                return Err(Error::invalid(format!(
                    "linear filtering returns floats: it needs a float format or \
                     read_normalized_float, not {:?} read as integers",
                    d.format
                )));
            }
        }
    }
    Ok(())
}

/// The texture header for `d` (`v2`: Hopper's TEXHEAD_V2 layouts). `d` must pass [`check`].
pub fn encode_tic(d: &TexDesc, v2: bool) -> Result<[u32; 8]> {
    check(d)?;
    let mut w = [0u32; 8];
    let comps = components(d.format, d.channels);
    let s = sources(d);
    let norm = d.read_normalized_float;
    if v2 {
        let dt = match (d.format.is_float(), d.format.is_signed(), norm) {
            (true, _, _) => DT2_FLOAT,
            (false, true, true) => DT2_SNORM,
            (false, false, true) => DT2_UNORM,
            (false, true, false) => DT2_SINT,
            (false, false, false) => DT2_UINT,
        };
        // X/Y/Z/W_SOURCE 107:96, DATA_TYPE 111:108, HEADER_VERSION 127:124 (both layouts).
        for (i, v) in s.iter().enumerate() {
            let lo = 96 + 3 * i as u32;
            put(&mut w, lo + 2, lo, u64::from(*v));
        }
        put(&mut w, 111, 108, u64::from(dt));
        match d.layout {
            TexLayout::Linear { address, width } => {
                put(&mut w, 63, 0, address); // ADDRESS_BITS31TO0, ADDRESS_BITS63TO32
                put(&mut w, 95, 64, width - 1); // WIDTH_MINUS_ONE
                put(&mut w, 117, 112, u64::from(comps)); // COMPONENTS
                put(&mut w, 127, 124, u64::from(HV2_ONE_D_RAW_TYPED));
            }
            TexLayout::Pitch2d {
                address,
                width,
                height,
                pitch,
            } => {
                put(&mut w, 31, 5, (address >> 5) & 0x7FF_FFFF); // ADDRESS_BITS31TO5
                put(&mut w, 56, 32, address >> 32); // ADDRESS_BITS56TO32
                put(&mut w, 80, 64, pitch >> 5); // PITCH_BITS21TO5
                put(&mut w, 118, 112, u64::from(comps)); // COMPONENTS
                put(&mut w, 127, 124, u64::from(HV2_PITCH));
                put(&mut w, 144, 128, width - 1); // WIDTH_MINUS_ONE
                put(&mut w, 145, 145, u64::from(d.normalized_coords)); // NORMALIZED_COORDS
                put(&mut w, 153, 150, u64::from(TT_TWO_D_NO_MIPMAP)); // TEXTURE_TYPE
                put(&mut w, 156, 156, u64::from(BORDER_SOURCE_COLOR)); // BORDER_SOURCE
                put(&mut w, 176, 160, height - 1); // HEIGHT_MINUS_ONE
            }
        }
    } else {
        let dt = match (d.format.is_float(), d.format.is_signed(), norm) {
            (true, _, _) => DT_FLOAT,
            (false, true, true) => DT_SNORM,
            (false, false, true) => DT_UNORM,
            (false, true, false) => DT_SINT,
            (false, false, false) => DT_UINT,
        };
        put(&mut w, 6, 0, u64::from(comps)); // COMPONENTS
        for c in 0..4 {
            put(&mut w, 9 + 3 * c, 7 + 3 * c, u64::from(dt)); // R/G/B/A_DATA_TYPE
        }
        for (i, v) in s.iter().enumerate() {
            let lo = 19 + 3 * i as u32;
            put(&mut w, lo + 2, lo, u64::from(*v)); // X/Y/Z/W_SOURCE
        }
        match d.layout {
            TexLayout::Linear { address, width } => {
                put(&mut w, 63, 32, address & 0xFFFF_FFFF); // ADDRESS_BITS31TO0
                put(&mut w, 80, 64, address >> 32); // ADDRESS_BITS48TO32
                put(&mut w, 87, 85, u64::from(HV_ONE_D_BUFFER));
                put(&mut w, 111, 96, (width - 1) >> 16); // WIDTH_MINUS_ONE_BITS31TO16
                put(&mut w, 143, 128, (width - 1) & 0xFFFF); // WIDTH_MINUS_ONE_BITS15TO0
                put(&mut w, 154, 151, u64::from(TT_ONE_D_BUFFER)); // TEXTURE_TYPE
            }
            TexLayout::Pitch2d {
                address,
                width,
                height,
                pitch,
            } => {
                put(&mut w, 63, 37, (address >> 5) & 0x7FF_FFFF); // ADDRESS_BITS31TO5
                put(&mut w, 80, 64, address >> 32); // ADDRESS_BITS48TO32
                put(&mut w, 87, 85, u64::from(HV_PITCH));
                put(&mut w, 111, 96, (pitch >> 5) & 0xFFFF); // PITCH_BITS20TO5
                put(&mut w, 144, 128, width - 1); // WIDTH_MINUS_ONE
                put(&mut w, 145, 145, pitch >> 21); // PITCH_BIT21
                put(&mut w, 146, 146, (height - 1) >> 16); // HEIGHT_MINUS_ONE_BIT16
                put(&mut w, 154, 151, u64::from(TT_TWO_D_NO_MIPMAP)); // TEXTURE_TYPE
                put(&mut w, 159, 157, u64::from(BORDER_SIZE_SAMPLER_COLOR)); // BORDER_SIZE
                put(&mut w, 175, 160, (height - 1) & 0xFFFF); // HEIGHT_MINUS_ONE
                put(&mut w, 191, 191, u64::from(d.normalized_coords)); // NORMALIZED_COORDS
            }
        }
    }
    Ok(w)
}

/// The sampler for `d` (the same on every architecture).
pub fn encode_tsc(d: &TexDesc) -> [u32; 8] {
    let mut w = [0u32; 8];
    let mode = |m: AddressMode| match m {
        AddressMode::Wrap => ADDR_WRAP,
        AddressMode::Mirror => ADDR_MIRROR,
        AddressMode::Clamp => ADDR_CLAMP_TO_EDGE,
        AddressMode::Border => ADDR_BORDER,
    };
    put(&mut w, 2, 0, u64::from(mode(d.address[0]))); // ADDRESS_U
    put(&mut w, 5, 3, u64::from(mode(d.address[1]))); // ADDRESS_V
    put(&mut w, 8, 6, u64::from(ADDR_CLAMP_TO_EDGE)); // ADDRESS_P
    let f = if d.linear_filter {
        FILTER_LINEAR
    } else {
        FILTER_POINT
    };
    put(&mut w, 34, 32, u64::from(f)); // MAG_FILTER
    put(&mut w, 37, 36, u64::from(f)); // MIN_FILTER
    put(&mut w, 39, 38, u64::from(MIP_FILTER_NONE)); // MIP_FILTER
                                                     // FLOAT_COORD_NORMALIZATION: FORCE_UNNORMALIZED_COORDS unless normalized.
    put(&mut w, 57, 57, u64::from(!d.normalized_coords));
    for (i, c) in d.border.iter().enumerate() {
        let lo = 128 + 32 * i as u32;
        put(&mut w, lo + 31, lo, u64::from(c.to_bits())); // BORDER_COLOR_R/G/B/A
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    fn linear(format: TexFormat, channels: u32, address: u64, width: u64) -> TexDesc {
        TexDesc {
            layout: TexLayout::Linear { address, width },
            format,
            channels,
            read_normalized_float: false,
            normalized_coords: false,
            linear_filter: false,
            address: [AddressMode::Clamp; 2],
            border: [0.0; 4],
        }
    }

    #[test]
    fn r32_float_buffer_headers() {
        // R32_FLOAT, n = 70000, from the clc797tex.h / clcb97tex.h field values.
        let d = linear(TexFormat::F32, 1, 0x12_3456_7800, 70_000);
        let w = encode_tic(&d, false).unwrap();
        assert_eq!(w[0], 0x0017_ff8f);
        assert_eq!(w[1], 0x3456_7800);
        assert_eq!(w[2], 0x12);
        assert_eq!(w[3], (70_000 - 1) >> 16);
        assert_eq!(w[4], 0x0300_0000 | ((70_000 - 1) & 0xFFFF)); // ONE_D_BUFFER, no promotion
        assert_eq!(&w[5..], &[0, 0, 0]);
        let w = encode_tic(&d, true).unwrap();
        assert_eq!(w[0], 0x3456_7800);
        assert_eq!(w[1], 0x12);
        assert_eq!(w[2], 70_000 - 1);
        assert_eq!(w[3], 0x500F_2002);
        assert_eq!(&w[4..], &[0, 0, 0, 0]);
    }

    #[test]
    fn pitch_header_fields() {
        let d = TexDesc {
            layout: TexLayout::Pitch2d {
                address: 0x1_0000_0040,
                width: 100,
                height: 70_000.min(MAX_PITCH2D_HEIGHT),
                pitch: 1 << 21 >> 1,
            },
            format: TexFormat::U8,
            channels: 4,
            read_normalized_float: true,
            normalized_coords: true,
            linear_filter: true,
            address: [AddressMode::Wrap, AddressMode::Border],
            border: [1.0, 0.0, 0.0, 0.5],
        };
        let w = encode_tic(&d, false).unwrap();
        assert_eq!(w[0] & 0x7f, C_A8B8G8R8);
        assert_eq!((w[0] >> 7) & 7, DT_UNORM);
        assert_eq!((w[0] >> 19) & 0xFFF, 2 | 3 << 3 | 4 << 6 | 5 << 9);
        assert_eq!(w[1], 0x40);
        assert_eq!(w[2], 1 | HV_PITCH << 21);
        assert_eq!(w[3], (1 << 20) >> 5);
        assert_eq!(w[4] & 0x1FFFF, 99);
        assert_eq!((w[4] >> 23) & 0xF, TT_TWO_D_NO_MIPMAP);
        assert_eq!(w[5], (MAX_PITCH2D_HEIGHT as u32 - 1) | 1 << 31);
        let t = encode_tsc(&d);
        assert_eq!(t[0], ADDR_WRAP | ADDR_BORDER << 3 | ADDR_CLAMP_TO_EDGE << 6);
        assert_eq!(t[1], 0x62);
        assert_eq!(t[4], 1.0f32.to_bits());
        assert_eq!(t[7], 0.5f32.to_bits());
        let w2 = encode_tic(&d, true).unwrap();
        assert_eq!(w2[0], 0x40);
        assert_eq!(w2[1], 1);
        assert_eq!(w2[2], (1 << 20) >> 5);
        assert_eq!(w2[3] >> 28, HV2_PITCH);
        assert_eq!((w2[3] >> 12) & 0xF, DT2_UNORM);
        assert_eq!(w2[4], 99 | 1 << 17 | TT_TWO_D_NO_MIPMAP << 22 | 1 << 28);
        assert_eq!(w2[5], MAX_PITCH2D_HEIGHT as u32 - 1);
    }

    #[test]
    fn point_unnormalized_sampler() {
        let t = encode_tsc(&linear(TexFormat::S32, 2, 0, 4));
        assert_eq!(t[1], 0x51 | 1 << 25);
    }

    #[test]
    fn refuses_what_does_not_fit() {
        let ok = linear(TexFormat::F32, 1, 0x1000, 16);
        assert!(check(&ok).is_ok());
        for bad in [
            TexDesc { channels: 3, ..ok },
            linear(TexFormat::F32, 1, 0x1010, 16),
            linear(TexFormat::F32, 1, 0x1000, 0),
            linear(TexFormat::F32, 1, 0x1000, MAX_LINEAR_WIDTH + 1),
            TexDesc {
                read_normalized_float: true,
                ..ok
            },
        ] {
            assert!(encode_tic(&bad, false).is_err(), "{bad:?}");
        }
        let p = |width, height, pitch| TexDesc {
            layout: TexLayout::Pitch2d {
                address: 0,
                width,
                height,
                pitch,
            },
            ..ok
        };
        assert!(check(&p(8, 8, 32)).is_ok());
        assert!(check(&p(9, 8, 32)).is_err()); // a row is 36 bytes
        assert!(check(&p(8, 8, 48)).is_err()); // pitch not 32-aligned
        assert!(check(&p(8, 0, 32)).is_err());
        assert!(check(&p(8, MAX_PITCH2D_HEIGHT + 1, 32)).is_err());
        let wrap = TexDesc {
            address: [AddressMode::Clamp, AddressMode::Wrap],
            ..p(8, 8, 32)
        };
        assert!(check(&wrap).is_err());
        assert!(check(&TexDesc {
            normalized_coords: true,
            ..wrap
        })
        .is_ok());
        let int_linear = TexDesc {
            format: TexFormat::U16,
            linear_filter: true,
            ..p(8, 8, 32)
        };
        assert!(check(&int_linear).is_err());
        assert!(check(&TexDesc {
            read_normalized_float: true,
            ..int_linear
        })
        .is_ok());
    }
}
