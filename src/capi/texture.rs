//! `tg_texture_*`: texture objects over buffer memory (`cudaTextureObject_t` kernel parameters).

use super::boundary::{buffer, null, out_ptr, register, run};
use super::handles::{self, Kind, Object};
use super::{tg_buf, tg_status, tg_texture};
use crate::core::{AddressMode, TexDesc, TexFormat, TexLayout};
use crate::error::{Error, Result, Status};
use std::sync::Arc;

/// `tg_texture_desc.kind`: `width` elements in a row (`tex1Dfetch(tex, i)`, integer index).
pub const TG_TEXTURE_LINEAR: u32 = 1;
/// `tg_texture_desc.kind`: `height` rows of `width` elements, `pitch_bytes` apart
/// (`tex2D(tex, x, y)`; CUDA's `CU_RESOURCE_TYPE_PITCH2D`).
pub const TG_TEXTURE_PITCH2D: u32 = 2;

/// `tg_texture_desc.format`: unsigned 8-bit channels.
pub const TG_TEXTURE_FORMAT_U8: u32 = 0;
/// Signed 8-bit channels.
pub const TG_TEXTURE_FORMAT_S8: u32 = 1;
/// Unsigned 16-bit channels.
pub const TG_TEXTURE_FORMAT_U16: u32 = 2;
/// Signed 16-bit channels.
pub const TG_TEXTURE_FORMAT_S16: u32 = 3;
/// Unsigned 32-bit channels.
pub const TG_TEXTURE_FORMAT_U32: u32 = 4;
/// Signed 32-bit channels.
pub const TG_TEXTURE_FORMAT_S32: u32 = 5;
/// 16-bit float (`__half`) channels.
pub const TG_TEXTURE_FORMAT_F16: u32 = 6;
/// 32-bit float channels.
pub const TG_TEXTURE_FORMAT_F32: u32 = 7;

/// `tg_texture_desc.address_mode[i]`: repeat (`cudaAddressModeWrap`; 2-D textures need
/// `TG_TEXTURE_NORMALIZED_COORDS`, as in CUDA).
pub const TG_ADDRESS_WRAP: u32 = 0;
/// Clamp to the edge texel (`cudaAddressModeClamp`, the default).
pub const TG_ADDRESS_CLAMP: u32 = 1;
/// Mirror at every edge (`cudaAddressModeMirror`; needs `TG_TEXTURE_NORMALIZED_COORDS`).
pub const TG_ADDRESS_MIRROR: u32 = 2;
/// `border_color` outside the texture (`cudaAddressModeBorder`).
pub const TG_ADDRESS_BORDER: u32 = 3;

/// `tg_texture_desc.flags`: 8- and 16-bit integer data reads as floats in [0, 1] (unsigned) or
/// [-1, 1] (signed) (`cudaReadModeNormalizedFloat`); without it, integers read as integers.
pub const TG_TEXTURE_READ_NORMALIZED_FLOAT: u32 = 1;
/// Coordinates in [0, 1) across the texture instead of [0, width) (2-D textures).
pub const TG_TEXTURE_NORMALIZED_COORDS: u32 = 2;
/// Bilinear filtering (`cudaFilterModeLinear`) instead of the nearest texel (2-D textures whose
/// fetches return floats: float formats, or `TG_TEXTURE_READ_NORMALIZED_FLOAT`).
pub const TG_TEXTURE_LINEAR_FILTER: u32 = 4;

const TG_TEXTURE_KNOWN_FLAGS: u32 =
    TG_TEXTURE_READ_NORMALIZED_FLOAT | TG_TEXTURE_NORMALIZED_COORDS | TG_TEXTURE_LINEAR_FILTER;

/// What a texture object reads and how it samples (`tg_texture_create()`). Set
/// `struct_size = sizeof(tg_texture_desc)`; zero the fields you do not use.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tg_texture_desc {
    /// `sizeof(tg_texture_desc)`.
    pub struct_size: u32,
    /// `TG_TEXTURE_LINEAR` or `TG_TEXTURE_PITCH2D`.
    pub kind: u32,
    /// Channel type, `TG_TEXTURE_FORMAT_*`.
    pub format: u32,
    /// Channels per element: 1, 2 or 4 (`float`, `float2`, `float4`, ...).
    pub channels: u32,
    /// `TG_TEXTURE_*` flag bits.
    pub flags: u32,
    /// Address modes for x and y (`TG_ADDRESS_*`; y is ignored for linear textures, which read 0
    /// outside `[0, width)`).
    pub address_mode: [u32; 2],
    /// Color returned outside the texture with `TG_ADDRESS_BORDER` (RGBA).
    pub border_color: [f32; 4],
    /// Where the texture starts in the buffer, bytes (the GPU address must be 32-byte aligned).
    pub offset_bytes: u64,
    /// Elements per row (linear: at most 2^28; 2-D: at most 131072).
    pub width: u64,
    /// Rows (2-D only: 1 to 65000; 0 for linear textures).
    pub height: u64,
    /// Bytes from one row to the next (2-D only: a multiple of 32, at most 2^21 - 32, at least
    /// one row; 0 for linear textures).
    pub pitch_bytes: u64,
}

fn format(v: u32) -> Result<TexFormat> {
    Ok(match v {
        TG_TEXTURE_FORMAT_U8 => TexFormat::U8,
        TG_TEXTURE_FORMAT_S8 => TexFormat::S8,
        TG_TEXTURE_FORMAT_U16 => TexFormat::U16,
        TG_TEXTURE_FORMAT_S16 => TexFormat::S16,
        TG_TEXTURE_FORMAT_U32 => TexFormat::U32,
        TG_TEXTURE_FORMAT_S32 => TexFormat::S32,
        TG_TEXTURE_FORMAT_F16 => TexFormat::F16,
        TG_TEXTURE_FORMAT_F32 => TexFormat::F32,
        v => {
            return Err(Error::invalid(format!(
                "desc->format {v} is not a TG_TEXTURE_FORMAT_* value (0..=7)"
            )))
        }
    })
}

fn address_mode(i: usize, v: u32) -> Result<AddressMode> {
    Ok(match v {
        TG_ADDRESS_WRAP => AddressMode::Wrap,
        TG_ADDRESS_CLAMP => AddressMode::Clamp,
        TG_ADDRESS_MIRROR => AddressMode::Mirror,
        TG_ADDRESS_BORDER => AddressMode::Border,
        v => {
            return Err(Error::invalid(format!(
                "desc->address_mode[{i}] {v} is not a TG_ADDRESS_* value (0..=3)"
            )))
        }
    })
}

/// Read and check a texture description.
///
/// # Safety
/// `desc` is NULL or points to a `tg_texture_desc` whose first 4 bytes are `struct_size`.
unsafe fn texture_desc(desc: *const tg_texture_desc) -> Result<TexDesc> {
    if desc.is_null() {
        return Err(null("desc"));
    }
    let size = std::ptr::read_unaligned(desc as *const u32) as usize;
    let full = std::mem::size_of::<tg_texture_desc>();
    if size < full {
        return Err(Error::invalid(format!(
            "desc->struct_size is {size}; set it to sizeof(tg_texture_desc) ({full})"
        )));
    }
    let d = std::ptr::read_unaligned(desc);
    let unknown = d.flags & !TG_TEXTURE_KNOWN_FLAGS;
    if unknown != 0 {
        return Err(Error::invalid(format!(
            "desc->flags {:#x} has unknown bits {unknown:#x} (known: TG_TEXTURE_READ_NORMALIZED_FLOAT=1, \
             TG_TEXTURE_NORMALIZED_COORDS=2, TG_TEXTURE_LINEAR_FILTER=4)",
            d.flags
        )));
    }
    let layout = match d.kind {
        TG_TEXTURE_LINEAR => {
            if d.height != 0 || d.pitch_bytes != 0 {
                return Err(Error::invalid(format!(
                    "desc: a TG_TEXTURE_LINEAR texture has no height ({}) or pitch_bytes ({}); set them to 0",
                    d.height, d.pitch_bytes
                )));
            }
            TexLayout::Linear {
                address: d.offset_bytes,
                width: d.width,
            }
        }
        TG_TEXTURE_PITCH2D => TexLayout::Pitch2d {
            address: d.offset_bytes,
            width: d.width,
            height: d.height,
            pitch: d.pitch_bytes,
        },
        k => {
            return Err(Error::invalid(format!(
                "desc->kind {k} is neither TG_TEXTURE_LINEAR (1) nor TG_TEXTURE_PITCH2D (2)"
            )))
        }
    };
    Ok(TexDesc {
        layout,
        format: format(d.format)?,
        channels: d.channels,
        read_normalized_float: d.flags & TG_TEXTURE_READ_NORMALIZED_FLOAT != 0,
        normalized_coords: d.flags & TG_TEXTURE_NORMALIZED_COORDS != 0,
        linear_filter: d.flags & TG_TEXTURE_LINEAR_FILTER != 0,
        address: [
            address_mode(0, d.address_mode[0])?,
            address_mode(1, d.address_mode[1])?,
        ],
        border: d.border_color,
    })
}

/// Create a texture object over buffer memory.
///
/// - `buf`: the memory the texture reads; it stays allocated while the texture exists, even if
///   `tg_buf_free()` is called first. GPU writes to it become visible to texture fetches of
///   later launches.
/// - `desc`: layout, format and sampling (`tg_texture_desc`).
/// - `out`: receives the texture handle; `tg_texture_handle()` gives the value to pass as the
///   kernel's `cudaTextureObject_t` parameter.
///
/// A device holds up to 4095 texture objects at once; a destroyed one's slot is reused once the
/// work submitted before its destroy has completed.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`;
/// `TG_ERROR_INVALID_ARGUMENT` (`struct_size`, unknown kind, format, flags or address mode,
/// channels not 1/2/4, a range outside the buffer, misaligned offset or pitch, sizes beyond the
/// limits, linear filtering or normalized reads of formats that do not allow them);
/// `TG_ERROR_OUT_OF_MEMORY` (4095 textures alive); `TG_ERROR_DEVICE_FAULT`.
///
/// Ownership: the caller owns `*out` and releases it with `tg_texture_destroy()`.
/// Thread safety: any thread.
///
/// # Safety
/// `desc` is NULL or points to a `tg_texture_desc`; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tg_texture_create(
    buf: *const tg_buf,
    desc: *const tg_texture_desc,
    out: *mut *mut tg_texture,
) -> tg_status {
    run("tg_texture_create", || {
        let b = buffer(buf, "buf")?;
        let d = texture_desc(desc)?;
        let out = out_ptr(out, "out")?;
        let dev = b.device().clone();
        let t = dev.create_texture(b, &d)?;
        let h = register(Object::Texture(Arc::new(t)))?;
        out.write(h as *mut tg_texture);
        Ok(())
    })
}

/// The value a kernel receives as its `cudaTextureObject_t` (`unsigned long long`) parameter:
/// put it in the parameter block passed to `tg_launch()`. Handles are small integers (1, 2, ...),
/// as libcuda's are, and valid on every queue of the device.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`.
/// Thread safety: any thread.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tg_texture_handle(tex: *const tg_texture, out: *mut u64) -> tg_status {
    run("tg_texture_handle", || {
        let t = match handles::get(tex as usize, Kind::Texture, "tex")? {
            Object::Texture(t) => t,
            _ => return Err(Error::new(Status::Internal, "handle table kind mismatch")),
        };
        let out = out_ptr(out, "out")?;
        out.write_unaligned(t.handle());
        Ok(())
    })
}

/// Destroy a texture object. Launches submitted before this call may still read it; its slot
/// is reused, and the buffer freed if `tg_buf_free()` was called, once they have completed. Do
/// not launch kernels with the old value afterwards: the slot may by then describe another
/// texture or nothing. NULL is a no-op.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`. Thread safety: any thread; the handle must not be
/// used after this call.
///
/// # Safety
/// None beyond the handle contract.
#[no_mangle]
pub unsafe extern "C" fn tg_texture_destroy(tex: *mut tg_texture) -> tg_status {
    run("tg_texture_destroy", || {
        handles::remove(tex as usize, Kind::Texture, "tex").map(|_| ())
    })
}
