//! Pushbuffer builder over a caller-provided `&mut [u32]` (no allocation).
//!
//! Every helper checks space and arguments first and then writes all its words, so an error
//! leaves the buffer exactly as it was. Address widths are checked against [`PbCaps`]
//! (`PushBuf::for_arch` takes them from the architecture table).

use crate::error::{Error, Result, Status};
use crate::hw::arch::{ArchInfo, PbCaps};
use crate::hw::method::*;

/// I2M LAUNCH_DMA: DST_MEMORY_LAYOUT PITCH | COMPLETION_TYPE FLUSH_ONLY = 0x11.
pub const I2M_LAUNCH_DMA_PITCH_FLUSH_ONLY: u32 = 0x11;

/// Largest chunk of one CE linear copy (LINE_LENGTH_IN); longer copies are split.
pub const CE_MAX_CHUNK: u64 = 1 << 31;

/// Largest element count of one line, and line count, of a CE fill ([`PushBuf::ce_fill`]).
pub const CE_FILL_MAX_DIM: u32 = 1 << 17;

/// A pushbuffer being built in a caller-provided slice.
#[derive(Debug)]
pub struct PushBuf<'a> {
    buf: &'a mut [u32],
    len: usize,
    caps: PbCaps,
}

#[inline]
fn fits(v: u64, bits: u32) -> bool {
    bits >= 64 || v >> bits == 0
}

impl<'a> PushBuf<'a> {
    /// A builder with [`PbCaps::WIDEST`] limits (57-bit addresses, 64-bit CE payloads). Prefer
    /// [`PushBuf::for_arch`], which rejects values the chip's classes would truncate.
    pub fn new(buf: &'a mut [u32]) -> Self {
        Self::with_caps(buf, PbCaps::WIDEST)
    }
    /// A builder with the limits of `arch`'s host, compute and copy classes.
    pub fn for_arch(buf: &'a mut [u32], arch: &ArchInfo) -> Self {
        Self::with_caps(buf, arch.pb_caps)
    }
    /// A builder with explicit limits.
    pub fn with_caps(buf: &'a mut [u32], caps: PbCaps) -> Self {
        PushBuf { buf, len: 0, caps }
    }
    /// Words written so far.
    pub fn len(&self) -> usize {
        self.len
    }
    /// True when nothing was written.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Total capacity in words.
    pub fn capacity(&self) -> usize {
        self.buf.len()
    }
    /// Words still free.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.len
    }
    /// The words written so far.
    pub fn as_slice(&self) -> &[u32] {
        &self.buf[..self.len]
    }
    /// Forget everything written (the slice contents are left as they are).
    pub fn clear(&mut self) {
        self.len = 0;
    }
    /// The limits in use.
    pub fn caps(&self) -> PbCaps {
        self.caps
    }

    #[inline]
    fn reserve(&mut self, what: &str, n: usize) -> Result<&mut [u32]> {
        if self.buf.len() - self.len < n {
            return Err(Error::new(
                Status::OutOfMemory,
                format!(
                    "hw::pushbuf::{what}: needs {n} words, {} of {} free",
                    self.buf.len() - self.len,
                    self.buf.len()
                ),
            ));
        }
        let s = &mut self.buf[self.len..self.len + n];
        self.len += n;
        Ok(s)
    }

    /// Append raw words.
    pub fn push_words(&mut self, words: &[u32]) -> Result<()> {
        self.reserve("push_words", words.len())?
            .copy_from_slice(words);
        Ok(())
    }

    fn run(&mut self, what: &str, hdr: u32, data: &[u32]) -> Result<()> {
        let s = self.reserve(what, data.len() + 1)?;
        s[0] = hdr;
        s[1..].copy_from_slice(data);
        Ok(())
    }

    /// An incrementing method run: `data[k]` goes to `method + 4k`.
    pub fn inc(&mut self, subch: u32, method: u32, data: &[u32]) -> Result<()> {
        let h = inc(subch, method, data.len().min(u32::MAX as usize) as u32)?;
        self.run("inc", h, data)
    }
    /// A non-incrementing run: every word goes to `method`.
    pub fn noninc(&mut self, subch: u32, method: u32, data: &[u32]) -> Result<()> {
        let h = noninc(subch, method, data.len().min(u32::MAX as usize) as u32)?;
        self.run("noninc", h, data)
    }
    /// An increment-once run: `data[0]` goes to `method`, the rest to `method + 4`.
    pub fn one_inc(&mut self, subch: u32, method: u32, data: &[u32]) -> Result<()> {
        let h = one_inc(subch, method, data.len().min(u32::MAX as usize) as u32)?;
        self.run("one_inc", h, data)
    }
    /// An immediate-data method (`data` at most 0x1FFF).
    pub fn immd(&mut self, subch: u32, method: u32, data: u32) -> Result<()> {
        let h = immd(subch, method, data)?;
        self.run("immd", h, &[])
    }

    /// SET_OBJECT(`class`) on `subch` (0x20012000, class for compute on subchannel 1).
    pub fn set_object(&mut self, subch: u32, class: u32) -> Result<()> {
        if class > 0xFFFF {
            return Err(Error::invalid(format!(
                "hw::pushbuf::set_object(subch={subch}, class={class:#x}): class must fit 16 bits"
            )));
        }
        self.inc(subch, NVC56F_SET_OBJECT, &[class])
    }

    fn check_sem(&self, what: &str, va: u64, align: u64) -> Result<()> {
        if va & (align - 1) != 0 || !fits(va, self.caps.host_sem_addr_bits) {
            return Err(Error::invalid(format!(
                "hw::pushbuf::{what}(va={va:#x}): semaphore address must be {align}-byte aligned and below 2^{}",
                self.caps.host_sem_addr_bits
            )));
        }
        Ok(())
    }

    /// Host semaphore release (SEM_ADDR_LO..SEM_EXECUTE, one 5-word INC run on subchannel 0).
    /// `payload64` selects a 64-bit payload (8-byte alignment); `timestamp` a 16-byte
    /// payload+PTIMER semaphore (16-byte alignment); `wfi` RELEASE_WFI (wait for idle + sysmembar
    /// first). tinygrad's signal is `(payload64, timestamp, wfi) = (true, true, true)` →
    /// SEM_EXECUTE 0x0310_0001.
    pub fn host_sem_release(
        &mut self,
        va: u64,
        payload: u64,
        payload64: bool,
        timestamp: bool,
        wfi: bool,
    ) -> Result<()> {
        let align = if timestamp {
            16
        } else if payload64 {
            8
        } else {
            4
        };
        self.check_sem("host_sem_release", va, align)?;
        if !payload64 && payload > u64::from(u32::MAX) {
            return Err(Error::invalid(format!(
                "hw::pushbuf::host_sem_release(va={va:#x}, payload={payload:#x}): a 32-bit release cannot carry this payload"
            )));
        }
        let exec = NVC56F_SEM_EXECUTE_OPERATION.val(NVC56F_SEM_EXECUTE_OPERATION_RELEASE)
            | NVC56F_SEM_EXECUTE_RELEASE_WFI.val(u32::from(wfi))
            | NVC56F_SEM_EXECUTE_PAYLOAD_SIZE.val(u32::from(payload64))
            | NVC56F_SEM_EXECUTE_RELEASE_TIMESTAMP.val(u32::from(timestamp));
        self.run(
            "host_sem_release",
            header(
                NVC56F_DMA_SEC_OP_INC_METHOD,
                5,
                SUBCH_HOST,
                NVC56F_SEM_ADDR_LO,
            ),
            &[
                va as u32,
                (va >> 32) as u32,
                payload as u32,
                (payload >> 32) as u32,
                exec,
            ],
        )
    }

    /// Host semaphore acquire: wait until the 64-bit value at `va` is >= `value`, compared as
    /// unsigned 64-bit integers (ACQ_STRICT_GEQ, the rule CPU waits use too: no wrap-around, so
    /// `u64::MAX` satisfies every wait), letting the scheduler switch TSGs meanwhile.
    /// SEM_EXECUTE = 0x0100_1002.
    pub fn host_sem_acquire_geq(&mut self, va: u64, value: u64) -> Result<()> {
        self.host_sem_acquire(va, value, true, SemCond::Geq)
    }

    /// Host semaphore acquire with any comparison: wait until the 32-bit (or, with
    /// `payload64`, 64-bit) value at `va` satisfies `cond` against `value` (SEM_EXECUTE
    /// OPERATION ACQUIRE (equal), ACQ_STRICT_GEQ, ACQ_CIRC_GEQ, ACQ_AND, ACQ_NOR), letting the
    /// scheduler switch TSGs meanwhile. 4- or 8-byte alignment.
    pub fn host_sem_acquire(
        &mut self,
        va: u64,
        value: u64,
        payload64: bool,
        cond: SemCond,
    ) -> Result<()> {
        self.host_sem_acquire_switch(va, value, payload64, cond, true)
    }

    /// [`PushBuf::host_sem_acquire`] with ACQUIRE_SWITCH_TSG chosen: with `switch_tsg` false,
    /// a failed acquire keeps the TSG on the engine (Host switches to the TSG's other channels
    /// with pending work, and polls again) rather than letting the scheduler leave the TSG once
    /// every channel of it waits.
    pub fn host_sem_acquire_switch(
        &mut self,
        va: u64,
        value: u64,
        payload64: bool,
        cond: SemCond,
        switch_tsg: bool,
    ) -> Result<()> {
        self.check_sem("host_sem_acquire", va, if payload64 { 8 } else { 4 })?;
        if !payload64 && value > u64::from(u32::MAX) {
            return Err(Error::invalid(format!(
                "hw::pushbuf::host_sem_acquire(va={va:#x}, value={value:#x}): a 32-bit acquire cannot compare with this value"
            )));
        }
        let op = match cond {
            SemCond::Eq => NVC56F_SEM_EXECUTE_OPERATION_ACQUIRE,
            SemCond::Geq => NVC56F_SEM_EXECUTE_OPERATION_ACQ_STRICT_GEQ,
            SemCond::CircGeq => NVC56F_SEM_EXECUTE_OPERATION_ACQ_CIRC_GEQ,
            SemCond::And => NVC56F_SEM_EXECUTE_OPERATION_ACQ_AND,
            SemCond::Nor => NVC56F_SEM_EXECUTE_OPERATION_ACQ_NOR,
        };
        let exec = NVC56F_SEM_EXECUTE_OPERATION.val(op)
            | NVC56F_SEM_EXECUTE_ACQUIRE_SWITCH_TSG.val(if switch_tsg {
                NVC56F_SEM_EXECUTE_ACQUIRE_SWITCH_TSG_EN
            } else {
                NVC56F_SEM_EXECUTE_ACQUIRE_SWITCH_TSG_DIS
            })
            | NVC56F_SEM_EXECUTE_PAYLOAD_SIZE.val(u32::from(payload64));
        self.run(
            "host_sem_acquire",
            header(
                NVC56F_DMA_SEC_OP_INC_METHOD,
                5,
                SUBCH_HOST,
                NVC56F_SEM_ADDR_LO,
            ),
            &[
                va as u32,
                (va >> 32) as u32,
                value as u32,
                (value >> 32) as u32,
                exec,
            ],
        )
    }

    /// Host WFI with SCOPE = ALL: Host waits until the engine it last fed is idle.
    pub fn host_wfi(&mut self) -> Result<()> {
        self.run(
            "host_wfi",
            header(NVC56F_DMA_SEC_OP_INC_METHOD, 1, SUBCH_HOST, NVC56F_WFI),
            &[NVC56F_WFI_SCOPE.val(NVC56F_WFI_SCOPE_ALL)],
        )
    }

    /// System memory barrier: MEM_OP_A..D = 0, 0, SYS_MEMBAR, MEMBAR << 27. Host does not wait
    /// for the engine first; precede with a WFI if needed.
    pub fn host_membar_sys(&mut self) -> Result<()> {
        self.run(
            "host_membar_sys",
            header(NVC56F_DMA_SEC_OP_INC_METHOD, 4, SUBCH_HOST, NVC56F_MEM_OP_A),
            &[
                0,
                0,
                NVC56F_MEM_OP_C_MEMBAR_TYPE.val(NVC56F_MEM_OP_C_MEMBAR_TYPE_SYS_MEMBAR),
                NVC56F_MEM_OP_D_OPERATION.val(NVC56F_MEM_OP_D_OPERATION_MEMBAR),
            ],
        )
    }

    /// NON_STALL_INTERRUPT(0): lets the driver wake sleepers.
    pub fn non_stall_interrupt(&mut self) -> Result<()> {
        self.run(
            "non_stall_interrupt",
            header(
                NVC56F_DMA_SEC_OP_INC_METHOD,
                1,
                SUBCH_HOST,
                NVC56F_NON_STALL_INTERRUPT,
            ),
            &[0],
        )
    }

    /// Compute channel init with the compute class of the builder's caps (`PushBuf::for_arch`):
    /// see [`PushBuf::compute_init_class`]. Fails on a builder made with `PushBuf::new`.
    pub fn compute_init(&mut self, shared_window: u64, local_window: u64) -> Result<()> {
        self.compute_init_class(self.caps.compute_class, shared_window, local_window)
    }

    /// Compute channel init: SET_OBJECT(`compute_class`) on subchannel 1, INVALIDATE_SKED_CACHES,
    /// SET_SHADER_SHARED_MEMORY_WINDOW_A/B and SET_SHADER_LOCAL_MEMORY_WINDOW_A/B. Windows must be
    /// 16 MiB aligned (the shared window `caps.shared_window_align`) and below 2^49.
    pub fn compute_init_class(
        &mut self,
        compute_class: u32,
        shared_window: u64,
        local_window: u64,
    ) -> Result<()> {
        let c = self.caps;
        let shared_align = c.shared_window_align.max(1 << 24);
        if compute_class == 0
            || compute_class > 0xFFFF
            || shared_window & (shared_align - 1) != 0
            || local_window & ((1 << 24) - 1) != 0
            || !fits(shared_window, c.window_addr_bits)
            || !fits(local_window, c.window_addr_bits)
        {
            return Err(Error::invalid(format!(
                "hw::pushbuf::compute_init(class={compute_class:#x}, shared_window={shared_window:#x}, \
                 local_window={local_window:#x}): class must be non-zero and fit 16 bits, the shared window be {shared_align:#x}-aligned, \
                 the local window 16 MiB-aligned, both below 2^{}",
                c.window_addr_bits
            )));
        }
        let s = self.reserve("compute_init", 2 + 2 + 3 + 3)?;
        s[0] = header(
            NVC56F_DMA_SEC_OP_INC_METHOD,
            1,
            SUBCH_COMPUTE,
            NVC7C0_SET_OBJECT,
        );
        s[1] = compute_class;
        s[2] = header(
            NVC56F_DMA_SEC_OP_INC_METHOD,
            1,
            SUBCH_COMPUTE,
            NVC7C0_INVALIDATE_SKED_CACHES,
        );
        s[3] = 0;
        s[4] = header(
            NVC56F_DMA_SEC_OP_INC_METHOD,
            2,
            SUBCH_COMPUTE,
            NVC7C0_SET_SHADER_SHARED_MEMORY_WINDOW_A,
        );
        s[5] = (shared_window >> 32) as u32;
        s[6] = shared_window as u32;
        s[7] = header(
            NVC56F_DMA_SEC_OP_INC_METHOD,
            2,
            SUBCH_COMPUTE,
            NVC7C0_SET_SHADER_LOCAL_MEMORY_WINDOW_A,
        );
        s[8] = (local_window >> 32) as u32;
        s[9] = local_window as u32;
        Ok(())
    }

    /// Texture pools for texture objects: SET_TEX_HEADER_POOL_A/B/C and SET_TEX_SAMPLER_POOL_A/B/C
    /// (`max_index` inclusive, the same for both pools), preceded on Hopper and later
    /// (`caps.tex_header_v2`) by SET_TEXTURE_HEADER_VERSION: 1 for the TEXHEAD_V2 layouts
    /// (`v2`), 0 for the Maxwell-style ones. Pool addresses must be 32-byte aligned and fit the
    /// class's address width.
    pub fn texture_pools(
        &mut self,
        headers: u64,
        samplers: u64,
        max_index: u32,
        v2: bool,
    ) -> Result<()> {
        let bits = self.caps.local_mem_addr_bits;
        if headers % 32 != 0
            || samplers % 32 != 0
            || !fits(headers, bits)
            || !fits(samplers, bits)
            || max_index >= 1 << 20
        {
            return Err(Error::invalid(format!(
                "hw::pushbuf::texture_pools(headers={headers:#x}, samplers={samplers:#x}, max_index={max_index}): \
                 pools must be 32-byte aligned below 2^{bits}, max_index below 2^20"
            )));
        }
        if self.caps.tex_header_v2 {
            self.inc(
                SUBCH_COMPUTE,
                NVCBC0_SET_TEXTURE_HEADER_VERSION,
                &[u32::from(v2)],
            )?;
        } else if v2 {
            return Err(Error::invalid(
                "hw::pushbuf::texture_pools: this compute class has no TEXHEAD_V2 layouts",
            ));
        }
        self.inc(
            SUBCH_COMPUTE,
            NVC7C0_SET_TEX_SAMPLER_POOL_A,
            &[(samplers >> 32) as u32, samplers as u32, max_index],
        )?;
        self.inc(
            SUBCH_COMPUTE,
            NVC7C0_SET_TEX_HEADER_POOL_A,
            &[(headers >> 32) as u32, headers as u32, max_index],
        )
    }

    /// Local-memory backing store: SET_SHADER_LOCAL_MEMORY_A/B = `base`,
    /// SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_A/B/C = (`bytes_per_tpc` hi, lo, MAX_SM_COUNT 0xFF).
    /// `bytes_per_tpc` must be 0x8000-aligned and below 2^40.
    pub fn set_local_memory(&mut self, base: u64, bytes_per_tpc: u64) -> Result<()> {
        let bits = self.caps.local_mem_addr_bits;
        if !fits(base, bits) || bytes_per_tpc & 0x7FFF != 0 || !fits(bytes_per_tpc, 40) {
            return Err(Error::invalid(format!(
                "hw::pushbuf::set_local_memory(base={base:#x}, bytes_per_tpc={bytes_per_tpc:#x}): base must be below \
                 2^{bits}, bytes_per_tpc 0x8000-aligned and below 2^40"
            )));
        }
        let s = self.reserve("set_local_memory", 3 + 4)?;
        s[0] = header(
            NVC56F_DMA_SEC_OP_INC_METHOD,
            2,
            SUBCH_COMPUTE,
            NVC7C0_SET_SHADER_LOCAL_MEMORY_A,
        );
        s[1] = (base >> 32) as u32;
        s[2] = base as u32;
        s[3] = header(
            NVC56F_DMA_SEC_OP_INC_METHOD,
            3,
            SUBCH_COMPUTE,
            NVC7C0_SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_A,
        );
        s[4] = (bytes_per_tpc >> 32) as u32;
        s[5] = bytes_per_tpc as u32;
        s[6] = 0xFF;
        Ok(())
    }

    /// INVALIDATE_SHADER_CACHES_NO_WFI(`flags`): bit 0 INSTRUCTION, 4 GLOBAL_DATA, 12 CONSTANT
    /// ([`INVALIDATE_SHADER_CACHES_ALL`] = 0x1011).
    pub fn invalidate_shader_caches_no_wfi(&mut self, flags: u32) -> Result<()> {
        self.run(
            "invalidate_shader_caches_no_wfi",
            header(
                NVC56F_DMA_SEC_OP_INC_METHOD,
                1,
                SUBCH_COMPUTE,
                NVC7C0_INVALIDATE_SHADER_CACHES_NO_WFI,
            ),
            &[flags],
        )
    }

    /// Launch: SEND_PCAS_A(`qmd_va >> 8`) (INC, 2 words) + IMMD SEND_SIGNALING_PCAS2_B(`action`).
    /// `qmd_va` must be 256-aligned and below 2^40; `action` at most 0xF.
    pub fn send_pcas(&mut self, qmd_va: u64, action: u32) -> Result<()> {
        if qmd_va & 0xFF != 0 || !fits(qmd_va, 40) || action > 0xF {
            return Err(Error::new(
                Status::InvalidLaunch,
                format!(
                    "hw::pushbuf::send_pcas(qmd_va={qmd_va:#x}, action={action}): the QMD must be 256-byte aligned and \
                     below 2^40, the action at most 0xF"
                ),
            ));
        }
        let s = self.reserve("send_pcas", 3)?;
        s[0] = header(
            NVC56F_DMA_SEC_OP_INC_METHOD,
            1,
            SUBCH_COMPUTE,
            NVC7C0_SEND_PCAS_A,
        );
        s[1] = (qmd_va >> 8) as u32;
        s[2] = header(
            NVC56F_DMA_SEC_OP_IMMD_DATA_METHOD,
            action,
            SUBCH_COMPUTE,
            NVC7C0_SEND_SIGNALING_PCAS2_B,
        );
        Ok(())
    }

    /// Compute WAIT_FOR_IDLE (IMMD 0): serializes grids inside the engine.
    pub fn wait_for_idle(&mut self) -> Result<()> {
        self.run(
            "wait_for_idle",
            header(
                NVC56F_DMA_SEC_OP_IMMD_DATA_METHOD,
                0,
                SUBCH_COMPUTE,
                NVC7C0_WAIT_FOR_IDLE,
            ),
            &[],
        )
    }

    /// Compute-engine semaphore release (SET_REPORT_SEMAPHORE_A..D, INC 4 on subchannel 1): a
    /// one-word (32-bit) release after the preceding work, with flush: D = 0x1000_0000 (the form
    /// that fired on an H200). `va` must be 4-byte aligned and below 2^`host_sem_addr_bits` (the
    /// compute class's A field has the same width as the host's SEM_ADDR_HI).
    pub fn compute_report_semaphore(&mut self, va: u64, payload: u32) -> Result<()> {
        let bits = self.caps.host_sem_addr_bits;
        if va & 3 != 0 || !fits(va, bits) {
            return Err(Error::invalid(format!(
                "hw::pushbuf::compute_report_semaphore(va={va:#x}): address must be 4-byte aligned and below 2^{bits}"
            )));
        }
        let d = NVC7C0_SET_REPORT_SEMAPHORE_D_OPERATION.val(0)
            | NVC7C0_SET_REPORT_SEMAPHORE_D_STRUCTURE_SIZE.val(1);
        self.run(
            "compute_report_semaphore",
            header(
                NVC56F_DMA_SEC_OP_INC_METHOD,
                4,
                SUBCH_COMPUTE,
                NVC7C0_SET_REPORT_SEMAPHORE_A,
            ),
            &[(va >> 32) as u32, va as u32, payload, d],
        )
    }

    /// Inline-to-memory write through the compute engine (§3.5, NVK's recipe; unverified on
    /// Orin): LINE_LENGTH_IN = bytes, LINE_COUNT = 1, OFFSET_OUT_UPPER/OFFSET_OUT = `dst` (INC 4 at
    /// 0x180), then a 1INC run at LAUNCH_DMA (0x1B0) with 0x11 (PITCH | FLUSH_ONLY) followed by
    /// the data words, which land on LOAD_INLINE_DATA. `dst` 4-byte aligned; 1..=0x1FFE words.
    pub fn i2m_write(&mut self, dst: u64, data: &[u32]) -> Result<()> {
        let bits = self.caps.local_mem_addr_bits;
        let n = data.len();
        let end = dst.checked_add(4 * n as u64);
        if dst & 3 != 0 || n == 0 || n > 0x1FFE || !matches!(end, Some(e) if fits(e - 1, bits)) {
            return Err(Error::invalid(format!(
                "hw::pushbuf::i2m_write(dst={dst:#x}, words={n}): dst must be 4-byte aligned, the range below 2^{bits}, \
                 and 1..=0x1FFE words"
            )));
        }
        let s = self.reserve("i2m_write", 5 + 2 + n)?;
        s[0] = header(
            NVC56F_DMA_SEC_OP_INC_METHOD,
            4,
            SUBCH_COMPUTE,
            NVC7C0_LINE_LENGTH_IN,
        );
        s[1] = (4 * n) as u32;
        s[2] = 1;
        s[3] = (dst >> 32) as u32;
        s[4] = dst as u32;
        s[5] = header(
            NVC56F_DMA_SEC_OP_ONE_INC,
            1 + n as u32,
            SUBCH_COMPUTE,
            NVC7C0_LAUNCH_DMA,
        );
        s[6] = I2M_LAUNCH_DMA_PITCH_FLUSH_ONLY;
        s[7..].copy_from_slice(data);
        Ok(())
    }

    /// Linear copy of `len` bytes on subchannel 4, split in chunks of at most 2^31 bytes. Each
    /// chunk: OFFSET_IN_UPPER..OFFSET_OUT_LOWER (INC 4), LINE_LENGTH_IN, LAUNCH_DMA
    /// 0x182 (NON_PIPELINED | SRC/DST PITCH), the last one 0x186 (+ FLUSH_ENABLE). `len == 0`
    /// writes nothing.
    pub fn ce_copy_linear(&mut self, src: u64, dst: u64, len: u64) -> Result<()> {
        if len == 0 {
            return Ok(());
        }
        let bits = self.caps.ce_addr_bits;
        let src_end = src.checked_add(len);
        let dst_end = dst.checked_add(len);
        let ok = |e: Option<u64>| matches!(e, Some(e) if fits(e - 1, bits));
        if !ok(src_end) || !ok(dst_end) {
            return Err(Error::invalid(format!(
                "hw::pushbuf::ce_copy_linear(src={src:#x}, dst={dst:#x}, len={len:#x}): ranges must end below 2^{bits}"
            )));
        }
        let chunks = len.div_ceil(CE_MAX_CHUNK);
        let words = usize::try_from(chunks.saturating_mul(9)).unwrap_or(usize::MAX);
        let s = self.reserve("ce_copy_linear", words)?;
        let mut off = 0u64;
        for w in s.chunks_exact_mut(9) {
            let n = (len - off).min(CE_MAX_CHUNK);
            let (a, b) = (src + off, dst + off);
            off += n;
            w[0] = header(
                NVC56F_DMA_SEC_OP_INC_METHOD,
                4,
                SUBCH_COPY,
                NVC7B5_OFFSET_IN_UPPER,
            );
            w[1] = (a >> 32) as u32;
            w[2] = a as u32;
            w[3] = (b >> 32) as u32;
            w[4] = b as u32;
            w[5] = header(
                NVC56F_DMA_SEC_OP_INC_METHOD,
                1,
                SUBCH_COPY,
                NVC7B5_LINE_LENGTH_IN,
            );
            w[6] = n as u32;
            w[7] = header(
                NVC56F_DMA_SEC_OP_INC_METHOD,
                1,
                SUBCH_COPY,
                NVC7B5_LAUNCH_DMA,
            );
            w[8] = if off == len {
                CE_LAUNCH_COPY_FLUSH
            } else {
                CE_LAUNCH_COPY
            };
        }
        Ok(())
    }

    /// One copy-engine launch of `lines` lines of `line_bytes` bytes, line `i` from
    /// `src + i * line_bytes` to `dst + i * line_bytes` (a contiguous range of
    /// `lines * line_bytes` bytes): OFFSET_IN_UPPER..LINE_COUNT (INC 8: offsets, PITCH_IN =
    /// PITCH_OUT = `line_bytes`, LINE_LENGTH_IN, LINE_COUNT), LAUNCH_DMA SRC/DST PITCH |
    /// MULTI_LINE when `lines` > 1 | PIPELINED (may overlap the launch before it) or
    /// NON_PIPELINED | FLUSH when `flush`: 11 words. `line_bytes` and `lines` are at least 1 and
    /// `line_bytes` below 2^31 when `lines` > 1 (the pitch is a signed 32-bit value).
    pub fn ce_copy_lines(
        &mut self,
        src: u64,
        dst: u64,
        line_bytes: u32,
        lines: u32,
        pipelined: bool,
        flush: bool,
    ) -> Result<()> {
        let bits = self.caps.ce_addr_bits;
        let len = u64::from(line_bytes) * u64::from(lines);
        let ok = |e: Option<u64>| matches!(e, Some(e) if fits(e - 1, bits));
        if line_bytes == 0
            || lines == 0
            || (lines > 1 && line_bytes > i32::MAX as u32)
            || !ok(src.checked_add(len))
            || !ok(dst.checked_add(len))
        {
            return Err(Error::invalid(format!(
                "hw::pushbuf::ce_copy_lines(src={src:#x}, dst={dst:#x}, line_bytes={line_bytes}, lines={lines}): \
                 line_bytes and lines must be at least 1, line_bytes below 2^31 for several lines, the ranges below 2^{bits}"
            )));
        }
        let s = self.reserve("ce_copy_lines", 11)?;
        s[0] = header(
            NVC56F_DMA_SEC_OP_INC_METHOD,
            8,
            SUBCH_COPY,
            NVC7B5_OFFSET_IN_UPPER,
        );
        s[1] = (src >> 32) as u32;
        s[2] = src as u32;
        s[3] = (dst >> 32) as u32;
        s[4] = dst as u32;
        s[5] = line_bytes;
        s[6] = line_bytes;
        s[7] = line_bytes;
        s[8] = lines;
        s[9] = header(
            NVC56F_DMA_SEC_OP_INC_METHOD,
            1,
            SUBCH_COPY,
            NVC7B5_LAUNCH_DMA,
        );
        let transfer = if pipelined {
            NVC7B5_LAUNCH_DMA_DATA_TRANSFER_TYPE_PIPELINED
        } else {
            NVC7B5_LAUNCH_DMA_DATA_TRANSFER_TYPE_NON_PIPELINED
        };
        s[10] = (CE_LAUNCH_COPY & !NVC7B5_LAUNCH_DMA_DATA_TRANSFER_TYPE.val(3))
            | NVC7B5_LAUNCH_DMA_DATA_TRANSFER_TYPE.val(transfer)
            | NVC7B5_LAUNCH_DMA_FLUSH_ENABLE.val(u32::from(flush))
            | NVC7B5_LAUNCH_DMA_MULTI_LINE_ENABLE.val(u32::from(lines > 1));
        Ok(())
    }

    /// Copy-engine constant fill (a remapped transfer whose every destination component is
    /// SET_REMAP_CONST_A): `lines` lines of `elems` elements of `elem_bytes` (1, 2 or 4) bytes
    /// each, line `i` at `dst + i * pitch`, every element = the low `elem_bytes` bytes of
    /// `value`. Words: OFFSET_OUT_UPPER/LOWER (INC 2), PITCH_IN, PITCH_OUT, LINE_LENGTH_IN (in
    /// elements), LINE_COUNT (INC 4), SET_REMAP_CONST_A, SET_REMAP_CONST_B, SET_REMAP_COMPONENTS
    /// (INC 3: DST_X = CONST_A, COMPONENT_SIZE = `elem_bytes` - 1, one source and one destination
    /// component), LAUNCH_DMA NON_PIPELINED | FLUSH | SRC/DST PITCH | REMAP (| MULTI_LINE when
    /// `lines` > 1) = 0x586 (0x786): 14 words. The source is not read. `elems` and `lines` are
    /// 1..=2^17, `pitch` at least a line's bytes when `lines` > 1.
    pub fn ce_fill(
        &mut self,
        dst: u64,
        value: u32,
        elem_bytes: u32,
        elems: u32,
        lines: u32,
        pitch: u32,
    ) -> Result<()> {
        let bits = self.caps.ce_addr_bits;
        let line_bytes = u64::from(elems) * u64::from(elem_bytes);
        let span = u64::from(lines.saturating_sub(1)) * u64::from(pitch) + line_bytes;
        let end = dst.checked_add(span);
        let ok_elem = matches!(elem_bytes, 1 | 2 | 4);
        let ok_dims = (1..=CE_FILL_MAX_DIM).contains(&elems)
            && (1..=CE_FILL_MAX_DIM).contains(&lines)
            && (lines == 1 || u64::from(pitch) >= line_bytes);
        if !ok_elem || !ok_dims || !matches!(end, Some(e) if fits(e - 1, bits)) {
            return Err(Error::invalid(format!(
                "hw::pushbuf::ce_fill(dst={dst:#x}, elem_bytes={elem_bytes}, elems={elems}, lines={lines}, pitch={pitch}): \
                 elem_bytes must be 1, 2 or 4, elems and lines 1..={CE_FILL_MAX_DIM}, pitch at least a line, the range below 2^{bits}"
            )));
        }
        let s = self.reserve("ce_fill", 14)?;
        s[0] = header(
            NVC56F_DMA_SEC_OP_INC_METHOD,
            2,
            SUBCH_COPY,
            NVC7B5_OFFSET_OUT_UPPER,
        );
        s[1] = (dst >> 32) as u32;
        s[2] = dst as u32;
        s[3] = header(NVC56F_DMA_SEC_OP_INC_METHOD, 4, SUBCH_COPY, NVC7B5_PITCH_IN);
        s[4] = pitch;
        s[5] = pitch;
        s[6] = elems;
        s[7] = lines;
        s[8] = header(
            NVC56F_DMA_SEC_OP_INC_METHOD,
            3,
            SUBCH_COPY,
            NVC7B5_SET_REMAP_CONST_A,
        );
        s[9] = value;
        s[10] = 0;
        s[11] = ce_remap_const_a(elem_bytes);
        s[12] = header(
            NVC56F_DMA_SEC_OP_INC_METHOD,
            1,
            SUBCH_COPY,
            NVC7B5_LAUNCH_DMA,
        );
        s[13] = if lines > 1 {
            CE_LAUNCH_FILL | NVC7B5_LAUNCH_DMA_MULTI_LINE_ENABLE.val(1)
        } else {
            CE_LAUNCH_FILL
        };
        Ok(())
    }

    /// Copy-engine semaphore release with timestamp (four-word, 16-byte aligned `va`) after a
    /// flush. With `caps.ce_sem_payload64` (c7b5 and later): SET_SEMAPHORE_A, B, PAYLOAD,
    /// PAYLOAD_UPPER + LAUNCH_DMA 0x0800_0014; otherwise SET_SEMAPHORE_A, B, PAYLOAD +
    /// LAUNCH_DMA 0x14 and `payload` must fit 32 bits.
    pub fn ce_sem_release(&mut self, va: u64, payload: u64) -> Result<()> {
        let c = self.caps;
        if va & 0xF != 0
            || !fits(va, c.ce_addr_bits)
            || (!c.ce_sem_payload64 && payload > u64::from(u32::MAX))
        {
            return Err(Error::invalid(format!(
                "hw::pushbuf::ce_sem_release(va={va:#x}, payload={payload:#x}): va must be 16-byte aligned and below 2^{}{}",
                c.ce_addr_bits,
                if c.ce_sem_payload64 { "" } else { ", payload 32-bit on this copy class" }
            )));
        }
        if c.ce_sem_payload64 {
            let s = self.reserve("ce_sem_release", 7)?;
            s[0] = header(
                NVC56F_DMA_SEC_OP_INC_METHOD,
                4,
                SUBCH_COPY,
                NVC7B5_SET_SEMAPHORE_A,
            );
            s[1] = (va >> 32) as u32;
            s[2] = va as u32;
            s[3] = payload as u32;
            s[4] = (payload >> 32) as u32;
            s[5] = header(
                NVC56F_DMA_SEC_OP_INC_METHOD,
                1,
                SUBCH_COPY,
                NVC7B5_LAUNCH_DMA,
            );
            s[6] = CE_LAUNCH_SEM_FOUR_WORD_64;
        } else {
            let s = self.reserve("ce_sem_release", 6)?;
            s[0] = header(
                NVC56F_DMA_SEC_OP_INC_METHOD,
                3,
                SUBCH_COPY,
                NVC7B5_SET_SEMAPHORE_A,
            );
            s[1] = (va >> 32) as u32;
            s[2] = va as u32;
            s[3] = payload as u32;
            s[4] = header(
                NVC56F_DMA_SEC_OP_INC_METHOD,
                1,
                SUBCH_COPY,
                NVC7B5_LAUNCH_DMA,
            );
            s[5] = CE_LAUNCH_SEM_FOUR_WORD;
        }
        Ok(())
    }
}

/// The comparison of a host semaphore acquire ([`PushBuf::host_sem_acquire`]); the GPU waits
/// until it holds for the value in memory `v` and the acquire's `value`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SemCond {
    /// `v == value` (OPERATION ACQUIRE).
    Eq,
    /// `v >= value`, unsigned (ACQ_STRICT_GEQ).
    Geq,
    /// `(signed)(v - value) >= 0` in the payload's width: greater or equal across wrap-around
    /// (ACQ_CIRC_GEQ).
    CircGeq,
    /// `v & value != 0` (ACQ_AND).
    And,
    /// `!(v | value) != 0` in the payload's width (ACQ_NOR).
    Nor,
}
