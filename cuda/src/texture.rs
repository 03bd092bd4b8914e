//! Texture objects (`cuTexObjectCreate`, `Destroy`, `GetResourceDesc`, `GetTextureDesc`,
//! `GetResourceViewDesc`) on libtegragpu's `Texture`: linear and pitch-2D resources over device
//! memory of this library and arrays (crate::arrays: pitch-linear memory), 1, 2 or 4 channels of
//! 8-, 16- or 32-bit integers, half or float. Mipmapped arrays and resource views are refused
//! (`CUDA_ERROR_NOT_SUPPORTED`).
//!
//! The handle (`CUtexObject`) is the value kernels receive; handles are per device, so
//! `cuTexObjectDestroy` and the queries look the handle up on the current context's device.

use crate::context::current;
use crate::device::out;
use crate::error::{fail, guard, invalid, R};
use crate::memory::find_va;
use crate::types::*;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::ffi::c_void;
use tegragpu::core::{AddressMode, TexDesc, TexFormat, TexLayout, Texture};

/// `CUDA_RESOURCE_DESC`: a type, a 128-byte union, flags.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ResourceDesc {
    pub res_type: u32,
    pub res: [u64; 16],
    pub flags: u32,
}

/// `CUDA_TEXTURE_DESC`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct TextureDesc {
    pub address_mode: [u32; 3],
    pub filter_mode: u32,
    pub flags: u32,
    pub max_anisotropy: u32,
    pub mipmap_filter_mode: u32,
    pub mipmap_level_bias: f32,
    pub min_mipmap_level_clamp: f32,
    pub max_mipmap_level_clamp: f32,
    pub border_color: [f32; 4],
    pub reserved: [i32; 12],
}

const CU_RESOURCE_TYPE_ARRAY: u32 = 0;
const CU_RESOURCE_TYPE_MIPMAPPED_ARRAY: u32 = 1;
const CU_RESOURCE_TYPE_LINEAR: u32 = 2;
const CU_RESOURCE_TYPE_PITCH2D: u32 = 3;

const CU_TRSF_READ_AS_INTEGER: u32 = 1;
const CU_TRSF_NORMALIZED_COORDINATES: u32 = 2;

struct Entry {
    _tex: Texture,
    res: ResourceDesc,
    desc: TextureDesc,
}

/// The live textures, by (device ordinal, handle).
static TEXTURES: Mutex<Option<HashMap<(i32, u64), Entry>>> = Mutex::new(None);

/// A `CUarray_format` as libtegragpu's channel type.
fn format(f: u32) -> R<TexFormat> {
    Ok(match f {
        0x01 => TexFormat::U8,
        0x02 => TexFormat::U16,
        0x03 => TexFormat::U32,
        0x08 => TexFormat::S8,
        0x09 => TexFormat::S16,
        0x0a => TexFormat::S32,
        0x10 => TexFormat::F16,
        0x20 => TexFormat::F32,
        f => {
            return Err(fail(
                CUDA_ERROR_NOT_SUPPORTED,
                format!("array format {f:#x} is not supported for textures"),
            ))
        }
    })
}

fn address_mode(m: u32) -> R<AddressMode> {
    Ok(match m {
        0 => AddressMode::Wrap,
        1 => AddressMode::Clamp,
        2 => AddressMode::Mirror,
        3 => AddressMode::Border,
        m => return Err(invalid(format!("address mode {m}"))),
    })
}

unsafe fn create(
    ptex: *mut u64,
    res: *const ResourceDesc,
    desc: *const TextureDesc,
    view: *const c_void,
) -> R {
    let o = out(ptex, "pTexObject")?;
    let c = current()?;
    let res = *res.as_ref().ok_or_else(|| invalid("pResDesc is NULL"))?;
    let desc = *desc.as_ref().ok_or_else(|| invalid("pTexDesc is NULL"))?;
    if !view.is_null() {
        return Err(fail(
            CUDA_ERROR_NOT_SUPPORTED,
            "resource views (pResViewDesc) are not supported",
        ));
    }
    let r = &res.res;
    let (buf, layout, fmt, channels) = if res.res_type == CU_RESOURCE_TYPE_ARRAY {
        // An array (crate::arrays) is pitch-linear memory of its own buffer.
        let a = crate::arrays::lookup("res.array.hArray", r[0] as *mut c_void)?;
        if !std::ptr::eq(a.ctx.dev, c.dev) {
            return Err(invalid(format!(
                "res.array.hArray is an array of device {}, not of the current context's device {}",
                a.ctx.dev.ordinal, c.dev.ordinal
            )));
        }
        let layout = TexLayout::Pitch2d {
            address: 0,
            width: a.desc.width as u64,
            height: a.rows(),
            pitch: a.pitch,
        };
        (a.buf.clone(), layout, a.desc.format, a.desc.channels)
    } else {
        let (dptr, fmt, channels) = (r[0], r[1] as u32, (r[1] >> 32) as u32);
        let layout = match res.res_type {
            CU_RESOURCE_TYPE_MIPMAPPED_ARRAY => {
                return Err(fail(
                    CUDA_ERROR_NOT_SUPPORTED,
                    "mipmapped arrays are not supported by this library: use an array, a linear or a pitch-2D resource",
                ))
            }
            CU_RESOURCE_TYPE_LINEAR => {
                let elem = format(fmt)?.bytes() * u64::from(channels.max(1));
                TexLayout::Linear {
                    address: 0,
                    width: r[2] / elem,
                }
            }
            CU_RESOURCE_TYPE_PITCH2D => TexLayout::Pitch2d {
                address: 0,
                width: r[2],
                height: r[3],
                pitch: r[4],
            },
            t => return Err(invalid(format!("resource type {t}"))),
        };
        let (alloc, off) = find_va(dptr).ok_or_else(|| {
            invalid(format!(
                "devPtr {dptr:#x} is not device memory allocated by this library"
            ))
        })?;
        if !std::ptr::eq(alloc.ctx.dev, c.dev) {
            return Err(invalid(format!(
                "devPtr {dptr:#x} is memory of device {}, not of the current context's device {}",
                alloc.ctx.dev.ordinal, c.dev.ordinal
            )));
        }
        let layout = match layout {
            // As NVIDIA's, a linear resource may name more bytes than its allocation holds
            // past devPtr (the sample convolutionFFT2D does); here the texture ends with the
            // allocation, and reads past it give 0.
            TexLayout::Linear { width, .. } => {
                let elem = format(fmt)?.bytes() * u64::from(channels.max(1));
                TexLayout::Linear {
                    address: off,
                    width: width.min(alloc.size.saturating_sub(off) / elem),
                }
            }
            TexLayout::Pitch2d {
                width,
                height,
                pitch,
                ..
            } => TexLayout::Pitch2d {
                address: off,
                width,
                height,
                pitch,
            },
        };
        (alloc.buf.clone(), layout, fmt, channels)
    };
    let fm = format(fmt)?;
    let small_int = !matches!(fm, TexFormat::F16 | TexFormat::F32) && fm.bytes() < 4;
    let normalized_coords = desc.flags & CU_TRSF_NORMALIZED_COORDINATES != 0;
    // Wrap and mirror are for normalized coordinates. NVIDIA's libcuda takes them with
    // unnormalized ones and clamps (the samples convolutionTexture and dct8x8 ask for wrap and
    // check against clamping); libtegragpu's texture rules refuse them, so clamp here.
    let mode = |m: u32| -> R<AddressMode> {
        Ok(match address_mode(m)? {
            AddressMode::Wrap | AddressMode::Mirror if !normalized_coords => AddressMode::Clamp,
            a => a,
        })
    };
    let td = TexDesc {
        layout,
        format: fm,
        channels,
        read_normalized_float: small_int && desc.flags & CU_TRSF_READ_AS_INTEGER == 0,
        normalized_coords,
        linear_filter: match desc.filter_mode {
            0 => false,
            1 => true,
            m => return Err(invalid(format!("filter mode {m}"))),
        },
        address: [mode(desc.address_mode[0])?, mode(desc.address_mode[1])?],
        border: desc.border_color,
    };
    let tex = c.core.create_texture(buf, &td)?;
    let h = tex.handle();
    TEXTURES.lock().get_or_insert_with(HashMap::new).insert(
        (c.dev.ordinal, h),
        Entry {
            _tex: tex,
            res,
            desc,
        },
    );
    *o = h;
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuTexObjectCreate(
    ptex: *mut u64,
    res: *const ResourceDesc,
    desc: *const TextureDesc,
    view: *const c_void,
) -> CUresult {
    guard("cuTexObjectCreate", || create(ptex, res, desc, view))
}

/// Run `f` on the texture `h` of the current context's device.
fn with_texture<T>(h: u64, f: impl FnOnce(&Entry) -> T) -> R<T> {
    let c = current()?;
    let g = TEXTURES.lock();
    let e = g
        .as_ref()
        .and_then(|m| m.get(&(c.dev.ordinal, h)))
        .ok_or_else(|| {
            fail(
                CUDA_ERROR_INVALID_VALUE,
                format!("{h} is not a texture object of device {}", c.dev.ordinal),
            )
        })?;
    Ok(f(e))
}

#[no_mangle]
pub unsafe extern "C" fn cuTexObjectDestroy(h: u64) -> CUresult {
    guard("cuTexObjectDestroy", || {
        let c = current()?;
        // Dropped: libtegragpu reuses the handle once the work submitted before has completed.
        let e = TEXTURES
            .lock()
            .as_mut()
            .and_then(|m| m.remove(&(c.dev.ordinal, h)));
        match e {
            Some(_) => Ok(()),
            None => Err(invalid(format!(
                "{h} is not a texture object of device {}",
                c.dev.ordinal
            ))),
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuTexObjectGetResourceDesc(p: *mut ResourceDesc, h: u64) -> CUresult {
    guard("cuTexObjectGetResourceDesc", || {
        let o = out(p, "pResDesc")?;
        *o = with_texture(h, |e| e.res)?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuTexObjectGetTextureDesc(p: *mut TextureDesc, h: u64) -> CUresult {
    guard("cuTexObjectGetTextureDesc", || {
        let o = out(p, "pTexDesc")?;
        *o = with_texture(h, |e| e.desc)?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuTexObjectGetResourceViewDesc(_p: *mut c_void, h: u64) -> CUresult {
    guard("cuTexObjectGetResourceViewDesc", || {
        with_texture(h, |_| ())?;
        Err(fail(
            CUDA_ERROR_NOT_SUPPORTED,
            "resource views are not supported: the texture has none",
        ))
    })
}
