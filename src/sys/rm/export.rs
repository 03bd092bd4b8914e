//! Sharing memory objects through file descriptors: the root-client controls that export RM
//! objects into a `/dev/nvidiactl` fd and import them back (`ctrl/ctrl0000/ctrl0000unix.h`),
//! and the memory surface query (`ctrl/ctrl0041.h`) that tells an imported object's size and
//! page size. Sizes are those of x86_64 builds of the 570 to 595 branches; RM checks
//! `paramsSize` of every control exactly.

/// Client: the device instance, slot count and metadata of an export fd (size-checked, 80).
pub const NV0000_CTRL_CMD_OS_UNIX_GET_EXPORT_OBJECT_INFO: u32 = 0x0000_3D08;
/// Client: export RM objects into the slots of a `/dev/nvidiactl` fd (size-checked, 2128).
pub const NV0000_CTRL_CMD_OS_UNIX_EXPORT_OBJECTS_TO_FD: u32 = 0x0000_3D0B;
/// Client: dup the objects of an export fd's slots into the caller's client (size-checked, 652).
pub const NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECTS_FROM_FD: u32 = 0x0000_3D0C;

/// `NV_MAX_DEVICES`: the device instance an export fd reports when its objects hang under a
/// client rather than a device.
pub const NV_MAX_DEVICES: u32 = 32;

/// `NV0000_OS_UNIX_EXPORT_OBJECT_FD_BUFFER_SIZE`: bytes of user metadata an export fd carries.
pub const NV0000_OS_UNIX_EXPORT_OBJECT_FD_BUFFER_SIZE: usize = 64;
/// `NV0000_CTRL_OS_UNIX_EXPORT_OBJECTS_TO_FD_MAX_OBJECTS`.
pub const NV0000_CTRL_OS_UNIX_EXPORT_OBJECTS_TO_FD_MAX_OBJECTS: usize = 512;
/// `NV0000_CTRL_OS_UNIX_IMPORT_OBJECTS_TO_FD_MAX_OBJECTS`.
pub const NV0000_CTRL_OS_UNIX_IMPORT_OBJECTS_TO_FD_MAX_OBJECTS: usize = 128;

/// `NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECT_TYPE_*`: what an imported slot held.
pub const NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECT_TYPE_NONE: u8 = 0;
pub const NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECT_TYPE_VIDMEM: u8 = 1;
pub const NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECT_TYPE_SYSMEM: u8 = 2;
pub const NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECT_TYPE_FABRIC: u8 = 3;
pub const NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECT_TYPE_FABRIC_MC: u8 = 4;

/// The name of an import object type, for messages.
pub fn import_object_type_name(t: u8) -> &'static str {
    match t {
        NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECT_TYPE_NONE => "NONE",
        NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECT_TYPE_VIDMEM => "VIDMEM",
        NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECT_TYPE_SYSMEM => "SYSMEM",
        NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECT_TYPE_FABRIC => "FABRIC",
        NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECT_TYPE_FABRIC_MC => "FABRIC_MC",
        _ => "?",
    }
}

/// `NV0000_CTRL_OS_UNIX_GET_EXPORT_OBJECT_INFO_PARAMS` (80 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NV0000_CTRL_OS_UNIX_GET_EXPORT_OBJECT_INFO_PARAMS {
    /// In: the export fd.
    pub fd: i32,
    /// Out: the device instance the fd's objects live on (`NV_MAX_DEVICES` for objects
    /// parented by a client).
    pub deviceInstance: u32,
    /// Out: the MIG GPU instance, or `u32::MAX` for none.
    pub gpuInstanceId: u32,
    /// Out: the fd's slot count.
    pub maxObjects: u16,
    /// Out: the metadata given when the fd was set up.
    pub metadata: [u8; NV0000_OS_UNIX_EXPORT_OBJECT_FD_BUFFER_SIZE],
    pub _pad: [u8; 2],
}
const _: () =
    assert!(core::mem::size_of::<NV0000_CTRL_OS_UNIX_GET_EXPORT_OBJECT_INFO_PARAMS>() == 80);
impl Default for NV0000_CTRL_OS_UNIX_GET_EXPORT_OBJECT_INFO_PARAMS {
    fn default() -> Self {
        bytemuck::Zeroable::zeroed()
    }
}

/// `NV0000_CTRL_OS_UNIX_EXPORT_OBJECTS_TO_FD_PARAMS` (2128 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NV0000_CTRL_OS_UNIX_EXPORT_OBJECTS_TO_FD_PARAMS {
    /// In: an open `/dev/nvidiactl` fd (the kernel does not create one).
    pub fd: i32,
    /// In: the device every exported object belongs to.
    pub hDevice: u32,
    /// In: the fd's slot count, fixed by the first export into the fd.
    pub maxObjects: u16,
    /// In: metadata for the importer, fixed by the first export into the fd.
    pub metadata: [u8; NV0000_OS_UNIX_EXPORT_OBJECT_FD_BUFFER_SIZE],
    pub _pad: [u8; 2],
    /// In: the handles to export (0 clears a slot).
    pub objects: [u32; NV0000_CTRL_OS_UNIX_EXPORT_OBJECTS_TO_FD_MAX_OBJECTS],
    /// In: how many of `objects` to export.
    pub numObjects: u16,
    /// In: the first slot.
    pub index: u16,
}
const _: () =
    assert!(core::mem::size_of::<NV0000_CTRL_OS_UNIX_EXPORT_OBJECTS_TO_FD_PARAMS>() == 2128);
impl Default for NV0000_CTRL_OS_UNIX_EXPORT_OBJECTS_TO_FD_PARAMS {
    fn default() -> Self {
        bytemuck::Zeroable::zeroed()
    }
}

/// `NV0000_CTRL_OS_UNIX_IMPORT_OBJECTS_FROM_FD_PARAMS` (652 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NV0000_CTRL_OS_UNIX_IMPORT_OBJECTS_FROM_FD_PARAMS {
    /// In: the export fd.
    pub fd: i32,
    /// In: the parent the objects are duplicated under.
    pub hParent: u32,
    /// In: the handles the duplicates get (caller-chosen, non-zero).
    pub objects: [u32; NV0000_CTRL_OS_UNIX_IMPORT_OBJECTS_TO_FD_MAX_OBJECTS],
    /// Out: `NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECT_TYPE_*` per object.
    pub objectTypes: [u8; NV0000_CTRL_OS_UNIX_IMPORT_OBJECTS_TO_FD_MAX_OBJECTS],
    /// In: how many of `objects` to import.
    pub numObjects: u16,
    /// In: the first slot.
    pub index: u16,
}
const _: () =
    assert!(core::mem::size_of::<NV0000_CTRL_OS_UNIX_IMPORT_OBJECTS_FROM_FD_PARAMS>() == 652);
impl Default for NV0000_CTRL_OS_UNIX_IMPORT_OBJECTS_FROM_FD_PARAMS {
    fn default() -> Self {
        bytemuck::Zeroable::zeroed()
    }
}

/// Memory object: surface information, a list of `{index, data}` pairs at a user pointer
/// (size-checked, 16).
pub const NV0041_CTRL_CMD_GET_SURFACE_INFO: u32 = 0x0041_0110;

/// `NV0041_CTRL_SURFACE_INFO_INDEX_*`.
pub const NV0041_CTRL_SURFACE_INFO_INDEX_PHYS_SIZE_LO: u32 = 2;
pub const NV0041_CTRL_SURFACE_INFO_INDEX_PHYS_SIZE_HI: u32 = 3;
pub const NV0041_CTRL_SURFACE_INFO_INDEX_PHYS_ATTR: u32 = 8;
pub const NV0041_CTRL_SURFACE_INFO_INDEX_ADDR_SPACE_TYPE: u32 = 9;
/// `NV0041_CTRL_SURFACE_INFO_PHYS_ATTR_PAGE_SIZE` (= `NVOS32_ATTR_PAGE_SIZE`, bits 24:23).
pub const NV0041_CTRL_SURFACE_INFO_PHYS_ATTR_PAGE_SIZE_SHIFT: u32 = 23;

/// `NV0041_CTRL_SURFACE_INFO` (`NVXXXX_CTRL_XXX_INFO`, 8 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NV0041_CTRL_SURFACE_INFO {
    pub index: u32,
    pub data: u32,
}
const _: () = assert!(core::mem::size_of::<NV0041_CTRL_SURFACE_INFO>() == 8);

/// `NV0041_CTRL_GET_SURFACE_INFO_PARAMS` (16 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NV0041_CTRL_GET_SURFACE_INFO_PARAMS {
    pub surfaceInfoListSize: u32,
    pub _pad: u32,
    /// User pointer to `surfaceInfoListSize` [`NV0041_CTRL_SURFACE_INFO`] entries.
    pub surfaceInfoList: u64,
}
const _: () = assert!(core::mem::size_of::<NV0041_CTRL_GET_SURFACE_INFO_PARAMS>() == 16);

/// `NV0000_CTRL_CMD_CLIENT_GET_ADDR_SPACE_TYPE_*`: the values of the ADDR_SPACE_TYPE surface
/// info.
pub const NV0000_CTRL_CMD_CLIENT_GET_ADDR_SPACE_TYPE_SYSMEM: u32 = 1;
pub const NV0000_CTRL_CMD_CLIENT_GET_ADDR_SPACE_TYPE_VIDMEM: u32 = 2;
