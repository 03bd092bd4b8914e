//! Raw kernel ABI: `#[repr(C)]` structs and ioctl request numbers, named as in the kernel headers.

pub mod ioctl;
pub mod nvgpu;
pub mod nvmap;
pub mod rm;

use std::borrow::Cow;

/// A readable name for an ioctl request number, for logs and messages: the header name of an
/// nvgpu/nvmap request (`NVGPU_GPU_IOCTL_ALLOC_AS`), an RM escape (`NV_ESC_RM_CONTROL`) or a UVM
/// ioctl (`UVM_REGISTER_GPU`); any other number decoded from its `_IOC` fields, e.g.
/// `_IOC(RW, 'G', 8, 64)`.
pub fn request_name(request: u64) -> Cow<'static, str> {
    if let Some(e) = nvgpu::request_entry(request) {
        return Cow::Borrowed(e.name);
    }
    if ioctl::ioc_type(request) as u32 == rm::NV_IOCTL_MAGIC && request >> 32 == 0 {
        if let Some(n) = rm::nv_esc_name(u32::from(ioctl::ioc_nr(request))) {
            return Cow::Borrowed(n);
        }
    }
    if let Some(n) = rm::uvm_ioctl_name(request) {
        return Cow::Borrowed(n);
    }
    Cow::Owned(decode_ioc(request))
}

/// `_IOC(dir, 'type', nr, size)` for a request number (asm-generic layout).
pub fn decode_ioc(request: u64) -> String {
    let dir = match ioctl::ioc_dir(request) {
        0 => "NONE",
        1 => "W",
        2 => "R",
        _ => "RW",
    };
    let ty = ioctl::ioc_type(request);
    let ty = if ty.is_ascii_graphic() {
        format!("'{}'", ty as char)
    } else {
        format!("{ty:#04x}")
    };
    format!(
        "_IOC({dir}, {ty}, {}, {})",
        ioctl::ioc_nr(request),
        ioctl::ioc_size(request)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_of_requests() {
        assert_eq!(
            request_name(nvgpu::NVGPU_GPU_IOCTL_ALLOC_AS),
            "NVGPU_GPU_IOCTL_ALLOC_AS"
        );
        assert_eq!(request_name(nvmap::NVMAP_IOC_FREE), "NVMAP_IOC_FREE");
        assert_eq!(
            request_name(rm::NV_ESC_RM_CONTROL_REQUEST),
            "NV_ESC_RM_CONTROL"
        );
        assert_eq!(request_name(rm::UVM_REGISTER_GPU), "UVM_REGISTER_GPU");
        assert_eq!(request_name(rm::UVM_INITIALIZE), "UVM_INITIALIZE");
        assert_eq!(
            request_name(ioctl::iowr(b'G', 200, 64)),
            "_IOC(RW, 'G', 200, 64)"
        );
        assert_eq!(request_name(ioctl::io(0x01, 3)), "_IOC(NONE, 0x01, 3, 0)");
    }
}
