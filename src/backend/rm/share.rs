//! Memory shared with other drivers (CUDA) and processes through RM export fds.
//!
//! **Export** (`tg_buf_export_fd`): a fresh `/dev/nvidiactl` fd, filled with
//! `NV0000_CTRL_CMD_OS_UNIX_EXPORT_OBJECTS_TO_FD` (one slot, slot 0 = the buffer's memory
//! handle). RM duplicates the object into its own export client, so the memory lives until the
//! last holder lets go: the fd (closing it releases the export), or whoever imported it (an
//! import is a duplicate of its own). The kernel does not create the fd itself; it must be a
//! `/dev/nvidiactl` fd whose slot table is still unset, hence a fresh one per export. The
//! fd's 64 metadata bytes are zero unless `TEGRAGPU_RM_EXPORT_METADATA` (128 hex digits) says
//! otherwise: what an importer expects there is the importer's business, and the variable lets
//! a program try values without rebuilding the library.
//!
//! **Import** (`tg_buf_import_fd`): `NV0000_CTRL_CMD_OS_UNIX_GET_EXPORT_OBJECT_INFO` (the
//! device instance must be this device's: RM would duplicate another GPU's memory too, and the
//! mapping would then be a peer mapping), `NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECTS_FROM_FD` of
//! slot 0 under the device (under the subdevice when the exporter's object hung there),
//! `NV0041_CTRL_CMD_GET_SURFACE_INFO` for the physical size, then the UVM mapping at an address
//! of the window like every buffer. The CPU mapping is made on first CPU access: BAR1 for video
//! memory, a fresh control fd for system memory. The caller keeps its fd: the duplicate holds
//! the memory.

use super::memory::{window_alloc, PAGE_2M, PAGE_4K};
use super::rmapi::open_node;
use super::state::{Inner, MemKind, MemRecord};
use crate::error::{Error, Result, Status};
use crate::log::debug;
use crate::sys::rm::*;
use std::os::fd::RawFd;
use std::sync::atomic::Ordering;

/// The environment variable holding the metadata bytes of export fds (hex, up to 64 bytes;
/// missing bytes are zero). Read at every export.
pub const EXPORT_METADATA_ENV: &str = "TEGRAGPU_RM_EXPORT_METADATA";

/// The 64 metadata bytes `text` spells in hex (whitespace, `:` and `-` between digits are
/// ignored; fewer than 64 bytes are padded with zeros).
pub fn parse_export_metadata(
    text: &str,
) -> Result<[u8; NV0000_OS_UNIX_EXPORT_OBJECT_FD_BUFFER_SIZE]> {
    let digits: Vec<u8> = text
        .bytes()
        .filter(|b| !b.is_ascii_whitespace() && *b != b':' && *b != b'-')
        .collect();
    let bad = || {
        Error::invalid(format!(
            "{EXPORT_METADATA_ENV}={text:?}: expected up to {} bytes as hex digits (an even number of 0-9a-f)",
            NV0000_OS_UNIX_EXPORT_OBJECT_FD_BUFFER_SIZE
        ))
    };
    if digits.len() % 2 != 0 || digits.len() > 2 * NV0000_OS_UNIX_EXPORT_OBJECT_FD_BUFFER_SIZE {
        return Err(bad());
    }
    let mut out = [0u8; NV0000_OS_UNIX_EXPORT_OBJECT_FD_BUFFER_SIZE];
    for (i, pair) in digits.chunks(2).enumerate() {
        let s = std::str::from_utf8(pair).map_err(|_| bad())?;
        out[i] = u8::from_str_radix(s, 16).map_err(|_| bad())?;
    }
    Ok(out)
}

/// `bytes` as hex, for logs.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What `NV0000_CTRL_CMD_OS_UNIX_GET_EXPORT_OBJECT_INFO` says of an export fd.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportInfo {
    pub device_instance: u32,
    pub gpu_instance: u32,
    pub slots: u16,
    pub metadata: [u8; NV0000_OS_UNIX_EXPORT_OBJECT_FD_BUFFER_SIZE],
}

impl Inner {
    /// The RM memory handle, size and kind of allocation `id` at `va`, for an export (`call`
    /// names the API call in the error).
    fn exportable(&self, call: &str, id: u64, va: u64) -> Result<(u32, u64, MemKind)> {
        match self.mem.lock().get(&id) {
            Some(r) if r.va == va && r.handle != 0 => Ok((r.handle, r.size, r.kind)),
            _ => Err(Error::new(
                Status::InvalidHandle,
                format!("{call}: no allocation id {id} at {va:#x}"),
            )),
        }
    }

    /// Export allocation `id` (at `va`) into a fresh `/dev/nvidiactl` fd. Returns the fd and
    /// the size of the memory object it carries.
    pub(super) fn export_fd(&self, id: u64, va: u64) -> Result<(RawFd, u64)> {
        let (handle, size, kind) = self.exportable("tg_buf_export_fd", id, va)?;
        let metadata = match std::env::var(EXPORT_METADATA_ENV) {
            Ok(v) if !v.trim().is_empty() => parse_export_metadata(&v)?,
            _ => [0; NV0000_OS_UNIX_EXPORT_OBJECT_FD_BUFFER_SIZE],
        };
        let fd = open_node(self.sys(), "/dev/nvidiactl")?;
        let mut p = Box::<NV0000_CTRL_OS_UNIX_EXPORT_OBJECTS_TO_FD_PARAMS>::default();
        p.fd = fd;
        p.hDevice = self.device;
        p.maxObjects = 1;
        p.metadata = metadata;
        p.objects[0] = handle;
        p.numObjects = 1;
        p.index = 0;
        if let Err(mut e) = self.api.control(
            self.api.client,
            NV0000_CTRL_CMD_OS_UNIX_EXPORT_OBJECTS_TO_FD,
            &mut *p,
        ) {
            let _ = self.sys().close(fd);
            e.message = format!(
                "tg_buf_export_fd: exporting the buffer at {va:#x} ({size:#x} bytes, {}): {}",
                kind_words(kind),
                e.message
            );
            return Err(e);
        }
        debug!(
            "exported hMemory {handle:#x} ({size:#x} bytes, {}) into fd {fd}, metadata {}",
            kind_words(kind),
            hex(&metadata)
        );
        Ok((fd, size))
    }

    /// A dma-buf fd of `size` bytes from `offset` of allocation `id` at `va`:
    /// `NV_ESC_EXPORT_TO_DMABUF_FD` on the GPU's device fd (`kernel-open/nvidia/nv-dmabuf.c:
    /// nv_dma_buf_export`: the driver dups the memory handle into the dma-buf, which keeps the
    /// memory alive until its last fd and importer are gone). `pcie`: importers map it over PCIe
    /// (`NV_DMABUF_EXPORT_MAPPING_TYPE_FORCE_PCIE`). `call` names the API call in errors.
    pub(super) fn export_dmabuf(
        &self,
        call: &str,
        id: u64,
        va: u64,
        offset: u64,
        size: u64,
        pcie: bool,
    ) -> Result<RawFd> {
        let (handle, total, kind) = self.exportable(call, id, va)?;
        if size == 0
            || offset % PAGE_4K != 0
            || size % PAGE_4K != 0
            || offset.checked_add(size).is_none_or(|e| e > total)
        {
            return Err(Error::invalid(format!(
                "{call}: range {offset:#x} + {size:#x} of the allocation at {va:#x} ({total:#x} bytes) is empty, not 4 KiB aligned or outside it"
            )));
        }
        let mut p: nv_ioctl_export_to_dma_buf_fd_t = bytemuck::Zeroable::zeroed();
        p.fd = -1;
        p.hClient = self.api.client;
        p.totalObjects = 1;
        p.numObjects = 1;
        p.totalSize = size;
        p.mappingType = if pcie {
            NV_DMABUF_EXPORT_MAPPING_TYPE_FORCE_PCIE
        } else {
            NV_DMABUF_EXPORT_MAPPING_TYPE_DEFAULT
        };
        p.handles[0] = handle;
        p.offsets[0] = offset;
        p.sizes[0] = size;
        let what = || {
            format!(
                "{call}: NV_ESC_EXPORT_TO_DMABUF_FD(hMemory={handle:#x} ({}), offset={offset:#x}, size={size:#x})",
                kind_words(kind)
            )
        };
        // SAFETY: p is the 2608-byte nv_ioctl_export_to_dma_buf_fd_t the request number names.
        unsafe {
            super::rmapi::ioctl_with(
                self.sys(),
                self.dev_fd,
                NV_ESC_EXPORT_TO_DMABUF_FD_REQUEST,
                &mut p,
                &what,
                Some(|p: &nv_ioctl_export_to_dma_buf_fd_t| p.status),
            )?
        };
        if p.status != NV_OK {
            return Err(super::rmapi::rm_status_error(&what(), p.status));
        }
        debug!("{} -> dma-buf fd {}", what(), p.fd);
        Ok(p.fd)
    }

    /// `NV0000_CTRL_CMD_OS_UNIX_GET_EXPORT_OBJECT_INFO` of `fd`.
    pub(super) fn export_info(&self, fd: RawFd) -> Result<ExportInfo> {
        let mut info = NV0000_CTRL_OS_UNIX_GET_EXPORT_OBJECT_INFO_PARAMS {
            fd,
            ..Default::default()
        };
        self.api
            .control(
                self.api.client,
                NV0000_CTRL_CMD_OS_UNIX_GET_EXPORT_OBJECT_INFO,
                &mut info,
            )
            .map_err(|e| {
                Error::new(
                    Status::InvalidArgument,
                    format!(
                        "tg_buf_import_fd: fd {fd} is not an RM export fd (one from tg_buf_export_fd, or from cuMemExportToShareableHandle with CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR): {}",
                        e.message
                    ),
                )
            })?;
        Ok(ExportInfo {
            device_instance: info.deviceInstance,
            gpu_instance: info.gpuInstanceId,
            slots: info.maxObjects,
            metadata: info.metadata,
        })
    }

    /// Import slot 0 of export fd `fd` and map `size` bytes of it (0 = all) into the GPU.
    /// Returns the record (not yet in `mem`) and the size the buffer reports.
    pub(super) fn import_fd(&self, fd: RawFd, size: u64, label: &str) -> Result<(MemRecord, u64)> {
        self.import_fd_as(fd, size, label, true)
    }

    /// [`Inner::import_fd`]; without `map`, the record holds the RM handle only (physical
    /// memory for `map_physical`).
    pub(super) fn import_fd_as(
        &self,
        fd: RawFd,
        size: u64,
        label: &str,
        map: bool,
    ) -> Result<(MemRecord, u64)> {
        if fd < 0 {
            return Err(Error::invalid(format!(
                "tg_buf_import_fd: fd {fd} is not a file descriptor"
            )));
        }
        let info = self.export_info(fd)?;
        debug!(
            "export fd {fd}: device instance {}, GPU instance {:#x}, {} slot(s), metadata {}",
            info.device_instance,
            info.gpu_instance,
            info.slots,
            hex(&info.metadata)
        );
        // An object parented by a client rather than a device reports NV_MAX_DEVICES (32):
        // RM decides at the import whether it fits under this device.
        if info.device_instance < NV_MAX_DEVICES && info.device_instance != self.device_instance {
            return Err(Error::new(
                Status::InvalidArgument,
                format!(
                    "tg_buf_import_fd: fd {fd} holds memory of RM device instance {}, but this device ({label}) is instance {}: import it on the device of that GPU",
                    info.device_instance, self.device_instance
                ),
            ));
        }
        if info.slots == 0 {
            return Err(Error::invalid(format!(
                "tg_buf_import_fd: export fd {fd} has no slots"
            )));
        }
        let (handle, parent, kind_code) = self.import_slot0(fd)?;
        let kind = match kind_code {
            NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECT_TYPE_VIDMEM => Some(MemKind::ImportedVidmem),
            NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECT_TYPE_SYSMEM => Some(MemKind::ImportedSysmem),
            _ => None,
        };
        let Some(kind) = kind else {
            if kind_code != NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECT_TYPE_NONE {
                let _ = self.api.free(parent.unwrap_or(self.device), handle);
            }
            return Err(Error::new(
                if kind_code == NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECT_TYPE_NONE {
                    Status::InvalidArgument
                } else {
                    Status::NotSupported
                },
                format!(
                    "tg_buf_import_fd: slot 0 of export fd {fd} holds {} memory; only video and system memory can be imported",
                    import_object_type_name(kind_code)
                ),
            ));
        };
        let mut rec = MemRecord::new(kind);
        rec.handle = handle;
        rec.parent = parent;
        let res = (|| -> Result<u64> {
            let (phys, page_attr) = self.surface_size(handle)?;
            if phys == 0 {
                return Err(Error::new(
                    Status::Os,
                    format!("tg_buf_import_fd: RM reports size 0 for the memory of fd {fd}"),
                ));
            }
            if size > phys {
                return Err(Error::invalid(format!(
                    "tg_buf_import_fd: size {size} exceeds the {phys} bytes of the memory fd {fd} holds"
                )));
            }
            let map_size = phys.checked_next_multiple_of(PAGE_4K).ok_or_else(|| {
                Error::invalid(format!("tg_buf_import_fd: size {phys:#x} overflows"))
            })?;
            // Big and huge physical pages want an aligned address; so does any size of whole
            // 2 MiB pages (UVM then maps it with 2 MiB PTEs).
            let align = if map_size % PAGE_2M == 0 || page_attr >= 2 {
                PAGE_2M
            } else {
                PAGE_4K
            };
            rec.size = map_size;
            if !map {
                return Ok(phys);
            }
            rec.va = window_alloc(map_size, align)?;
            rec.va_owned = true;
            self.uvm_map(rec.va, map_size, handle)?;
            rec.uvm_mapped = true;
            debug!(
                "imported fd {fd} as hMemory {handle:#x} ({}, {phys:#x} bytes, page attr {page_attr}) at {:#x}",
                kind_words(kind),
                rec.va
            );
            Ok(if size == 0 { phys } else { size })
        })();
        match res {
            Ok(n) => Ok((rec, n)),
            Err(e) => {
                let _ = self.free_record(rec);
                Err(e)
            }
        }
    }

    /// `IMPORT_OBJECTS_FROM_FD` of slot 0 under the device, else under the subdevice: the
    /// new handle, its parent when not the device, and the object type RM reports.
    fn import_slot0(&self, fd: RawFd) -> Result<(u32, Option<u32>, u8)> {
        let try_under = |parent: u32| -> Result<(u32, u8)> {
            let handle = self.next_handle.fetch_add(1, Ordering::Relaxed);
            let mut p = Box::<NV0000_CTRL_OS_UNIX_IMPORT_OBJECTS_FROM_FD_PARAMS>::default();
            p.fd = fd;
            p.hParent = parent;
            p.objects[0] = handle;
            p.numObjects = 1;
            p.index = 0;
            self.api.control(
                self.api.client,
                NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECTS_FROM_FD,
                &mut *p,
            )?;
            Ok((handle, p.objectTypes[0]))
        };
        match try_under(self.device) {
            Ok((h, t)) => Ok((h, None, t)),
            Err(under_device) => match try_under(self.subdevice) {
                Ok((h, t)) => Ok((h, Some(self.subdevice), t)),
                Err(under_subdevice) => Err(Error::new(
                    under_device.status,
                    format!(
                        "tg_buf_import_fd: importing export fd {fd}: under the device: {}; under the subdevice: {}",
                        under_device.message, under_subdevice.message
                    ),
                )),
            },
        }
    }

    /// Physical size and page-size attribute (`NVOS32_ATTR_PAGE_SIZE`: 1 4 KiB, 2 big,
    /// 3 huge, 0 default) of memory object `handle`.
    fn surface_size(&self, handle: u32) -> Result<(u64, u32)> {
        let mut list = [
            NV0041_CTRL_SURFACE_INFO {
                index: NV0041_CTRL_SURFACE_INFO_INDEX_PHYS_SIZE_LO,
                data: 0,
            },
            NV0041_CTRL_SURFACE_INFO {
                index: NV0041_CTRL_SURFACE_INFO_INDEX_PHYS_SIZE_HI,
                data: 0,
            },
            NV0041_CTRL_SURFACE_INFO {
                index: NV0041_CTRL_SURFACE_INFO_INDEX_PHYS_ATTR,
                data: 0,
            },
        ];
        let mut p = NV0041_CTRL_GET_SURFACE_INFO_PARAMS {
            surfaceInfoListSize: list.len() as u32,
            _pad: 0,
            surfaceInfoList: list.as_mut_ptr() as u64,
        };
        self.api
            .control(handle, NV0041_CTRL_CMD_GET_SURFACE_INFO, &mut p)?;
        let size = (list[0].data as u64) | ((list[1].data as u64) << 32);
        let page = (list[2].data >> NV0041_CTRL_SURFACE_INFO_PHYS_ATTR_PAGE_SIZE_SHIFT) & 3;
        Ok((size, page))
    }

    /// The CPU mapping of imported system memory: `NV_ESC_RM_MAP_MEMORY` into a fresh control
    /// fd, `mmap` at the GPU address where the process has room.
    pub(super) fn map_sysmem(&self, rec: &mut MemRecord) -> Result<()> {
        rec.map_fd = open_node(self.sys(), "/dev/nvidiactl")?;
        rec.linear = self
            .api
            .map_memory(self.device, rec.handle, rec.size, 0, rec.map_fd)
            .map_err(|mut e| {
                // RM CPU-maps no page-locked user memory (NV01_MEMORY_SYSTEM_OS_DESCRIPTOR, what
                // libtegragpu's and cuMemHostRegister's host buffers are), imported or not:
                // mapping_cpu.c:memMap_IMPL answers NV_ERR_NOT_SUPPORTED unless the descriptor
                // is a dma-buf (os_desc_mem.c:osdescConstruct_IMPL).
                if e.status == Status::NotSupported {
                    e.message = format!(
                        "the system memory imported at {:#x} is page-locked user memory of the exporter, which the NVIDIA driver does not map for the CPU (only for GPUs): read and write it on a queue (tg_queue_read / tg_queue_write) or through the exporter's CPU pointer ({})",
                        rec.va, e.message
                    );
                }
                e
            })?;
        rec.rm_mapped = true;
        rec.cpu = self.mmap_cpu(rec.va, rec.size, rec.map_fd, libc::MAP_SHARED)?;
        Ok(())
    }
}

/// The memory kind in words, for messages.
fn kind_words(kind: MemKind) -> &'static str {
    match kind {
        MemKind::Vidmem => "video memory",
        MemKind::Host => "pinned host memory",
        MemKind::Notifier => "notifier",
        MemKind::ImportedVidmem => "imported video memory",
        MemKind::ImportedSysmem => "imported system memory",
        MemKind::Registered => "registered host memory",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_parses_hex_and_pads_with_zeros() {
        let m = parse_export_metadata("01 02:0a-ff").expect("valid");
        assert_eq!(&m[..4], &[1, 2, 0x0a, 0xff]);
        assert!(m[4..].iter().all(|&b| b == 0));
        let full = "ab".repeat(64);
        assert_eq!(parse_export_metadata(&full).expect("64 bytes"), [0xab; 64]);
        for bad in ["0", "zz", &"00".repeat(65)] {
            let e = parse_export_metadata(bad).expect_err(bad);
            assert_eq!(e.status, Status::InvalidArgument);
            assert!(e.message.contains(EXPORT_METADATA_ENV), "{}", e.message);
        }
    }
}
