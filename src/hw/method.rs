//! Pushbuffer method headers and class method offsets.
//!
//! A method header is `(SEC_OP << 29) | (COUNT << 16) | (SUBCHANNEL << 13) | (METHOD >> 2)`
//! (dev_ram.ref "FIFO_DMA", `NVC56F_DMA_*`). Method offsets below are **byte** offsets, named as
//! in the NVIDIA class headers (`clc56f.h`/`clc76f.h`/`clc86f.h` host, `clc7c0.h` compute,
//! `clc7b5.h`/`clc8b5.h` copy). Host offsets and the USERD layout are identical for c56f, c76f
//! and c86f; compute offsets are identical for c6c0/c7c0/c9c0/cbc0/cdc0/cec0; copy offsets are
//! identical for c6b5..cab5 (only the widths of address uppers differ; see
//! [`crate::hw::arch::PbCaps`]).

use crate::error::{Error, Result, Status};

/// A bit field `hi:lo` (inclusive) inside one 32-bit method data word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// Highest bit (inclusive).
    pub hi: u32,
    /// Lowest bit.
    pub lo: u32,
}

impl Field {
    /// A field `hi:lo`.
    pub const fn new(hi: u32, lo: u32) -> Field {
        Field { hi, lo }
    }
    /// Width in bits.
    pub const fn width(self) -> u32 {
        self.hi - self.lo + 1
    }
    /// Mask of the field's value, not shifted.
    pub const fn mask(self) -> u32 {
        if self.width() >= 32 {
            u32::MAX
        } else {
            (1u32 << self.width()) - 1
        }
    }
    /// `v` placed in the field (excess high bits of `v` are dropped).
    pub const fn val(self, v: u32) -> u32 {
        (v & self.mask()) << self.lo
    }
    /// The field's value extracted from `word`.
    pub const fn get(self, word: u32) -> u32 {
        (word >> self.lo) & self.mask()
    }
}

// ---------------------------------------------------------------------------------------------
// Header encoding (NVC56F_DMA_*)
// ---------------------------------------------------------------------------------------------

/// SEC_OP of an incrementing method run.
pub const NVC56F_DMA_SEC_OP_INC_METHOD: u32 = 1;
/// SEC_OP of a non-incrementing method run.
pub const NVC56F_DMA_SEC_OP_NON_INC_METHOD: u32 = 3;
/// SEC_OP of an immediate-data method (data in bits 28:16).
pub const NVC56F_DMA_SEC_OP_IMMD_DATA_METHOD: u32 = 4;
/// SEC_OP of an increment-once run.
pub const NVC56F_DMA_SEC_OP_ONE_INC: u32 = 5;
/// SEC_OP that ends a pushbuffer segment.
pub const NVC56F_DMA_SEC_OP_END_PB_SEGMENT: u32 = 7;
/// Header field: method address in dwords.
pub const NVC56F_DMA_METHOD_ADDRESS: Field = Field::new(11, 0);
/// Header field: subchannel.
pub const NVC56F_DMA_METHOD_SUBCHANNEL: Field = Field::new(15, 13);
/// Header field: data-word count.
pub const NVC56F_DMA_METHOD_COUNT: Field = Field::new(28, 16);
/// Header field: immediate data (IMMD only).
pub const NVC56F_DMA_IMMD_DATA: Field = Field::new(28, 16);
/// Header field: SEC_OP.
pub const NVC56F_DMA_SEC_OP: Field = Field::new(31, 29);
/// The universal no-op pushbuffer word.
pub const NVC56F_DMA_NOP: u32 = 0;

/// Largest COUNT (and largest IMMD data) a header can carry.
pub const MAX_METHOD_COUNT: u32 = 0x1FFF;
/// Largest IMMD data value.
pub const MAX_IMMD_DATA: u32 = 0x1FFF;
/// One past the largest method byte offset (12-bit dword address).
pub const METHOD_LIMIT: u32 = 0x4000;

/// Subchannel used for host methods (any subchannel works for host methods; 0 by convention).
pub const SUBCH_HOST: u32 = 0;
/// Subchannel the compute class is bound to.
pub const SUBCH_COMPUTE: u32 = 1;
/// Subchannel the copy class is bound to.
pub const SUBCH_COPY: u32 = 4;

/// Raw header: no checks, every argument masked to its field. Prefer the checked forms.
#[inline]
pub const fn header(sec_op: u32, count: u32, subch: u32, byte_method: u32) -> u32 {
    NVC56F_DMA_SEC_OP.val(sec_op)
        | NVC56F_DMA_METHOD_COUNT.val(count)
        | NVC56F_DMA_METHOD_SUBCHANNEL.val(subch)
        | NVC56F_DMA_METHOD_ADDRESS.val(byte_method >> 2)
}

#[inline]
fn check(what: &str, subch: u32, byte_method: u32, count: u32) -> Result<()> {
    if subch > 7 || byte_method >= METHOD_LIMIT || byte_method & 3 != 0 || count > MAX_METHOD_COUNT
    {
        return Err(Error::new(
            Status::InvalidArgument,
            format!(
                "hw::method::{what}(subch={subch}, method={byte_method:#x}, count={count}): subchannel must be \
                 0..7, method a 4-byte-aligned offset below {METHOD_LIMIT:#x}, count at most {MAX_METHOD_COUNT:#x}"
            ),
        ));
    }
    Ok(())
}

/// Incrementing-method header (SEC_OP 1): `count` data words go to `method`, `method+4`, ...
pub fn inc(subch: u32, byte_method: u32, count: u32) -> Result<u32> {
    check("inc", subch, byte_method, count)?;
    Ok(header(
        NVC56F_DMA_SEC_OP_INC_METHOD,
        count,
        subch,
        byte_method,
    ))
}

/// Non-incrementing header (SEC_OP 3): all `count` data words go to `method`.
pub fn noninc(subch: u32, byte_method: u32, count: u32) -> Result<u32> {
    check("noninc", subch, byte_method, count)?;
    Ok(header(
        NVC56F_DMA_SEC_OP_NON_INC_METHOD,
        count,
        subch,
        byte_method,
    ))
}

/// Increment-once header (SEC_OP 5): the first word goes to `method`, the rest to `method+4`.
pub fn one_inc(subch: u32, byte_method: u32, count: u32) -> Result<u32> {
    check("one_inc", subch, byte_method, count)?;
    Ok(header(NVC56F_DMA_SEC_OP_ONE_INC, count, subch, byte_method))
}

/// Immediate-data header (SEC_OP 4): one method with `data` (at most 0x1FFF) inside the header.
pub fn immd(subch: u32, byte_method: u32, data: u32) -> Result<u32> {
    check("immd", subch, byte_method, 0)?;
    if data > MAX_IMMD_DATA {
        return Err(Error::invalid(format!(
            "hw::method::immd(subch={subch}, method={byte_method:#x}, data={data:#x}): immediate data must be at most {MAX_IMMD_DATA:#x}"
        )));
    }
    Ok(header(
        NVC56F_DMA_SEC_OP_IMMD_DATA_METHOD,
        data,
        subch,
        byte_method,
    ))
}

// ---------------------------------------------------------------------------------------------
// Host (GPFIFO class) methods: c56f / c76f / c86f share these offsets.
// ---------------------------------------------------------------------------------------------

/// SET_OBJECT: 15:0 class, 20:16 engine. Forwarded to the engine bound to the subchannel.
pub const NVC56F_SET_OBJECT: u32 = 0x0000;
/// SET_OBJECT class field.
pub const NVC56F_SET_OBJECT_NVCLASS: Field = Field::new(15, 0);
/// SET_OBJECT engine field.
pub const NVC56F_SET_OBJECT_ENGINE: Field = Field::new(20, 16);
/// Illegal method (traps).
pub const NVC56F_ILLEGAL: u32 = 0x0004;
/// NOP.
pub const NVC56F_NOP: u32 = 0x0008;
/// Legacy 32-bit semaphore A (avoid; use SEM_*).
pub const NVC56F_SEMAPHOREA: u32 = 0x0010;
/// Legacy semaphore B.
pub const NVC56F_SEMAPHOREB: u32 = 0x0014;
/// Legacy semaphore C.
pub const NVC56F_SEMAPHOREC: u32 = 0x0018;
/// Legacy semaphore D.
pub const NVC56F_SEMAPHORED: u32 = 0x001C;
/// Raise a non-stall interrupt (data = handle, write 0).
pub const NVC56F_NON_STALL_INTERRUPT: u32 = 0x0020;
/// Deprecated; use MEM_OP MEMBAR SYS_MEMBAR.
pub const NVC56F_FB_FLUSH: u32 = 0x0024;
/// MEM_OP_A: TLB target lo / bit 11 SYSMEMBAR.
pub const NVC56F_MEM_OP_A: u32 = 0x0028;
/// MEM_OP_B: TLB target hi.
pub const NVC56F_MEM_OP_B: u32 = 0x002C;
/// MEM_OP_C: 2:0 MEMBAR_TYPE (and TLB invalidate fields).
pub const NVC56F_MEM_OP_C: u32 = 0x0030;
/// MEM_OP_D: 31:27 OPERATION; writing D triggers the operation.
pub const NVC56F_MEM_OP_D: u32 = 0x0034;
/// MEM_OP_C MEMBAR_TYPE field.
pub const NVC56F_MEM_OP_C_MEMBAR_TYPE: Field = Field::new(2, 0);
/// MEMBAR_TYPE: system membar (coherent with the CPU and peers).
pub const NVC56F_MEM_OP_C_MEMBAR_TYPE_SYS_MEMBAR: u32 = 0;
/// MEMBAR_TYPE: GPU-clients-only membar.
pub const NVC56F_MEM_OP_C_MEMBAR_TYPE_MEMBAR: u32 = 1;
/// MEM_OP_D OPERATION field.
pub const NVC56F_MEM_OP_D_OPERATION: Field = Field::new(31, 27);
/// OPERATION: MEMBAR.
pub const NVC56F_MEM_OP_D_OPERATION_MEMBAR: u32 = 0x05;
/// OPERATION: MMU_TLB_INVALIDATE (privileged).
pub const NVC56F_MEM_OP_D_OPERATION_MMU_TLB_INVALIDATE: u32 = 0x09;
/// OPERATION: MMU_TLB_INVALIDATE_TARGETED (privileged).
pub const NVC56F_MEM_OP_D_OPERATION_MMU_TLB_INVALIDATE_TARGETED: u32 = 0x0A;
/// OPERATION: L2_PEERMEM_INVALIDATE.
pub const NVC56F_MEM_OP_D_OPERATION_L2_PEERMEM_INVALIDATE: u32 = 0x0D;
/// OPERATION: L2_SYSMEM_INVALIDATE.
pub const NVC56F_MEM_OP_D_OPERATION_L2_SYSMEM_INVALIDATE: u32 = 0x0E;
/// OPERATION: L2_CLEAN_COMPTAGS.
pub const NVC56F_MEM_OP_D_OPERATION_L2_CLEAN_COMPTAGS: u32 = 0x0F;
/// OPERATION: L2_FLUSH_DIRTY.
pub const NVC56F_MEM_OP_D_OPERATION_L2_FLUSH_DIRTY: u32 = 0x10;
/// OPERATION: L2_WAIT_FOR_SYS_PENDING_READS.
pub const NVC56F_MEM_OP_D_OPERATION_L2_WAIT_FOR_SYS_PENDING_READS: u32 = 0x15;
/// SET_REFERENCE: value goes to USERD.REF.
pub const NVC56F_SET_REFERENCE: u32 = 0x0050;
/// SEM_ADDR_LO: semaphore address bits 31:2.
pub const NVC56F_SEM_ADDR_LO: u32 = 0x005C;
/// SEM_ADDR_HI: address bits 39:32 (c56f/c76f, 7:0) or 56:32 (c86f, 24:0).
pub const NVC56F_SEM_ADDR_HI: u32 = 0x0060;
/// SEM_PAYLOAD_LO.
pub const NVC56F_SEM_PAYLOAD_LO: u32 = 0x0064;
/// SEM_PAYLOAD_HI.
pub const NVC56F_SEM_PAYLOAD_HI: u32 = 0x0068;
/// SEM_EXECUTE: runs the semaphore operation.
pub const NVC56F_SEM_EXECUTE: u32 = 0x006C;
/// SEM_EXECUTE OPERATION field.
pub const NVC56F_SEM_EXECUTE_OPERATION: Field = Field::new(2, 0);
/// OPERATION: acquire (==).
pub const NVC56F_SEM_EXECUTE_OPERATION_ACQUIRE: u32 = 0;
/// OPERATION: release.
pub const NVC56F_SEM_EXECUTE_OPERATION_RELEASE: u32 = 1;
/// OPERATION: acquire when unsigned >=.
pub const NVC56F_SEM_EXECUTE_OPERATION_ACQ_STRICT_GEQ: u32 = 2;
/// OPERATION: acquire when wrap-safe >=.
pub const NVC56F_SEM_EXECUTE_OPERATION_ACQ_CIRC_GEQ: u32 = 3;
/// OPERATION: acquire when (value & payload) != 0.
pub const NVC56F_SEM_EXECUTE_OPERATION_ACQ_AND: u32 = 4;
/// OPERATION: acquire when (value | payload) != all ones.
pub const NVC56F_SEM_EXECUTE_OPERATION_ACQ_NOR: u32 = 5;
/// OPERATION: reduction.
pub const NVC56F_SEM_EXECUTE_OPERATION_REDUCTION: u32 = 6;
/// SEM_EXECUTE ACQUIRE_SWITCH_TSG field (bit 12).
pub const NVC56F_SEM_EXECUTE_ACQUIRE_SWITCH_TSG: Field = Field::new(12, 12);
/// ACQUIRE_SWITCH_TSG disabled.
pub const NVC56F_SEM_EXECUTE_ACQUIRE_SWITCH_TSG_DIS: u32 = 0;
/// ACQUIRE_SWITCH_TSG enabled.
pub const NVC56F_SEM_EXECUTE_ACQUIRE_SWITCH_TSG_EN: u32 = 1;
/// SEM_EXECUTE RELEASE_WFI field (bit 20): wait for idle + sysmembar before the release.
pub const NVC56F_SEM_EXECUTE_RELEASE_WFI: Field = Field::new(20, 20);
/// RELEASE_WFI enabled.
pub const NVC56F_SEM_EXECUTE_RELEASE_WFI_EN: u32 = 1;
/// SEM_EXECUTE PAYLOAD_SIZE field (bit 24).
pub const NVC56F_SEM_EXECUTE_PAYLOAD_SIZE: Field = Field::new(24, 24);
/// PAYLOAD_SIZE 32-bit.
pub const NVC56F_SEM_EXECUTE_PAYLOAD_SIZE_32BIT: u32 = 0;
/// PAYLOAD_SIZE 64-bit.
pub const NVC56F_SEM_EXECUTE_PAYLOAD_SIZE_64BIT: u32 = 1;
/// SEM_EXECUTE RELEASE_TIMESTAMP field (bit 25): 16-byte semaphore with PTIMER ns.
pub const NVC56F_SEM_EXECUTE_RELEASE_TIMESTAMP: Field = Field::new(25, 25);
/// RELEASE_TIMESTAMP enabled.
pub const NVC56F_SEM_EXECUTE_RELEASE_TIMESTAMP_EN: u32 = 1;
/// SEM_EXECUTE REDUCTION op field.
pub const NVC56F_SEM_EXECUTE_REDUCTION: Field = Field::new(30, 27);
/// SEM_EXECUTE REDUCTION_FORMAT field.
pub const NVC56F_SEM_EXECUTE_REDUCTION_FORMAT: Field = Field::new(31, 31);
/// WFI: 0:0 SCOPE. Host waits until the engine is idle.
pub const NVC56F_WFI: u32 = 0x0078;
/// WFI SCOPE field.
pub const NVC56F_WFI_SCOPE: Field = Field::new(0, 0);
/// WFI SCOPE: current VEID.
pub const NVC56F_WFI_SCOPE_CURRENT_VEID: u32 = 0;
/// WFI SCOPE: all VEIDs.
pub const NVC56F_WFI_SCOPE_ALL: u32 = 1;
/// YIELD.
pub const NVC56F_YIELD: u32 = 0x0080;
/// CLEAR_FAULTED.
pub const NVC56F_CLEAR_FAULTED: u32 = 0x0084;

/// USERD byte offset of GP_GET (read-only, next GP entry the GPU fetches).
pub const NVC56F_USERD_GP_GET: usize = 0x88;
/// USERD byte offset of GP_PUT (written by the CPU: next free GP entry).
pub const NVC56F_USERD_GP_PUT: usize = 0x8C;
/// Doorbell (NOTIFY_CHANNEL_PENDING) byte offset in the usermode window (all usermode classes).
pub const NVC361_NOTIFY_CHANNEL_PENDING: usize = 0x90;

// ---------------------------------------------------------------------------------------------
// Compute class methods (c6c0/c7c0/c9c0/cbc0/cdc0/cec0 share these offsets).
// ---------------------------------------------------------------------------------------------

/// SET_OBJECT on the compute subchannel.
pub const NVC7C0_SET_OBJECT: u32 = 0x0000;
/// NO_OPERATION.
pub const NVC7C0_NO_OPERATION: u32 = 0x0100;
/// WAIT_FOR_IDLE: serializes grids inside the engine (value ignored).
pub const NVC7C0_WAIT_FOR_IDLE: u32 = 0x0110;
/// I2M LINE_LENGTH_IN (bytes).
pub const NVC7C0_LINE_LENGTH_IN: u32 = 0x0180;
/// I2M LINE_COUNT.
pub const NVC7C0_LINE_COUNT: u32 = 0x0184;
/// I2M OFFSET_OUT_UPPER.
pub const NVC7C0_OFFSET_OUT_UPPER: u32 = 0x0188;
/// I2M OFFSET_OUT (lower).
pub const NVC7C0_OFFSET_OUT: u32 = 0x018C;
/// I2M LAUNCH_DMA.
pub const NVC7C0_LAUNCH_DMA: u32 = 0x01B0;
/// I2M LOAD_INLINE_DATA (send non-incrementing).
pub const NVC7C0_LOAD_INLINE_DATA: u32 = 0x01B4;
/// INVALIDATE_SHADER_CACHES (waits for idle): 0 INSTRUCTION, 1 LOCKS, 2 FLUSH_DATA, 4 DATA, 12 CONSTANT.
pub const NVC7C0_INVALIDATE_SHADER_CACHES: u32 = 0x021C;
/// INVALIDATE_SKED_CACHES (0:0).
pub const NVC7C0_INVALIDATE_SKED_CACHES: u32 = 0x0298;
/// SET_SHADER_SHARED_MEMORY_WINDOW_A: 16:0 address upper.
pub const NVC7C0_SET_SHADER_SHARED_MEMORY_WINDOW_A: u32 = 0x02A0;
/// SET_SHADER_SHARED_MEMORY_WINDOW_B: address lower.
pub const NVC7C0_SET_SHADER_SHARED_MEMORY_WINDOW_B: u32 = 0x02A4;
/// SEND_PCAS_A: QMD address >> 8.
pub const NVC7C0_SEND_PCAS_A: u32 = 0x02B4;
/// SEND_PCAS_B: 23:0 FROM, 31:24 DELTA.
pub const NVC7C0_SEND_PCAS_B: u32 = 0x02B8;
/// SEND_SIGNALING_PCAS_B (pre-Ampere style).
pub const NVC7C0_SEND_SIGNALING_PCAS_B: u32 = 0x02BC;
/// SEND_SIGNALING_PCAS2_B: 3:0 PCAS_ACTION.
pub const NVC7C0_SEND_SIGNALING_PCAS2_B: u32 = 0x02C0;
/// SEND_SIGNALING_PCAS2_B PCAS_ACTION field.
pub const NVC7C0_SEND_SIGNALING_PCAS2_B_PCAS_ACTION: Field = Field::new(3, 0);
/// PCAS_ACTION NOP.
pub const NVC7C0_SEND_SIGNALING_PCAS2_B_PCAS_ACTION_NOP: u32 = 0x0;
/// PCAS_ACTION INVALIDATE.
pub const NVC7C0_SEND_SIGNALING_PCAS2_B_PCAS_ACTION_INVALIDATE: u32 = 0x1;
/// PCAS_ACTION SCHEDULE.
pub const NVC7C0_SEND_SIGNALING_PCAS2_B_PCAS_ACTION_SCHEDULE: u32 = 0x2;
/// PCAS_ACTION INVALIDATE_COPY_SCHEDULE (NVK).
pub const NVC7C0_SEND_SIGNALING_PCAS2_B_PCAS_ACTION_INVALIDATE_COPY_SCHEDULE: u32 = 0x3;
/// PCAS_ACTION INCREMENT_PUT.
pub const NVC7C0_SEND_SIGNALING_PCAS2_B_PCAS_ACTION_INCREMENT_PUT: u32 = 0x6;
/// PCAS_ACTION DECREMENT_DEPENDENCE.
pub const NVC7C0_SEND_SIGNALING_PCAS2_B_PCAS_ACTION_DECREMENT_DEPENDENCE: u32 = 0x7;
/// PCAS_ACTION PREFETCH.
pub const NVC7C0_SEND_SIGNALING_PCAS2_B_PCAS_ACTION_PREFETCH: u32 = 0x8;
/// PCAS_ACTION PREFETCH_SCHEDULE (tinygrad, Orin seeds).
pub const NVC7C0_SEND_SIGNALING_PCAS2_B_PCAS_ACTION_PREFETCH_SCHEDULE: u32 = 0x9;
/// PCAS_ACTION INVALIDATE_PREFETCH_COPY_SCHEDULE.
pub const NVC7C0_SEND_SIGNALING_PCAS2_B_PCAS_ACTION_INVALIDATE_PREFETCH_COPY_SCHEDULE: u32 = 0xA;
/// PCAS_ACTION INVALIDATE_PREFETCH_COPY_FORCE_REQUIRE_SCHEDULING.
pub const NVC7C0_SEND_SIGNALING_PCAS2_B_PCAS_ACTION_INVALIDATE_PREFETCH_COPY_FORCE_REQUIRE_SCHEDULING: u32 = 0xB;
/// PCAS_ACTION INCREMENT_DEPENDENCE.
pub const NVC7C0_SEND_SIGNALING_PCAS2_B_PCAS_ACTION_INCREMENT_DEPENDENCE: u32 = 0xC;
/// PCAS_ACTION INCREMENT_CWD_REF_COUNTER.
pub const NVC7C0_SEND_SIGNALING_PCAS2_B_PCAS_ACTION_INCREMENT_CWD_REF_COUNTER: u32 = 0xD;
/// SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_A: 7:0 size upper (bytes per TPC).
pub const NVC7C0_SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_A: u32 = 0x02E4;
/// SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_B: size lower.
pub const NVC7C0_SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_B: u32 = 0x02E8;
/// SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_C: 8:0 MAX_SM_COUNT.
pub const NVC7C0_SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_C: u32 = 0x02EC;
/// SET_SHADER_LOCAL_MEMORY_A: backing-store address upper (c7c0 16:0, cbc0 24:0).
pub const NVC7C0_SET_SHADER_LOCAL_MEMORY_A: u32 = 0x0790;
/// SET_SHADER_LOCAL_MEMORY_B: backing-store address lower.
pub const NVC7C0_SET_SHADER_LOCAL_MEMORY_B: u32 = 0x0794;
/// SET_SHADER_LOCAL_MEMORY_WINDOW_A: 16:0 address upper.
pub const NVC7C0_SET_SHADER_LOCAL_MEMORY_WINDOW_A: u32 = 0x07B0;
/// SET_SHADER_LOCAL_MEMORY_WINDOW_B: address lower.
pub const NVC7C0_SET_SHADER_LOCAL_MEMORY_WINDOW_B: u32 = 0x07B4;
/// SET_TEXTURE_HEADER_VERSION (cbc0 and later only): 7:0 MAJOR; 1 selects the TEXHEAD_V2 layouts.
pub const NVCBC0_SET_TEXTURE_HEADER_VERSION: u32 = 0x07AC;
/// SET_TEX_SAMPLER_POOL_A: address upper (c7c0 16:0, cbc0 24:0).
pub const NVC7C0_SET_TEX_SAMPLER_POOL_A: u32 = 0x155C;
/// SET_TEX_SAMPLER_POOL_B: address lower.
pub const NVC7C0_SET_TEX_SAMPLER_POOL_B: u32 = 0x1560;
/// SET_TEX_SAMPLER_POOL_C: 19:0 MAXIMUM_INDEX (inclusive).
pub const NVC7C0_SET_TEX_SAMPLER_POOL_C: u32 = 0x1564;
/// SET_TEX_HEADER_POOL_A: address upper (c7c0 16:0, cbc0 24:0).
pub const NVC7C0_SET_TEX_HEADER_POOL_A: u32 = 0x1574;
/// SET_TEX_HEADER_POOL_B: address lower.
pub const NVC7C0_SET_TEX_HEADER_POOL_B: u32 = 0x1578;
/// SET_TEX_HEADER_POOL_C: 21:0 MAXIMUM_INDEX (inclusive).
pub const NVC7C0_SET_TEX_HEADER_POOL_C: u32 = 0x157C;
/// INVALIDATE_SHADER_CACHES_NO_WFI: 0 INSTRUCTION, 4 GLOBAL_DATA, 12 CONSTANT.
pub const NVC7C0_INVALIDATE_SHADER_CACHES_NO_WFI: u32 = 0x1698;
/// INVALIDATE_SHADER_CACHES_NO_WFI INSTRUCTION field.
pub const NVC7C0_INVALIDATE_SHADER_CACHES_NO_WFI_INSTRUCTION: Field = Field::new(0, 0);
/// INVALIDATE_SHADER_CACHES_NO_WFI GLOBAL_DATA field.
pub const NVC7C0_INVALIDATE_SHADER_CACHES_NO_WFI_GLOBAL_DATA: Field = Field::new(4, 4);
/// INVALIDATE_SHADER_CACHES_NO_WFI CONSTANT field.
pub const NVC7C0_INVALIDATE_SHADER_CACHES_NO_WFI_CONSTANT: Field = Field::new(12, 12);
/// INSTRUCTION | GLOBAL_DATA | CONSTANT = 0x1011, tinygrad's per-launch value.
pub const INVALIDATE_SHADER_CACHES_ALL: u32 = 0x1011;
/// SET_REPORT_SEMAPHORE_A: address upper (c7c0 7:0, cbc0 24:0).
pub const NVC7C0_SET_REPORT_SEMAPHORE_A: u32 = 0x1B00;
/// SET_REPORT_SEMAPHORE_B: address lower.
pub const NVC7C0_SET_REPORT_SEMAPHORE_B: u32 = 0x1B04;
/// SET_REPORT_SEMAPHORE_C: payload.
pub const NVC7C0_SET_REPORT_SEMAPHORE_C: u32 = 0x1B08;
/// SET_REPORT_SEMAPHORE_D: operation (triggers the report).
pub const NVC7C0_SET_REPORT_SEMAPHORE_D: u32 = 0x1B0C;
/// SET_REPORT_SEMAPHORE_D OPERATION field (0 RELEASE, 3 TRAP).
pub const NVC7C0_SET_REPORT_SEMAPHORE_D_OPERATION: Field = Field::new(1, 0);
/// SET_REPORT_SEMAPHORE_D FLUSH_DISABLE field.
pub const NVC7C0_SET_REPORT_SEMAPHORE_D_FLUSH_DISABLE: Field = Field::new(2, 2);
/// SET_REPORT_SEMAPHORE_D STRUCTURE_SIZE field (0 four words, 1 one word).
pub const NVC7C0_SET_REPORT_SEMAPHORE_D_STRUCTURE_SIZE: Field = Field::new(28, 28);

// ---------------------------------------------------------------------------------------------
// Copy engine methods (c6b5 .. cab5 share these offsets).
// ---------------------------------------------------------------------------------------------

/// NOP.
pub const NVC7B5_NOP: u32 = 0x0100;
/// SET_SEMAPHORE_A: address upper (c7b5 16:0, c8b5 24:0).
pub const NVC7B5_SET_SEMAPHORE_A: u32 = 0x0240;
/// SET_SEMAPHORE_B: address lower.
pub const NVC7B5_SET_SEMAPHORE_B: u32 = 0x0244;
/// SET_SEMAPHORE_PAYLOAD.
pub const NVC7B5_SET_SEMAPHORE_PAYLOAD: u32 = 0x0248;
/// SET_SEMAPHORE_PAYLOAD_UPPER (with LAUNCH_DMA SEMAPHORE_PAYLOAD_SIZE TWO_WORD; not on c6b5).
pub const NVC7B5_SET_SEMAPHORE_PAYLOAD_UPPER: u32 = 0x024C;
/// LAUNCH_DMA.
pub const NVC7B5_LAUNCH_DMA: u32 = 0x0300;
/// OFFSET_IN_UPPER.
pub const NVC7B5_OFFSET_IN_UPPER: u32 = 0x0400;
/// OFFSET_IN_LOWER.
pub const NVC7B5_OFFSET_IN_LOWER: u32 = 0x0404;
/// OFFSET_OUT_UPPER.
pub const NVC7B5_OFFSET_OUT_UPPER: u32 = 0x0408;
/// OFFSET_OUT_LOWER.
pub const NVC7B5_OFFSET_OUT_LOWER: u32 = 0x040C;
/// PITCH_IN (multi-line only).
pub const NVC7B5_PITCH_IN: u32 = 0x0410;
/// PITCH_OUT (multi-line only).
pub const NVC7B5_PITCH_OUT: u32 = 0x0414;
/// LINE_LENGTH_IN (bytes).
pub const NVC7B5_LINE_LENGTH_IN: u32 = 0x0418;
/// LINE_COUNT (multi-line only).
pub const NVC7B5_LINE_COUNT: u32 = 0x041C;
/// SET_REMAP_CONST_A.
pub const NVC7B5_SET_REMAP_CONST_A: u32 = 0x0700;
/// SET_REMAP_CONST_B.
pub const NVC7B5_SET_REMAP_CONST_B: u32 = 0x0704;
/// SET_REMAP_COMPONENTS.
pub const NVC7B5_SET_REMAP_COMPONENTS: u32 = 0x0708;

/// LAUNCH_DMA DATA_TRANSFER_TYPE field.
pub const NVC7B5_LAUNCH_DMA_DATA_TRANSFER_TYPE: Field = Field::new(1, 0);
/// DATA_TRANSFER_TYPE NONE.
pub const NVC7B5_LAUNCH_DMA_DATA_TRANSFER_TYPE_NONE: u32 = 0;
/// DATA_TRANSFER_TYPE PIPELINED.
pub const NVC7B5_LAUNCH_DMA_DATA_TRANSFER_TYPE_PIPELINED: u32 = 1;
/// DATA_TRANSFER_TYPE NON_PIPELINED.
pub const NVC7B5_LAUNCH_DMA_DATA_TRANSFER_TYPE_NON_PIPELINED: u32 = 2;
/// LAUNCH_DMA FLUSH_ENABLE field.
pub const NVC7B5_LAUNCH_DMA_FLUSH_ENABLE: Field = Field::new(2, 2);
/// FLUSH_ENABLE TRUE.
pub const NVC7B5_LAUNCH_DMA_FLUSH_ENABLE_TRUE: u32 = 1;
/// LAUNCH_DMA SEMAPHORE_TYPE field.
pub const NVC7B5_LAUNCH_DMA_SEMAPHORE_TYPE: Field = Field::new(4, 3);
/// SEMAPHORE_TYPE NONE.
pub const NVC7B5_LAUNCH_DMA_SEMAPHORE_TYPE_NONE: u32 = 0;
/// SEMAPHORE_TYPE RELEASE_ONE_WORD_SEMAPHORE (no timestamp).
pub const NVC7B5_LAUNCH_DMA_SEMAPHORE_TYPE_RELEASE_ONE_WORD_SEMAPHORE: u32 = 1;
/// SEMAPHORE_TYPE RELEASE_FOUR_WORD_SEMAPHORE (payload + timestamp).
pub const NVC7B5_LAUNCH_DMA_SEMAPHORE_TYPE_RELEASE_FOUR_WORD_SEMAPHORE: u32 = 2;
/// LAUNCH_DMA INTERRUPT_TYPE field.
pub const NVC7B5_LAUNCH_DMA_INTERRUPT_TYPE: Field = Field::new(6, 5);
/// LAUNCH_DMA SRC_MEMORY_LAYOUT field.
pub const NVC7B5_LAUNCH_DMA_SRC_MEMORY_LAYOUT: Field = Field::new(7, 7);
/// LAUNCH_DMA DST_MEMORY_LAYOUT field.
pub const NVC7B5_LAUNCH_DMA_DST_MEMORY_LAYOUT: Field = Field::new(8, 8);
/// *_MEMORY_LAYOUT PITCH.
pub const NVC7B5_LAUNCH_DMA_MEMORY_LAYOUT_PITCH: u32 = 1;
/// LAUNCH_DMA MULTI_LINE_ENABLE field.
pub const NVC7B5_LAUNCH_DMA_MULTI_LINE_ENABLE: Field = Field::new(9, 9);
/// LAUNCH_DMA REMAP_ENABLE field.
pub const NVC7B5_LAUNCH_DMA_REMAP_ENABLE: Field = Field::new(10, 10);
/// LAUNCH_DMA SRC_TYPE field (0 virtual).
pub const NVC7B5_LAUNCH_DMA_SRC_TYPE: Field = Field::new(12, 12);
/// LAUNCH_DMA DST_TYPE field (0 virtual).
pub const NVC7B5_LAUNCH_DMA_DST_TYPE: Field = Field::new(13, 13);
/// LAUNCH_DMA FLUSH_TYPE field (0 SYS, 1 GL).
pub const NVC7B5_LAUNCH_DMA_FLUSH_TYPE: Field = Field::new(25, 25);
/// LAUNCH_DMA SEMAPHORE_PAYLOAD_SIZE field (c7b5 and later).
pub const NVC7B5_LAUNCH_DMA_SEMAPHORE_PAYLOAD_SIZE: Field = Field::new(27, 27);
/// SEMAPHORE_PAYLOAD_SIZE TWO_WORD (64-bit payload).
pub const NVC7B5_LAUNCH_DMA_SEMAPHORE_PAYLOAD_SIZE_TWO_WORD: u32 = 1;

/// Linear copy LAUNCH_DMA: NON_PIPELINED | SRC PITCH | DST PITCH = 0x182.
pub const CE_LAUNCH_COPY: u32 = NVC7B5_LAUNCH_DMA_DATA_TRANSFER_TYPE
    .val(NVC7B5_LAUNCH_DMA_DATA_TRANSFER_TYPE_NON_PIPELINED)
    | NVC7B5_LAUNCH_DMA_SRC_MEMORY_LAYOUT.val(NVC7B5_LAUNCH_DMA_MEMORY_LAYOUT_PITCH)
    | NVC7B5_LAUNCH_DMA_DST_MEMORY_LAYOUT.val(NVC7B5_LAUNCH_DMA_MEMORY_LAYOUT_PITCH);
/// Linear copy LAUNCH_DMA with FLUSH_ENABLE = 0x186 (last chunk).
pub const CE_LAUNCH_COPY_FLUSH: u32 =
    CE_LAUNCH_COPY | NVC7B5_LAUNCH_DMA_FLUSH_ENABLE.val(NVC7B5_LAUNCH_DMA_FLUSH_ENABLE_TRUE);
/// Constant-fill LAUNCH_DMA: [`CE_LAUNCH_COPY_FLUSH`] | REMAP_ENABLE = 0x586 (add
/// MULTI_LINE_ENABLE for several lines).
pub const CE_LAUNCH_FILL: u32 = CE_LAUNCH_COPY_FLUSH | NVC7B5_LAUNCH_DMA_REMAP_ENABLE.val(1);
/// SET_REMAP_COMPONENTS DST_X CONST_A selector.
pub const NVC7B5_SET_REMAP_COMPONENTS_DST_X_CONST_A: u32 = 4;
/// SET_REMAP_COMPONENTS COMPONENT_SIZE field (0..3 = 1..4 bytes).
pub const NVC7B5_SET_REMAP_COMPONENTS_COMPONENT_SIZE: Field = Field::new(17, 16);

/// SET_REMAP_COMPONENTS for a fill with CONST_A: DST_X = CONST_A, components of `elem_bytes`
/// (1..=4) bytes, one source and one destination component (NUM_*_COMPONENTS = 0). For 4-byte
/// components: 0x30004.
pub const fn ce_remap_const_a(elem_bytes: u32) -> u32 {
    NVC7B5_SET_REMAP_COMPONENTS_DST_X_CONST_A
        | NVC7B5_SET_REMAP_COMPONENTS_COMPONENT_SIZE.val(elem_bytes - 1)
}
/// Semaphore-only LAUNCH_DMA: FLUSH_ENABLE | FOUR_WORD release (payload + timestamp) = 0x14.
pub const CE_LAUNCH_SEM_FOUR_WORD: u32 = NVC7B5_LAUNCH_DMA_FLUSH_ENABLE
    .val(NVC7B5_LAUNCH_DMA_FLUSH_ENABLE_TRUE)
    | NVC7B5_LAUNCH_DMA_SEMAPHORE_TYPE
        .val(NVC7B5_LAUNCH_DMA_SEMAPHORE_TYPE_RELEASE_FOUR_WORD_SEMAPHORE);
/// [`CE_LAUNCH_SEM_FOUR_WORD`] with a 64-bit payload (bit 27) = 0x0800_0014.
pub const CE_LAUNCH_SEM_FOUR_WORD_64: u32 = CE_LAUNCH_SEM_FOUR_WORD
    | NVC7B5_LAUNCH_DMA_SEMAPHORE_PAYLOAD_SIZE
        .val(NVC7B5_LAUNCH_DMA_SEMAPHORE_PAYLOAD_SIZE_TWO_WORD);
