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
        let attrs = kernel.attrs.clone();
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
        self.check_launch(kernel, cfg)?;
        let heads = (
            self.qmd.as_ref().map(|r| r.head),
            self.karg.as_ref().map(|r| r.head),
        );
        let r = self.record_launch(kernel, cfg, write_params);
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

    fn record_launch(
        &mut self,
        kernel: &Kernel,
        cfg: &LaunchConfig,
        write_params: impl FnOnce(&mut [u8]) -> Result<()>,
    ) -> Result<()> {
        let arch = self.dev.arch();
        let info = kernel.info();
        let coop_ws = if cfg.cooperative {
            Some(self.coop_workspace()?)
        } else {
            None
        };
        let param_base = info.param_base as u64;
        let cb_size = (param_base + info.param_bytes as u64).div_ceil(256) * 256;
        let qmd_va = self.alloc_qmd()?;
        let (qmd_gpu, qmd_cpu) = {
            let r = self.qmd.as_ref().expect("compute queue");
            (r.alloc.gpu_va, r.alloc.cpu)
        };
        let slot = ((qmd_va - qmd_gpu) / QMD_STRIDE) as usize;
        let in_slot = cb_size <= QMD_SLOT_CBANK_MAX;
        let karg_va = if in_slot {
            qmd_va + QMD_SLOT_CBANK
        } else {
            self.alloc_karg(cb_size)?
        };
        let ring_cb: *mut u8 = if in_slot {
            // SAFETY: inside the QMD slot just reserved.
            unsafe { qmd_cpu.add((qmd_va - qmd_gpu + QMD_SLOT_CBANK) as usize) }
        } else {
            let karg = self.karg.as_ref().expect("compute queue");
            // SAFETY: [karg_va, +cb_size) was just reserved in the CPU-mapped ring.
            unsafe { karg.alloc.cpu.add((karg_va - karg.alloc.gpu_va) as usize) }
        };
        // Build the image in cached memory, then write the ring (write-combined memory, behind a
        // bus on desktop GPUs) in sequential runs: everything, or only what changes per launch
        // when the slot already holds a constant bank of this kernel with this size.
        let cb: &mut [u8] = &mut self.scratch[..cb_size as usize];
        let params_range = param_base as usize..param_base as usize + info.param_bytes as usize;
        let shared_total = build_launch_cbank(&self.dev, kernel, cfg, cb, karg_va, write_params)?;
        // A cooperative launch finds its grid workspace through the driver's "envreg" words
        // in constant bank 0; the slot's bank is then written whole and not reused as is.
        let cb_key = if let Some(ws) = coop_ws {
            crate::hw::cbank0::put_grid_workspace(arch, cb, ws)?;
            (0, 0)
        } else {
            (kernel.id, cb_size as u32)
        };
        let variable = cbank0_variable_ranges(info.param_base);
        match variable {
            Some(ranges) if in_slot && cb_key.0 != 0 && self.slot_cbank[slot] == cb_key => {
                for r in ranges.iter().chain(std::iter::once(&params_range)) {
                    // SAFETY: r lies inside the cbank (build_cbank0 checked param_base + bytes).
                    unsafe {
                        std::ptr::copy_nonoverlapping(
                            cb.as_ptr().add(r.start),
                            ring_cb.add(r.start),
                            r.len(),
                        )
                    };
                }
            }
            // SAFETY: the reserved ring range; the scratch image does not overlap it.
            _ => unsafe { std::ptr::copy_nonoverlapping(cb.as_ptr(), ring_cb, cb.len()) },
        }
        self.slot_cbank[slot] = if in_slot { cb_key } else { (0, 0) };
        let mut words = [0u32; 96];
        build_launch_qmd(
            &self.dev,
            kernel,
            cfg,
            shared_total,
            (karg_va, cb_size as u32),
            &mut words,
        )?;
        // SAFETY: the QMD slot (QMD_STRIDE bytes) was just reserved in the CPU-mapped ring.
        let dst = unsafe { qmd_cpu.add((qmd_va - qmd_gpu) as usize) as *mut u32 };
        if self.slot_qmd[slot] == kernel.id {
            for &i in kernel.qmd.variable_dwords() {
                // SAFETY: i < the QMD's dwords, inside the slot.
                unsafe { std::ptr::write_volatile(dst.add(i as usize), words[i as usize]) };
            }
        } else {
            // SAFETY: as above.
            unsafe { std::ptr::copy_nonoverlapping(words.as_ptr(), dst, kernel.qmd.dwords()) };
            self.slot_qmd[slot] = kernel.id;
        }
        let gen = self.dev.inner.local_generation.load(Ordering::Acquire);
        let local = if gen != self.local_generation {
            let lm = self.dev.inner.local.lock();
            lm.buf.as_ref().map(|b| (b.gpu_va, lm.bytes_per_tpc))
        } else {
            None
        };
        let serialize = self.last_was_launch;
        // Instruction/constant/global caches: invalidated when code was loaded since this
        // queue's last invalidate (each QMD also invalidates its constant bank 0 and the L1 data
        // caches itself).
        let code_gen = self.dev.inner.code_generation.load(Ordering::Acquire);
        let invalidate = code_gen != self.code_generation;
        self.with_cmd(|pb| {
            if let Some((base, per_tpc)) = local {
                pb.set_local_memory(base, per_tpc)?;
            }
            if serialize {
                pb.wait_for_idle()?;
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
        self.last_was_launch = true;
        Ok(())
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

/// The bytes of constant bank 0 below the parameters that change from one launch of a kernel to
/// the next (launch dimensions, dynamic and aggregate shared memory, grid in clusters); the rest
/// of the driver-reserved area is the same for every launch on a device. `None`: unknown layout,
/// write the whole bank.
fn cbank0_variable_ranges(param_base: u32) -> Option<&'static [std::ops::Range<usize>]> {
    #[allow(clippy::single_range_in_vec_init)]
    const SM8X: [std::ops::Range<usize>; 1] = [0..0x30];
    const SM90: [std::ops::Range<usize>; 2] = [0..0x30, 0x138..0x168];
    match param_base {
        0x160 => Some(&SM8X),
        0x210 => Some(&SM90),
        _ => None,
    }
}

/// Constant bank 0 of one launch, built in `cb` (cached memory) for the GPU address `cb_va`: the
/// driver-reserved words (`hw::cbank0`), the parameters (`write_params` fills them) and, for
/// kernels that take a parameter's address (`__grid_constant__`, sm_90), the parameter block's
/// address at c[0x0][0x198]. Returns the launch's total shared memory. Used by queue launches
/// and command buffers alike.
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
        param_base: info.param_base,
        params: &[],
    };
    crate::hw::cbank0::build_cbank0(dev.arch(), cb, &p)?;
    let param_base = info.param_base as usize;
    write_params(&mut cb[param_base..param_base + info.param_bytes as usize])?;
    if info.param_base == 0x210 {
        cb[0x198..0x1a0].copy_from_slice(&(cb_va + param_base as u64).to_le_bytes());
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
    let smem_config = crate::hw::qmd::smem_config(dev.arch(), shared_total)?;
    kernel
        .qmd
        .write(words, cfg.grid, cfg.block, shared_total, smem_config, cbank)?;
    let lm = kernel.own_lm.max(dev.stack_lm());
    if lm != kernel.qmd_lm {
        kernel.qmd.set_local_memory(words, lm)?;
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

#[cfg(test)]
mod tests {
    use super::cbank0_variable_ranges;
    use crate::hw::arch::arch_by_name;
    use crate::hw::cbank0::{build_cbank0, Cbank0Params};

    /// Two launches with every per-launch value different differ only inside the ranges the
    /// queue rewrites when it reuses a slot (and the parameters).
    #[test]
    fn cbank0_differences_lie_in_the_variable_ranges() {
        for name in ["ga10b", "gh100"] {
            let arch = arch_by_name(name).unwrap();
            let base = arch.cbank0.param_base;
            let ranges = cbank0_variable_ranges(base).expect("known layout");
            let mk = |block, grid, dynamic, aggr| {
                let mut out = vec![0xAAu8; base as usize + 16];
                let p = Cbank0Params {
                    block,
                    grid,
                    shared_window: 0xfe_0000_0000,
                    local_window: 0xfd_0000_0000,
                    dynamic_smem_bytes: dynamic,
                    aggr_smem_bytes: aggr,
                    sm_count: 132,
                    param_base: base,
                    params: &[],
                };
                build_cbank0(arch, &mut out, &p).unwrap();
                out
            };
            let a = mk([1, 2, 3], [4, 5, 6], 0, 0x400);
            let b = mk([1024, 1, 1], [70000, 65535, 7], 0xC000, 0x10400);
            let mut differing = 0;
            for i in 0..base as usize {
                if a[i] != b[i] {
                    differing += 1;
                    assert!(
                        ranges.iter().any(|r| r.contains(&i)),
                        "{name}: byte {i:#x} changes outside the variable ranges"
                    );
                }
            }
            assert!(differing > 0);
        }
    }
}
