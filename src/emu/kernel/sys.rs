//! [`Sys`] for [`EmuSys`]: the system calls the library makes, served by the emulated kernel.

use super::mem::{close_fd, fd_is_open, KMap};
use super::{mem, page_size, CtrlFile, EmuSys, Obj, UVma, UVmaKind};
use crate::emu::hwif::HostPtr;
use crate::os::{Errno, KernelFaultRecord, Sys};
use crate::sys::nvgpu::*;
use std::ffi::CStr;
use std::os::fd::RawFd;

impl Sys for EmuSys {
    fn open(&self, path: &CStr, flags: i32) -> Result<RawFd, Errno> {
        let mut st = self.state.lock();
        let fd = match path.to_bytes() {
            b"/dev/nvgpu/igpu0/ctrl" | b"/dev/nvhost-ctrl-gpu" => {
                let id = mem::next_id();
                let fd = st.new_fd(c"nvgpu-ctrl", NVGPU_USERMODE_MAP_SIZE as u64, Obj::Ctrl(id))?;
                st.ctrls.insert(
                    id,
                    CtrlFile {
                        fd_open: true,
                        doorbell: None,
                    },
                );
                fd
            }
            b"/dev/nvmap" => {
                // driver: nvmap_dev.c:nvmap_open → __nvmap_create_client: the process's one
                // client, joined by every open.
                let pid = st.nvmap.open();
                match st.new_fd(c"nvmap", 0, Obj::Nvmap(pid)) {
                    Ok(fd) => fd,
                    Err(e) => {
                        st.nvmap.release(pid);
                        return Err(e);
                    }
                }
            }
            // Opening the AS node asks for big pages, which ga10b does not have.
            b"/dev/nvgpu/igpu0/as" | b"/dev/nvhost-as-gpu" => return Err(libc::EINVAL),
            _ => return Err(libc::ENOENT),
        };
        if flags & libc::O_CLOEXEC == 0 {
            let _ = nix::fcntl::fcntl(
                fd,
                nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::empty()),
            );
        }
        Ok(fd)
    }

    fn close(&self, fd: RawFd) -> Result<(), Errno> {
        let mut st = self.state.lock();
        match st.fds.remove(&fd) {
            Some(obj) => {
                close_fd(fd);
                st.release(obj);
                Ok(())
            }
            None => {
                drop(st);
                // A foreign fd, closed as the caller asked.
                nix::unistd::close(fd).map_err(|e| e as Errno)
            }
        }
    }

    unsafe fn ioctl(&self, fd: RawFd, request: u64, arg: usize) -> Result<i32, Errno> {
        // The syscall's `cmd` is an `unsigned int`: bits above 31 never reach a driver.
        let request = request & 0xffff_ffff;
        let mut st = self.state.lock();
        let Some(obj) = st.fds.get(&fd).cloned() else {
            // Not an nvgpu/nvmap file: ENOTTY like any file without this ioctl.
            return Err(if fd_is_open(fd) {
                libc::ENOTTY
            } else {
                libc::EBADF
            });
        };
        match &obj {
            Obj::Nvmap(id) => st.nvmap_ioctl(*id, request, arg),
            Obj::DmaBuf(_) => st.dmabuf_ioctl(request, arg),
            _ => st.nvgpu_ioctl(&obj, request, arg),
        }
    }

    unsafe fn mmap(
        &self,
        addr: *mut u8,
        len: usize,
        prot: i32,
        flags: i32,
        fd: RawFd,
        offset: i64,
    ) -> Result<*mut u8, Errno> {
        let raw = |flags: i32| -> Result<*mut u8, Errno> {
            let p = libc::mmap(addr.cast(), len, prot, flags, fd, offset as libc::off_t);
            if p == libc::MAP_FAILED {
                Err(std::io::Error::last_os_error()
                    .raw_os_error()
                    .unwrap_or(libc::EIO))
            } else {
                Ok(p.cast())
            }
        };
        let mut st = self.state.lock();
        let obj = if flags & libc::MAP_ANONYMOUS != 0 || fd < 0 {
            None
        } else {
            st.fds.get(&fd).cloned()
        };
        match obj {
            None => {
                let p = raw(flags)?;
                st.punch(p as usize, len);
                Ok(p)
            }
            Some(Obj::Nvmap(_)) => Err(libc::EPERM),
            Some(Obj::As(_) | Obj::Tsg(_) | Obj::Channel(_)) => Err(libc::ENODEV),
            Some(Obj::Ctrl(id)) => {
                let busy = st.ctrls.get(&id).is_none_or(|c| c.doorbell.is_some());
                if busy {
                    return Err(libc::EBUSY);
                }
                if len > NVGPU_USERMODE_MAP_SIZE || offset != 0 {
                    return Err(libc::EINVAL);
                }
                // ioctl_ctrl.c:gk20a_ctrl_dev_mmap does not look at VM_SHARED: a private
                // mapping is accepted and takes the one usermode mapping. Its pages are the
                // register page until the first store makes a private copy (copy-on-write), so
                // a doorbell written through it rings nothing; a private mapping of the memfd
                // behaves the same way.
                let p = raw(flags)?;
                let k = match KMap::new(fd, NVGPU_USERMODE_MAP_SIZE) {
                    Ok(k) => k,
                    Err(e) => {
                        libc::munmap(p.cast(), len);
                        return Err(e);
                    }
                };
                self.gpu.add_doorbell(HostPtr(k.ptr()));
                if let Some(c) = st.ctrls.get_mut(&id) {
                    c.doorbell = Some(k);
                }
                st.punch(p as usize, len);
                let ps = page_size();
                st.uvmas.insert(
                    p as usize,
                    UVma {
                        len: len.div_ceil(ps) * ps,
                        kind: UVmaKind::Doorbell(id),
                    },
                );
                Ok(p)
            }
            Some(Obj::DmaBuf(b)) => {
                let Some(bk) = b.backing() else {
                    return Err(libc::EPERM);
                };
                if bk.heap == crate::sys::nvmap::NVMAP_HEAP_CARVEOUT_VPR {
                    return Err(libc::EPERM);
                }
                // The buffer's own pages (nvmap makes every mapping shared).
                let p = b.map_into_user(addr, len, prot, flags, offset)?;
                st.punch(p as usize, len);
                let ps = page_size();
                st.uvmas.insert(
                    p as usize,
                    UVma {
                        len: len.div_ceil(ps) * ps,
                        kind: UVmaKind::DmaBuf(b.clone(), offset as u64),
                    },
                );
                Ok(p)
            }
        }
    }

    unsafe fn munmap(&self, addr: *mut u8, len: usize) -> Result<(), Errno> {
        if libc::munmap(addr.cast(), len) < 0 {
            return Err(std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO));
        }
        self.state.lock().punch(addr as usize, len);
        Ok(())
    }

    fn is_emulated(&self) -> bool {
        true
    }

    fn fault_log(&self) -> Vec<KernelFaultRecord> {
        let mut v: Vec<KernelFaultRecord> = self
            .gpu
            .faults()
            .into_iter()
            .map(|f| KernelFaultRecord {
                token: f.token,
                address: f.address,
                code: f.code,
                what: f.what,
            })
            .collect();
        v.extend(self.state.lock().kernel_faults.iter().cloned());
        v
    }
}
