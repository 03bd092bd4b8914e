//! Typed wrappers over the RM escapes and UVM ioctls, all through [`crate::os::Sys`].
//!
//! Defence against layout drift (rm-kernel-interface.md §6.3): RM_ALLOC class parameters and
//! UVM parameter structs are copied into a zeroed 16 KiB scratch buffer before the call and
//! copied back from it afterwards, so a kernel struct larger than ours reads zeros and its
//! copy-out lands in scratch, never past our struct.

use crate::error::{Error, Result, Status};
use crate::os::Sys;
use crate::sys::rm::*;
use bytemuck::Pod;
use std::ffi::CString;
use std::os::fd::RawFd;
use std::sync::Arc;

/// Size of the scratch buffer for RM_ALLOC and UVM parameter blocks.
pub const SCRATCH_BYTES: usize = 16384;

/// A zeroed, 8-byte aligned heap buffer of [`SCRATCH_BYTES`].
struct Scratch(Box<[u64]>);

impl Scratch {
    fn new() -> Scratch {
        Scratch(vec![0u64; SCRATCH_BYTES / 8].into_boxed_slice())
    }
    fn ptr(&mut self) -> *mut u8 {
        self.0.as_mut_ptr().cast()
    }
    /// Copy `v` in (T must fit).
    fn put<T: Pod>(&mut self, v: &T) {
        const { assert!(core::mem::size_of::<T>() <= SCRATCH_BYTES) };
        let b = bytemuck::bytes_of(v);
        bytemuck::cast_slice_mut::<u64, u8>(&mut self.0)[..b.len()].copy_from_slice(b);
    }
    /// Copy the first `size_of::<T>()` bytes back into `v`.
    fn get<T: Pod>(&self, v: &mut T) {
        let b = bytemuck::bytes_of_mut(v);
        let n = b.len();
        b.copy_from_slice(&bytemuck::cast_slice::<u64, u8>(&self.0)[..n]);
    }
}

/// Open flags for every device node.
pub const OPEN_FLAGS: i32 = libc::O_RDWR | libc::O_CLOEXEC;

/// Open a device node through `sys`.
pub fn open_node(sys: &dyn Sys, path: &str) -> Result<RawFd> {
    let c = CString::new(path)
        .map_err(|_| Error::invalid(format!("device path {path:?} contains NUL")))?;
    sys.open(&c, OPEN_FLAGS)
        .map_err(|e| Error::os(format!("open({path})"), e))
}

/// Turn a non-zero RM status into an error naming the call.
pub fn rm_status_error(what: &str, status: u32) -> Error {
    let st = match status {
        NV_ERR_NO_MEMORY | 0x1A => Status::OutOfMemory,
        NV_ERR_NOT_SUPPORTED | NV_ERR_INVALID_CLASS => Status::NotSupported,
        _ => Status::Os,
    };
    Error::new(
        st,
        format!(
            "{what} failed: RM status {} ({status:#x})",
            nv_status_name(status)
        ),
    )
}

/// The trace text for an RM status word: `None` for `NV_OK`.
fn rm_status_text(status: u32) -> Option<String> {
    (status != NV_OK).then(|| format!("RM status {} ({status:#x})", nv_status_name(status)))
}

/// Issue an ioctl whose argument is `arg`. `what` names the call with its key arguments (for
/// the error and the trace record); `status` reads the RM status the driver wrote back into
/// `arg`, for the trace record (checking it stays with the caller).
///
/// # Safety
/// `T` must be the argument type of `request` (pointers inside must be valid for the call).
pub unsafe fn ioctl_with<T: Pod>(
    sys: &dyn Sys,
    fd: RawFd,
    request: u64,
    arg: &mut T,
    what: &dyn Fn() -> String,
    status: Option<fn(&T) -> u32>,
) -> Result<()> {
    let ptr = (arg as *mut T) as usize;
    let t = crate::os::IoctlTrace::start();
    let r = crate::os::ioctl_retrying_untraced(sys, fd, request, ptr);
    t.finish(
        fd,
        request,
        ptr,
        what,
        &r,
        // SAFETY: `arg` is valid for reads; the driver has returned.
        Some(&|| status.and_then(|f| rm_status_text(f(&*(ptr as *const T))))),
    );
    r.map(|_| ()).map_err(|e| crate::os::ioctl_error(what(), e))
}

/// The control fd and root client: every RM_ALLOC, RM_CONTROL and RM_FREE goes through it.
pub struct RmApi {
    pub sys: Arc<dyn Sys>,
    /// `/dev/nvidiactl`.
    pub ctl_fd: RawFd,
    /// The root client handle (0 until allocated).
    pub client: u32,
}

impl RmApi {
    /// `NV_ESC_CHECK_VERSION_STR` QUERY: the loaded module's version string.
    pub fn query_version(sys: &dyn Sys, ctl_fd: RawFd) -> Result<String> {
        let mut p = nv_ioctl_rm_api_version_t {
            cmd: NV_RM_API_VERSION_CMD_QUERY,
            ..Default::default()
        };
        // SAFETY: p is the 72-byte argument of NV_ESC_CHECK_VERSION_STR.
        unsafe {
            ioctl_with(
                sys,
                ctl_fd,
                NV_ESC_CHECK_VERSION_STR_REQUEST,
                &mut p,
                &|| "NV_ESC_CHECK_VERSION_STR(cmd=QUERY)".to_string(),
                None,
            )?
        };
        if p.reply != NV_RM_API_VERSION_REPLY_RECOGNIZED {
            return Err(Error::new(
                Status::UnsupportedDriver,
                format!(
                    "NV_ESC_CHECK_VERSION_STR(cmd=QUERY) was not recognised (reply={})",
                    p.reply
                ),
            ));
        }
        Ok(c_string(&p.versionString))
    }

    /// RM_ALLOC of `class` under `parent`. `params` is copied through scratch; on success the
    /// driver's copy-back is copied into it. Returns the new handle.
    pub fn alloc<T: Pod>(&self, parent: u32, class: u32, params: Option<&mut T>) -> Result<u32> {
        self.alloc_with_handle(parent, 0, class, params)
    }

    /// RM_ALLOC with a caller-chosen handle (`new` = 0 lets RM choose).
    pub fn alloc_with_handle<T: Pod>(
        &self,
        parent: u32,
        new: u32,
        class: u32,
        params: Option<&mut T>,
    ) -> Result<u32> {
        let mut scratch = Scratch::new();
        let (ptr, size) = match &params {
            Some(p) => {
                scratch.put::<T>(p);
                (scratch.ptr() as u64, core::mem::size_of::<T>() as u32)
            }
            None => (0, 0),
        };
        let mut a = NVOS21_PARAMETERS {
            hRoot: self.client,
            hObjectParent: parent,
            hObjectNew: new,
            hClass: class,
            pAllocParms: ptr,
            paramsSize: size,
            status: 0,
        };
        let what = || {
            format!(
                "NV_ESC_RM_ALLOC(hClass={}, hObjectParent={parent:#x})",
                rm_class_label(class)
            )
        };
        // SAFETY: a is NVOS21_PARAMETERS; pAllocParms points into scratch (16 KiB, alive).
        unsafe {
            ioctl_with(
                &*self.sys,
                self.ctl_fd,
                NV_ESC_RM_ALLOC_REQUEST,
                &mut a,
                &what,
                Some(|a: &NVOS21_PARAMETERS| a.status),
            )?
        };
        if a.status != NV_OK {
            return Err(rm_status_error(&what(), a.status));
        }
        if let Some(p) = params {
            scratch.get::<T>(p);
        }
        if a.hObjectNew == 0 {
            return Err(Error::new(
                Status::Internal,
                format!("{} returned handle 0", what()),
            ));
        }
        Ok(a.hObjectNew)
    }

    /// RM_ALLOC of the root client (hRoot = hParent = 0, no params).
    pub fn alloc_client(&mut self) -> Result<u32> {
        let mut a = NVOS21_PARAMETERS {
            hClass: NV01_ROOT_CLIENT,
            ..Default::default()
        };
        let what = || {
            format!(
                "NV_ESC_RM_ALLOC(hClass={}, hRoot=0, hObjectParent=0)",
                rm_class_label(NV01_ROOT_CLIENT)
            )
        };
        // SAFETY: a is NVOS21_PARAMETERS with no parameter pointer.
        unsafe {
            ioctl_with(
                &*self.sys,
                self.ctl_fd,
                NV_ESC_RM_ALLOC_REQUEST,
                &mut a,
                &what,
                Some(|a: &NVOS21_PARAMETERS| a.status),
            )?
        };
        if a.status != NV_OK {
            return Err(rm_status_error(&what(), a.status));
        }
        if a.hObjectNew == 0 {
            return Err(Error::new(
                Status::Internal,
                "NV01_ROOT_CLIENT allocation returned handle 0",
            ));
        }
        self.client = a.hObjectNew;
        Ok(a.hObjectNew)
    }

    /// RM_CONTROL `cmd` on `object` with `params`, sending `size` as paramsSize (normally
    /// `size_of::<T>()`; smaller for controls whose struct shrank in older branches).
    pub fn control_sized<T: Pod>(
        &self,
        object: u32,
        cmd: u32,
        params: &mut T,
        size: usize,
    ) -> Result<()> {
        if size > core::mem::size_of::<T>() {
            return Err(Error::new(
                Status::Internal,
                format!("RM control {cmd:#x}: size {size} > struct"),
            ));
        }
        let mut c = NVOS54_PARAMETERS {
            hClient: self.client,
            hObject: object,
            cmd,
            flags: 0,
            params: (params as *mut T) as u64,
            paramsSize: size as u32,
            status: 0,
        };
        let what = || {
            format!(
                "NV_ESC_RM_CONTROL(cmd={}, hObject={object:#x}, paramsSize={size})",
                rm_ctrl_cmd_label(cmd)
            )
        };
        // SAFETY: c is NVOS54_PARAMETERS; params points to `size` valid bytes (checked above).
        unsafe {
            ioctl_with(
                &*self.sys,
                self.ctl_fd,
                NV_ESC_RM_CONTROL_REQUEST,
                &mut c,
                &what,
                Some(|c: &NVOS54_PARAMETERS| c.status),
            )?
        };
        if c.status != NV_OK {
            return Err(rm_status_error(&what(), c.status));
        }
        Ok(())
    }

    /// RM_CONTROL with the full struct size.
    pub fn control<T: Pod>(&self, object: u32, cmd: u32, params: &mut T) -> Result<()> {
        self.control_sized(object, cmd, params, core::mem::size_of::<T>())
    }

    /// RM_FREE of `object` (child of `parent`).
    pub fn free(&self, parent: u32, object: u32) -> Result<()> {
        let mut f = NVOS00_PARAMETERS {
            hRoot: self.client,
            hObjectParent: parent,
            hObjectOld: object,
            status: 0,
        };
        let what = || format!("NV_ESC_RM_FREE(hObjectOld={object:#x}, hObjectParent={parent:#x})");
        // SAFETY: f is NVOS00_PARAMETERS.
        unsafe {
            ioctl_with(
                &*self.sys,
                self.ctl_fd,
                NV_ESC_RM_FREE_REQUEST,
                &mut f,
                &what,
                Some(|f: &NVOS00_PARAMETERS| f.status),
            )?
        };
        if f.status != NV_OK {
            return Err(rm_status_error(&what(), f.status));
        }
        Ok(())
    }

    /// RM_MAP_MEMORY of `length` bytes of `memory` (under `device`) into the mmap context of
    /// `map_fd`. Returns the pLinearAddress token.
    pub fn map_memory(
        &self,
        device: u32,
        memory: u32,
        length: u64,
        flags: u32,
        map_fd: RawFd,
    ) -> Result<u64> {
        let mut m = nv_ioctl_nvos33_parameters_with_fd {
            params: NVOS33_PARAMETERS {
                hClient: self.client,
                hDevice: device,
                hMemory: memory,
                offset: 0,
                length,
                flags,
                ..Default::default()
            },
            fd: map_fd,
            _pad: 0,
        };
        let what = || {
            format!("NV_ESC_RM_MAP_MEMORY(hMemory={memory:#x}, length={length:#x}, fd={map_fd})")
        };
        // SAFETY: m is the 56-byte NVOS33-with-fd argument.
        unsafe {
            ioctl_with(
                &*self.sys,
                self.ctl_fd,
                NV_ESC_RM_MAP_MEMORY_REQUEST,
                &mut m,
                &what,
                Some(|m: &nv_ioctl_nvos33_parameters_with_fd| m.params.status),
            )?
        };
        if m.params.status != NV_OK {
            return Err(rm_status_error(&what(), m.params.status));
        }
        Ok(m.params.pLinearAddress)
    }

    /// RM_UNMAP_MEMORY of a mapping made by [`RmApi::map_memory`].
    pub fn unmap_memory(&self, device: u32, memory: u32, linear: u64) -> Result<()> {
        let mut u = NVOS34_PARAMETERS {
            hClient: self.client,
            hDevice: device,
            hMemory: memory,
            pLinearAddress: linear,
            ..Default::default()
        };
        let what = || format!("NV_ESC_RM_UNMAP_MEMORY(hMemory={memory:#x})");
        // SAFETY: u is NVOS34_PARAMETERS.
        unsafe {
            ioctl_with(
                &*self.sys,
                self.ctl_fd,
                NV_ESC_RM_UNMAP_MEMORY_REQUEST,
                &mut u,
                &what,
                Some(|u: &NVOS34_PARAMETERS| u.status),
            )?
        };
        if u.status != NV_OK {
            return Err(rm_status_error(&what(), u.status));
        }
        Ok(())
    }

    /// NV_ESC_RM_ALLOC_MEMORY on a device fd (OS descriptors: pins the user memory at CPU address
    /// `cpu`).
    pub fn alloc_os_descriptor(
        &self,
        dev_fd: RawFd,
        device: u32,
        handle: u32,
        cpu: u64,
        size: u64,
    ) -> Result<()> {
        let mut a = nv_ioctl_nvos02_parameters_with_fd {
            params: NVOS02_PARAMETERS {
                hRoot: self.client,
                hObjectParent: device,
                hObjectNew: handle,
                hClass: NV01_MEMORY_SYSTEM_OS_DESCRIPTOR,
                flags: NVOS02_FLAGS_PHYSICALITY_NONCONTIGUOUS
                    | NVOS02_FLAGS_LOCATION_PCI
                    | NVOS02_FLAGS_COHERENCY_CACHED
                    | NVOS02_FLAGS_MAPPING_NO_MAP,
                pMemory: cpu,
                limit: size - 1,
                ..Default::default()
            },
            fd: -1,
            _pad: 0,
        };
        let what = || {
            format!("NV_ESC_RM_ALLOC_MEMORY(hClass=NV01_MEMORY_SYSTEM_OS_DESCRIPTOR, pMemory={cpu:#x}, size={size:#x})")
        };
        // SAFETY: a is the 56-byte NVOS02-with-fd argument; pMemory is a live mapping.
        unsafe {
            ioctl_with(
                &*self.sys,
                dev_fd,
                NV_ESC_RM_ALLOC_MEMORY_REQUEST,
                &mut a,
                &what,
                Some(|a: &nv_ioctl_nvos02_parameters_with_fd| a.params.status),
            )?
        };
        if a.params.status != NV_OK {
            return Err(rm_status_error(&what(), a.params.status));
        }
        Ok(())
    }

    /// NV_ESC_REGISTER_FD: link `dev_fd` to our control fd.
    pub fn register_fd(&self, dev_fd: RawFd) -> Result<()> {
        let mut r = nv_ioctl_register_fd_t {
            ctl_fd: self.ctl_fd,
        };
        // SAFETY: r is nv_ioctl_register_fd_t.
        unsafe {
            ioctl_with(
                &*self.sys,
                dev_fd,
                NV_ESC_REGISTER_FD_REQUEST,
                &mut r,
                &|| format!("NV_ESC_REGISTER_FD(fd={dev_fd}, ctl_fd={})", self.ctl_fd),
                None,
            )
        }
    }

    /// NV_ESC_CARD_INFO: the valid entries.
    pub fn card_info(&self) -> Result<Vec<nv_ioctl_card_info_t>> {
        let mut v = vec![nv_ioctl_card_info_t::default(); NV_CARD_INFO_ENTRIES];
        // SAFETY: v holds NV_CARD_INFO_ENTRIES entries, the size encoded in the request.
        unsafe {
            crate::os::ioctl_retrying_described(
                &*self.sys,
                self.ctl_fd,
                NV_ESC_CARD_INFO_REQUEST,
                v.as_mut_ptr() as usize,
                &|| format!("NV_ESC_CARD_INFO(entries={NV_CARD_INFO_ENTRIES})"),
            )
            .map_err(|e| {
                crate::os::ioctl_error(
                    format!("NV_ESC_CARD_INFO(entries={NV_CARD_INFO_ENTRIES})"),
                    e,
                )
            })?;
        }
        Ok(v.into_iter().filter(|c| c.valid != 0).collect())
    }
}

/// A UVM ioctl through scratch; `status` extracts rmStatus from the struct.
pub fn uvm_ioctl<T: Pod>(
    sys: &dyn Sys,
    fd: RawFd,
    nr: u64,
    params: &mut T,
    status: fn(&T) -> u32,
    what: &dyn Fn() -> String,
) -> Result<()> {
    let mut scratch = Scratch::new();
    scratch.put::<T>(params);
    let ptr = scratch.ptr() as usize;
    let t = crate::os::IoctlTrace::start();
    // SAFETY: scratch holds 16 KiB, at least the kernel's sizeof for every UVM struct (§3).
    let r = unsafe { crate::os::ioctl_retrying_untraced(sys, fd, nr, ptr) };
    t.finish(
        fd,
        nr,
        ptr,
        what,
        &r,
        Some(&|| {
            let mut copy = *params;
            scratch.get::<T>(&mut copy);
            rm_status_text(status(&copy))
        }),
    );
    r.map_err(|e| crate::os::ioctl_error(what(), e))?;
    scratch.get::<T>(params);
    let st = status(params);
    if st != NV_OK {
        return Err(rm_status_error(&what(), st));
    }
    Ok(())
}
