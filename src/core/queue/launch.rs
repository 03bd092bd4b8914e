//! Recording kernel launches: QMD slots, constant bank 0, the launch methods.

use super::*;

impl Queue {
    /// Record a kernel launch. `params` is the packed parameter block (`param_bytes` long).
    pub fn launch(&mut self, kernel: &Kernel, cfg: &LaunchConfig, params: &[u8]) -> Result<()> {
        let attrs = kernel.attributes();
        if params.len() != attrs.param_bytes as usize {
            return Err(Error::new(
                Status::InvalidLaunch,
                format!(
                    "tg_launch: kernel \"{}\" takes {} bytes of parameters, got {}",
                    attrs.name,
                    attrs.param_bytes,
                    params.len()
                ),
            ));
        }
        self.launch_with(kernel, cfg, |dst| {
            dst.copy_from_slice(params);
            Ok(())
        })
    }

    /// Record a kernel launch with parameters given as an array of pointers, one per parameter,
    /// each pointing to that parameter's value (like `cuLaunchKernel`'s `kernelParams`).
    ///
    /// # Safety
    /// Each pointer must be valid for reads of its parameter's size.
    pub unsafe fn launch_ptrs(
        &mut self,
        kernel: &Kernel,
        cfg: &LaunchConfig,
        args: &[*const u8],
    ) -> Result<()> {
        let attrs = &*kernel.attrs;
        if args.len() != attrs.params.len() {
            return Err(Error::new(
                Status::InvalidLaunch,
                format!(
                    "tg_launch: kernel \"{}\" has {} parameters, got {} argument pointers",
                    attrs.name,
                    attrs.params.len(),
                    args.len()
                ),
            ));
        }
        if let Some(i) = args.iter().position(|p| p.is_null()) {
            return Err(Error::new(
                Status::NullPointer,
                format!("tg_launch: argument pointer {i} is NULL"),
            ));
        }
        self.launch_with(kernel, cfg, |dst| {
            for (p, a) in attrs.params.iter().zip(args) {
                let (o, s) = (p.offset as usize, p.size as usize);
                let d = dst
                    .get_mut(o..o + s)
                    .ok_or_else(|| Error::new(Status::Internal, "parameter outside the block"))?;
                // SAFETY: the caller guarantees `a` is readable for `s` bytes.
                std::ptr::copy_nonoverlapping(*a, d.as_mut_ptr(), s);
            }
            Ok(())
        })
    }

    fn check_launch(&self, kernel: &Kernel, cfg: &LaunchConfig) -> Result<()> {
        if self.kind != QueueKind::Compute {
            return Err(Error::new(
                Status::InvalidArgument,
                "tg_launch: launches need a compute queue; this is a copy queue",
            ));
        }
        check_launch(&self.dev, kernel, cfg)
    }

    fn launch_with(
        &mut self,
        kernel: &Kernel,
        cfg: &LaunchConfig,
        write_params: impl FnOnce(&mut [u8]) -> Result<()>,
    ) -> Result<()> {
        self.dev.check_usable()?;
        let lm = kernel.own_lm.max(self.dev.stack_lm());
        let way = kernel.id as usize % IMAGE_WAYS;
        // A launch of the same kernel with the same configuration as one this queue built
        // before passed the same checks and has the same QMD and constant-bank prefix.
        let hit = {
            let e = &self.images[way];
            e.id != 0 && e.kernel == kernel.id && e.cfg == *cfg && e.lm == lm && !cfg.cooperative
        };
        if !hit {
            self.check_launch(kernel, cfg)?;
        }
        let heads = (
            self.qmd.as_ref().map(|r| r.head),
            self.karg.as_ref().map(|r| r.head),
        );
        let r = if hit {
            self.record_image(kernel, way, write_params)
        } else {
            self.record_launch(kernel, cfg, lm, way, write_params)
        };
        if r.is_err() {
            // Give back the slots of a launch that was not recorded (nothing references them).
            if let (Some(r), Some(h)) = (self.qmd.as_mut(), heads.0) {
                r.head = h;
            }
            if let (Some(r), Some(h)) = (self.karg.as_mut(), heads.1) {
                r.head = h;
            }
        }
        r
    }

    /// Reserve a QMD slot and the launch's constant bank (`cb_size` bytes): at +QMD_SLOT_CBANK in
    /// the slot when it fits, else in the constant-bank ring. Returns (QMD address, slot index,
    /// whether the bank is in the slot, bank address, CPU pointer to the bank).
    #[inline(always)]
    fn reserve_launch(&mut self, cb_size: u64) -> Result<(u64, usize, bool, u64, *mut u8)> {
        let qmd_va = self.alloc_qmd()?;
        let (qmd_gpu, qmd_cpu) = {
            let r = self.qmd.as_ref().expect("compute queue");
            (r.alloc.gpu_va, r.alloc.cpu)
        };
        let slot = ((qmd_va - qmd_gpu) / QMD_STRIDE) as usize;
        let in_slot = cb_size <= QMD_SLOT_CBANK_MAX;
        if in_slot {
            let va = qmd_va + QMD_SLOT_CBANK;
            // SAFETY: inside the QMD slot just reserved.
            let cpu = unsafe { qmd_cpu.add((va - qmd_gpu) as usize) };
            return Ok((qmd_va, slot, true, va, cpu));
        }
        let va = self.alloc_karg(cb_size)?;
        let karg = self.karg.as_ref().expect("compute queue");
        // SAFETY: [va, +cb_size) was just reserved in the CPU-mapped ring.
        let cpu = unsafe { karg.alloc.cpu.add((va - karg.alloc.gpu_va) as usize) };
        Ok((qmd_va, slot, false, va, cpu))
    }

    /// CPU pointer to the QMD slot at `qmd_va`.
    fn qmd_cpu(&self, qmd_va: u64) -> *mut u32 {
        let r = self.qmd.as_ref().expect("compute queue");
        // SAFETY: qmd_va is a slot of this ring (reserve_launch).
        unsafe { r.alloc.cpu.add((qmd_va - r.alloc.gpu_va) as usize) as *mut u32 }
    }

    /// Record a launch from the queue's image `way` (same kernel and configuration as the
    /// launch that built it): only the parameters are new. A slot that already holds this image
    /// gets only the parameter bytes written; another slot gets the image's constant-bank prefix
    /// and QMD, moved to the slot's constant-bank address.
    fn record_image(
        &mut self,
        kernel: &Kernel,
        way: usize,
        write_params: impl FnOnce(&mut [u8]) -> Result<()>,
    ) -> Result<()> {
        let (id, cb_size, pb, pn, concurrent) = {
            let e = &self.images[way];
            (
                e.id,
                e.cb_size as u64,
                e.param_base as usize,
                e.param_bytes as usize,
                e.cfg.concurrent,
            )
        };
        let (qmd_va, slot, in_slot, cb_va, ring_cb) = self.reserve_launch(cb_size)?;
        write_params(&mut self.scratch[pb..pb + pn])?;
        if !(in_slot && self.slot_cbank[slot] == id) {
            // SAFETY: the reserved bank holds cb_size >= pb + pn bytes; the image does not
            // overlap it.
            unsafe {
                crate::core::wcmem::copy(ring_cb, self.images[way].prefix.as_ptr(), pb);
                if pb == 0x210 {
                    use crate::hw::cbank0::{SM90_CBANK_ADDR, SM90_PARAM_ADDR};
                    let a = (cb_va + pb as u64).to_le_bytes();
                    crate::core::wcmem::copy(ring_cb.add(SM90_PARAM_ADDR), a.as_ptr(), 8);
                    let a = cb_va.to_le_bytes();
                    crate::core::wcmem::copy(ring_cb.add(SM90_CBANK_ADDR), a.as_ptr(), 8);
                }
            }
            self.slot_cbank[slot] = if in_slot { id } else { 0 };
        }
        // SAFETY: [pb, pb + pn) lies inside the reserved bank; scratch does not overlap it.
        unsafe { crate::core::wcmem::copy(ring_cb.add(pb), self.scratch.as_ptr().add(pb), pn) };
        if self.slot_qmd[slot] != id {
            let image = &self.images[way].qmd;
            let [(lo, lo_v), (hi, hi_v)] = kernel.qmd.cbank0_address_words(image, cb_va)?;
            let dst = self.qmd_cpu(qmd_va);
            // SAFETY: the slot holds QMD_STRIDE bytes, more than the QMD; lo and hi are dwords
            // of the QMD.
            unsafe {
                crate::core::wcmem::copy_dwords(dst, image.as_ptr(), kernel.qmd.dwords());
                dst.add(lo).write(lo_v);
                dst.add(hi).write(hi_v);
            }
            self.slot_qmd[slot] = if in_slot { id } else { 0 };
        }
        let dst = self.qmd_cpu(qmd_va);
        if let Some(o) = self.overlap.as_mut() {
            // The image's QMD carries the release to the counter; this launch's number is new.
            let seq = o.seq + 1;
            let (lo, hi) = o.payload_dwords;
            let ctl = self.images[way].qmd[o.rel1_ctl];
            o.last_ctl = ctl;
            // SAFETY: the slot holds QMD_STRIDE bytes; lo, hi, rel1_ctl and the address dword
            // are dwords of the QMD.
            unsafe {
                dst.add(lo).write(seq as u32);
                dst.add(hi).write((seq >> 32) as u32);
                // A submit may have moved this slot's release to the timeline.
                for (d, counter, _) in o.addr {
                    dst.add(d).write(counter);
                }
                if o.rel1_slots[slot] {
                    // A signal gave this slot's QMD release slot 1: disable it again.
                    dst.add(o.rel1_ctl).write(ctl);
                    o.rel1_slots[slot] = false;
                }
            }
        }
        self.record_send(qmd_va, concurrent)
    }

    fn record_launch(
        &mut self,
        kernel: &Kernel,
        cfg: &LaunchConfig,
        lm: u32,
        way: usize,
        write_params: impl FnOnce(&mut [u8]) -> Result<()>,
    ) -> Result<()> {
        let arch = self.dev.arch();
        let info = kernel.info();
        let coop_ws = if cfg.cooperative {
            Some(self.coop_workspace()?)
        } else {
            None
        };
        let param_base = info.param_base as usize;
        let param_end = param_base + info.param_bytes as usize;
        let cb_size = (param_end as u64).div_ceil(256) * 256;
        let (qmd_va, slot, in_slot, karg_va, ring_cb) = self.reserve_launch(cb_size)?;
        // The slot's contents change from here on: it holds no image until the end.
        self.slot_qmd[slot] = 0;
        self.slot_cbank[slot] = 0;
        // Build the image in cached memory, then write the ring (write-combined memory, behind a
        // bus on desktop GPUs) in one sequential pass.
        let cb: &mut [u8] = &mut self.scratch[..cb_size as usize];
        let shared_total = build_launch_cbank(&self.dev, kernel, cfg, cb, karg_va, write_params)?;
        // A cooperative launch finds its grid workspace through the driver's "envreg" words
        // in constant bank 0; such a launch is not kept as an image.
        if let Some(ws) = coop_ws {
            crate::hw::cbank0::put_grid_workspace(arch, cb, ws)?;
        }
        // SAFETY: the reserved ring range; the scratch image does not overlap it.
        unsafe { crate::core::wcmem::copy(ring_cb, cb.as_ptr(), cb.len()) };
        let mut words = [0u32; 96];
        build_launch_qmd(
            &self.dev,
            kernel,
            cfg,
            shared_total,
            (karg_va, cb_size as u32),
            &mut words,
        )?;
        if let Some(o) = self.overlap.as_mut() {
            // No FE_SYSMEMBAR on the release: the QMD's CWD_MEMBAR_TYPE L1_SYSMEMBAR already
            // makes the grid's writes visible when it completes (a release membar would add
            // about 0.5 us per launch on an H100).
            let r = Overlap::release0(o.counter.gpu_va, o.seq + 1);
            kernel.qmd.set_release0(&mut words, r)?;
            o.last_ctl = words[o.rel1_ctl];
            o.rel1_slots[slot] = false;
        }
        let dst = self.qmd_cpu(qmd_va);
        // SAFETY: the QMD slot (QMD_STRIDE bytes) was just reserved in the CPU-mapped ring.
        unsafe { crate::core::wcmem::copy_dwords(dst, words.as_ptr(), kernel.qmd.dwords()) };
        let keep = coop_ws.is_none() && param_base <= IMAGE_PREFIX_MAX;
        let id = if keep {
            self.next_image += 1;
            let e = &mut self.images[way];
            e.id = self.next_image;
            e.kernel = kernel.id;
            e.cfg = *cfg;
            e.lm = lm;
            e.cb_size = cb_size as u32;
            e.param_base = param_base as u32;
            e.param_bytes = info.param_bytes;
            e.qmd = words;
            e.prefix[..param_base].copy_from_slice(&self.scratch[..param_base]);
            e.id
        } else {
            0
        };
        let id = if in_slot { id } else { 0 };
        self.slot_qmd[slot] = id;
        self.slot_cbank[slot] = id;
        if cfg.cooperative {
            // All of its blocks must be resident at once: it starts on an idle engine, after a
            // wait for idle that also waits for the other queues' kernels.
            let gen = self.dev.inner.local_generation.load(Ordering::Acquire);
            let code_gen = self.dev.inner.code_generation.load(Ordering::Acquire);
            return self.record_send_slow(qmd_va, false, gen, code_gen, true);
        }
        self.record_send(qmd_va, cfg.concurrent)
    }

    /// Record the methods that start the launch whose QMD is at `qmd_va`: the local-memory
    /// window when it changed, a wait for the previous launch (not for a `concurrent` one), a
    /// shader-cache invalidate when code was loaded, SEND_PCAS.
    #[inline(always)]
    fn record_send(&mut self, qmd_va: u64, concurrent: bool) -> Result<()> {
        let gen = self.dev.inner.local_generation.load(Ordering::Acquire);
        let code_gen = self.dev.inner.code_generation.load(Ordering::Acquire);
        if gen == self.local_generation && code_gen == self.code_generation {
            // The common case: [WAIT_FOR_IDLE or the acquire of `Overlap`,] SEND_PCAS_A,
            // SEND_SIGNALING_PCAS2_B, from words encoded at queue creation (the QMD ring lies
            // below 2^40, 256-byte aligned).
            self.ensure_cmd_space(3 + RELEASE_DW as u64)?;
            let w = self.launch_words;
            let pos = self.cmd.pos() as usize;
            let serialize = (self.last_was_launch && (!concurrent || self.after_replay))
                || Overlap::pending(&self.overlap);
            // After ensure_cmd_space: a submit it made may have moved the target.
            let order = if serialize {
                self.serial_order()
            } else {
                Serial::Done
            };
            let mut n = 3;
            // SAFETY: ensure_cmd_space made 3 + RELEASE_DW dwords at the head free, contiguous
            // and mapped.
            unsafe {
                let mut p = (self.cmd.alloc.cpu as *mut u32).add(pos);
                match order {
                    Serial::Acquire(a) => {
                        std::ptr::copy_nonoverlapping(a.as_ptr(), p, RELEASE_DW);
                        p = p.add(RELEASE_DW);
                        n += RELEASE_DW as u64;
                    }
                    Serial::Wfi => {
                        p.write(w.wait_for_idle);
                        p = p.add(1);
                        n += 1;
                    }
                    Serial::Done => {}
                }
                p.write(w.send_pcas[0]);
                p.add(1).write((qmd_va >> 8) as u32);
                p.add(2).write(w.send_pcas[1]);
            }
            self.cmd.head += n;
            self.track.pending.store(true, Ordering::Release);
            self.committed = (
                self.qmd.as_ref().map(|r| r.head).unwrap_or(0),
                self.karg.as_ref().map(|r| r.head).unwrap_or(0),
            );
            self.note_launch(serialize, qmd_va);
            return Ok(());
        }
        self.record_send_slow(qmd_va, concurrent, gen, code_gen, false)
    }

    /// How a launch that must follow the queue's last one waits for it: an acquire of what that
    /// launch releases, or nothing once the CPU sees it released (see `Overlap`); a wait for
    /// idle without the launch counter, after concurrent launches or a replay.
    #[inline(always)]
    fn serial_order(&self) -> Serial {
        match &self.overlap {
            Some(o) if o.ordered && !self.after_replay => {
                if o.reached(&self.track.timeline) {
                    Serial::Done
                } else {
                    Serial::Acquire(o.acquire_target())
                }
            }
            _ => Serial::Wfi,
        }
    }

    /// `record_send` when the local-memory window or the code changed, and for launches that
    /// start on an idle engine (`idle`: a cooperative launch, after a wait for idle whatever
    /// came before it).
    #[cold]
    fn record_send_slow(
        &mut self,
        qmd_va: u64,
        concurrent: bool,
        gen: u64,
        code_gen: u64,
        idle: bool,
    ) -> Result<()> {
        let local = if gen != self.local_generation {
            let lm = self.dev.inner.local.lock();
            lm.buf.as_ref().map(|b| (b.gpu_va, lm.bytes_per_tpc))
        } else {
            None
        };
        let serialize = idle
            || (self.last_was_launch && (!concurrent || self.after_replay))
            || Overlap::pending(&self.overlap);
        // Instruction/constant/global caches: invalidated when code was loaded since this
        // queue's last invalidate (each QMD also invalidates its constant bank 0 and the L1 data
        // caches itself).
        let invalidate = code_gen != self.code_generation;
        self.ensure_cmd_space(MAX_CMD_DW)?;
        let order = if idle {
            Serial::Wfi
        } else if serialize {
            self.serial_order()
        } else {
            Serial::Done
        };
        self.with_cmd(|pb| {
            if let Some((base, per_tpc)) = local {
                pb.set_local_memory(base, per_tpc)?;
            }
            match order {
                Serial::Acquire(a) => pb.push_words(&a)?,
                Serial::Wfi => pb.wait_for_idle()?,
                Serial::Done => {}
            }
            if invalidate {
                pb.invalidate_shader_caches_no_wfi(INVALIDATE_BEFORE_LAUNCH)?;
            }
            pb.send_pcas(qmd_va, PCAS_ACTION)
        })?;
        if local.is_some() {
            self.local_generation = gen;
        }
        self.code_generation = code_gen;
        // The launch's QMD slot and constant bank belong to this submission from now on. A
        // submit forced by ring space in the middle of recording a launch (in alloc_karg or
        // with_cmd) must not hand them to an earlier submission, whose completion would free
        // them while this launch is still unsubmitted.
        self.committed = (
            self.qmd.as_ref().map(|r| r.head).unwrap_or(0),
            self.karg.as_ref().map(|r| r.head).unwrap_or(0),
        );
        self.note_launch(serialize, qmd_va);
        Ok(())
    }

    /// A launch was recorded (`serialize`: after a wait for idle) with its QMD at `qmd_va`: it
    /// is the last one, and its QMD releases the next launch number to the counter.
    #[inline(always)]
    fn note_launch(&mut self, serialize: bool, qmd_va: u64) {
        if let Some(o) = self.overlap.as_mut() {
            o.seq += 1;
            o.launched = true;
            o.last_qmd_va = qmd_va;
            o.closed = false;
            o.launch_end = self.cmd.head;
            o.rel1_used = false;
            if o.ordered {
                o.target = (false, o.seq);
            }
            if self.last_was_launch && !serialize {
                // It may run beside the launch before it and complete first.
                o.ordered = false;
            }
        }
        self.last_was_launch = true;
        self.after_replay = false;
    }

    /// GPU address of this queue's grid-sync workspace, made (zeroed) on first use.
    fn coop_workspace(&mut self) -> Result<u64> {
        if let Some(a) = &self.coop_workspace {
            return Ok(a.gpu_va);
        }
        let a = self.dev.backend().alloc(
            4096,
            MemFlags {
                zeroed: true,
                ..Default::default()
            },
        )?;
        // grid_workspace { u32 wsSize; u32 barrier; }
        // SAFETY: the allocation is 4096 CPU-mapped bytes.
        unsafe { std::ptr::write_volatile(a.cpu as *mut u32, 8) };
        let va = a.gpu_va;
        self.coop_workspace = Some(a);
        Ok(va)
    }

    fn alloc_karg(&mut self, size: u64) -> Result<u64> {
        loop {
            let r = self.karg.as_ref().expect("compute queue");
            let pos = r.pos();
            let wrap = if pos + size > r.cap { r.cap - pos } else { 0 };
            if r.free() >= wrap + size {
                let r = self.karg.as_mut().expect("compute queue");
                r.head += wrap;
                let va = r.alloc.gpu_va + r.pos();
                r.head += size;
                return Ok(va);
            }
            self.make_progress("constant-bank ring")?;
        }
    }

    fn alloc_qmd(&mut self) -> Result<u64> {
        loop {
            let r = self.qmd.as_ref().expect("compute queue");
            if r.free() >= 1 {
                let r = self.qmd.as_mut().expect("compute queue");
                let va = r.alloc.gpu_va + r.pos() * QMD_STRIDE;
                r.head += 1;
                return Ok(va);
            }
            self.make_progress("QMD ring")?;
        }
    }
}

/// Constant bank 0 of one launch, built in `cb` (cached memory) for the GPU address `cb_va`: the
/// driver-reserved words (`hw::cbank0`), the parameters (`write_params` fills them) and, on
/// sm_90, the parameter block's address at c[0x0][0x198] (kernels that take a parameter's
/// address, `__grid_constant__`) and the bank's own address at c[0x0][0xc0]. Returns the
/// launch's total shared memory. Used by queue launches and command buffers alike.
#[inline(always)]
pub(crate) fn build_launch_cbank(
    dev: &Device,
    kernel: &Kernel,
    cfg: &LaunchConfig,
    cb: &mut [u8],
    cb_va: u64,
    write_params: impl FnOnce(&mut [u8]) -> Result<()>,
) -> Result<u32> {
    let info = kernel.info();
    let dev_info = dev.info();
    let shared_total =
        crate::cubin::shared_memory_total(info, cfg.dynamic_shared_bytes, dev_info.sm_major);
    let p = crate::hw::cbank0::Cbank0Params {
        block: cfg.block,
        grid: cfg.grid,
        shared_window: dev_info.shared_window,
        local_window: dev_info.local_window,
        dynamic_smem_bytes: cfg.dynamic_shared_bytes,
        aggr_smem_bytes: crate::cubin::shared_memory_aggregate(info, cfg.dynamic_shared_bytes),
        sm_count: dev_info.sm_count,
        cluster: launch_cluster(kernel, cfg),
        param_base: info.param_base,
        params: &[],
    };
    crate::hw::cbank0::build_cbank0(dev.arch(), cb, &p)?;
    let param_base = info.param_base as usize;
    write_params(&mut cb[param_base..param_base + info.param_bytes as usize])?;
    if info.param_base == 0x210 {
        use crate::hw::cbank0::{SM90_CBANK_ADDR, SM90_PARAM_ADDR};
        cb[SM90_PARAM_ADDR..SM90_PARAM_ADDR + 8]
            .copy_from_slice(&(cb_va + param_base as u64).to_le_bytes());
        cb[SM90_CBANK_ADDR..SM90_CBANK_ADDR + 8].copy_from_slice(&cb_va.to_le_bytes());
    }
    Ok(shared_total)
}

/// The QMD of one launch in `words`, from the kernel's template: grid, block, shared memory and
/// its configuration, constant bank 0 (`cbank`: address, size), and the device's stack size when
/// it was raised after the kernel was taken.
#[inline(always)]
pub(crate) fn build_launch_qmd(
    dev: &Device,
    kernel: &Kernel,
    cfg: &LaunchConfig,
    shared_total: u32,
    cbank: (u64, u32),
    words: &mut [u32; 96],
) -> Result<()> {
    // The SM's carveout holds as many blocks as the launch can keep resident (a carveout sized
    // for one block caps occupancy: matmul_tiled ran 1.7x slower than under libcuda on an H100).
    let smem_config = if shared_total > 0 {
        let info = dev.info();
        let threads = cfg.block[0] * cfg.block[1] * cfg.block[2];
        let blocks = crate::core::module::occupancy(
            kernel.info(),
            threads,
            cfg.dynamic_shared_bytes,
            (info.sm_major, info.sm_minor),
            info.warps_per_sm,
            crate::core::module::max_shared_per_block(dev.arch()),
        );
        crate::hw::qmd::smem_config_for_blocks(dev.arch(), shared_total, blocks)?
    } else {
        crate::hw::qmd::smem_config(dev.arch(), shared_total)?
    };
    kernel
        .qmd
        .write(words, cfg.grid, cfg.block, shared_total, smem_config, cbank)?;
    let lm = kernel.own_lm.max(dev.stack_lm());
    if lm != kernel.qmd_lm {
        kernel.qmd.set_local_memory(words, lm)?;
    }
    if let Some(c) = launch_cluster(kernel, cfg) {
        kernel.qmd.set_cluster(words, cfg.grid, c)?;
    }
    Ok(())
}

/// The thread-block cluster shape a launch runs with: the kernel's compile-time shape, else the
/// launch's; `None` for no cluster (`[0; 3]` or `[1, 1, 1]` without a compile-time shape).
#[inline(always)]
pub(crate) fn launch_cluster(kernel: &Kernel, cfg: &LaunchConfig) -> Option<[u32; 3]> {
    match kernel.info().cluster_dims {
        Some(c) => Some(c),
        None if cfg.cluster == [0; 3] || cfg.cluster == [1; 3] => None,
        None => Some(cfg.cluster),
    }
}

/// Thread-block clusters: sm_90 (QMD V04) only; the launch's shape, if given, equals the
/// kernel's compile-time one; each dimension divides the grid's; at most 8 blocks (CUDA's
/// portable cluster size; 16 where the kernel allows non-portable sizes) and at most the
/// kernel's `.maxclusterrank`.
#[cold]
fn check_cluster(dev: &Device, kernel: &Kernel, cfg: &LaunchConfig) -> Result<()> {
    let name = &kernel.attributes().name;
    let info = kernel.info();
    let arch = dev.arch();
    if arch.qmd_version != crate::hw::QmdVersion::V04 {
        return Err(Error::new(
            Status::NotSupported,
            format!(
                "tg_launch: kernel \"{name}\": thread-block clusters (cluster {:?}{}) need an sm_90 \
                 GPU (Hopper); this device is sm_{}{}",
                cfg.cluster,
                if info.cluster_dims.is_some() { ", __cluster_dims__ in the kernel" } else { "" },
                arch.sm_major,
                arch.sm_minor
            ),
        ));
    }
    let bad = |m: String| {
        Err(Error::new(
            Status::InvalidLaunch,
            format!("tg_launch: kernel \"{name}\": {m}"),
        ))
    };
    if let Some(c) = info.cluster_dims {
        if cfg.cluster != [0; 3] && cfg.cluster != c {
            return bad(format!(
                "cluster {:?} differs from the kernel's compile-time cluster {c:?} (__cluster_dims__); pass {{0, 0, 0}} or {c:?}",
                cfg.cluster
            ));
        }
    }
    let Some(c) = launch_cluster(kernel, cfg) else {
        return Ok(());
    };
    let blocks: u64 = c.iter().map(|&d| u64::from(d)).product();
    if c.contains(&0) || (0..3).any(|i| cfg.grid[i] % c[i] != 0) {
        return bad(format!(
            "cluster {c:?} must have no zero dimension and divide the grid {:?}",
            cfg.grid
        ));
    }
    let most = kernel.max_cluster_blocks();
    if blocks > u64::from(most) {
        return bad(format!(
            "cluster {c:?} = {blocks} blocks exceeds the limit of {most} blocks per cluster{}",
            match (
                info.max_cluster_rank.is_some(),
                kernel.non_portable_clusters()
            ) {
                (true, _) => " (the kernel's .maxclusterrank)",
                (false, false) => {
                    " (CUDA's portable cluster size; Kernel::set_non_portable_clusters allows 16)"
                }
                (false, true) => " (the non-portable cluster size)",
            }
        ));
    }
    if cfg.cooperative {
        return Err(Error::new(
            Status::NotSupported,
            format!(
                "tg_launch: kernel \"{name}\": cooperative launches of clusters are not supported"
            ),
        ));
    }
    Ok(())
}

/// The checks every launch passes (queue or command buffer): the kernel's device, grid and block
/// limits, shared memory, cooperative residency.
#[inline(always)]
pub(crate) fn check_launch(dev: &Device, kernel: &Kernel, cfg: &LaunchConfig) -> Result<()> {
    let a = kernel.attributes();
    let [bx, by, bz] = cfg.block;
    let [gx, gy, gz] = cfg.grid;
    let bad = |m: String| {
        Err(Error::new(
            Status::InvalidLaunch,
            format!("tg_launch: kernel \"{}\": {m}", a.name),
        ))
    };
    if !Arc::ptr_eq(&kernel.module.dev.inner, &dev.inner) {
        return Err(Error::invalid(
            "tg_launch: the kernel belongs to another device",
        ));
    }
    if bx == 0 || by == 0 || bz == 0 || gx == 0 || gy == 0 || gz == 0 {
        return bad(format!(
            "grid ({gx},{gy},{gz}) and block ({bx},{by},{bz}) must have no zero dimension"
        ));
    }
    if bx > 1024 || by > 1024 || bz > 64 {
        return bad(format!(
            "block ({bx},{by},{bz}) exceeds the per-dimension limits (1024,1024,64)"
        ));
    }
    let threads = bx as u64 * by as u64 * bz as u64;
    if threads > a.max_threads_per_block as u64 {
        // Past the kernel's launch bounds (.maxntid / .reqntid) the launch is invalid
        // (CUDA_ERROR_INVALID_VALUE); within them, out of registers (the message names them:
        // CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES).
        let info = kernel.info();
        let bound = [info.max_threads, info.reqntid]
            .into_iter()
            .flatten()
            .map(|[x, y, z]| u64::from(x) * u64::from(y) * u64::from(z))
            .min();
        if let Some(bound) = bound.filter(|&b| threads > b) {
            return bad(format!(
                "block ({bx},{by},{bz}) = {threads} threads exceeds the kernel's launch bound of {bound} threads (.maxntid / .reqntid)"
            ));
        }
        return bad(format!(
                "block ({bx},{by},{bz}) = {threads} threads exceeds the kernel's limit of {} threads ({} registers per thread)",
                a.max_threads_per_block, a.registers
            ));
    }
    if gx > i32::MAX as u32 || gy > 65535 || gz > 65535 {
        return bad(format!(
            "grid ({gx},{gy},{gz}) exceeds the limits ({}, 65535, 65535)",
            i32::MAX
        ));
    }
    if cfg.dynamic_shared_bytes > a.max_dynamic_shared_bytes {
        return bad(format!(
                "dynamic shared memory {} bytes exceeds the {} bytes available next to the kernel's {} static bytes",
                cfg.dynamic_shared_bytes, a.max_dynamic_shared_bytes, a.static_shared_bytes
            ));
    }
    if (cfg.cluster != [0; 3] && cfg.cluster != [1; 3]) || kernel.info().cluster_dims.is_some() {
        check_cluster(dev, kernel, cfg)?;
    }
    if cfg.cooperative && cfg.concurrent {
        return bad(
            "a cooperative launch cannot be concurrent (TG_LAUNCH_COOPERATIVE with TG_LAUNCH_CONCURRENT): its blocks must all be resident at once"
                .to_string(),
        );
    }
    if cfg.cooperative {
        let per_sm = kernel.max_active_blocks(threads as u32, cfg.dynamic_shared_bytes)?;
        let most = u64::from(per_sm) * u64::from(dev.info().sm_count);
        let blocks = gx as u64 * gy as u64 * gz as u64;
        if blocks > most {
            return bad(format!(
                    "cooperative grid ({gx},{gy},{gz}) = {blocks} blocks cannot be resident at once: at most {per_sm} blocks of {threads} threads per SM x {} SMs = {most}",
                    dev.info().sm_count
                ));
        }
    }
    Ok(())
}

/// How a launch that must follow the queue's previous one waits for it.
enum Serial {
    /// An acquire of what the previous launch releases (see `Overlap`).
    Acquire([u32; RELEASE_DW]),
    /// Wait for the engine to be idle.
    Wfi,
    /// Nothing: it is complete (or the launch need not follow it).
    Done,
}
