//! Updates of a finished command buffer between replays: a launch's parameters or
//! configuration, a signal's or wait's value, written in place once earlier replays completed.

use super::{node_kind, rename, CmdBuf, Node, Patch};
use crate::core::module::Kernel;
use crate::core::queue::{check_launch, LaunchConfig};
use crate::error::{Error, Result, Status};
use std::sync::Arc;

impl CmdBuf {
    /// Launch node `index` for an update by `call`: refused unless it is a launch of `kernel`
    /// (the same function of the same module). Its configuration and parameters.
    fn launch_node(
        &self,
        index: usize,
        kernel: &Kernel,
        call: &str,
    ) -> Result<(&LaunchConfig, &[u8])> {
        let (recorded, cfg, params) = match self.node(index, call)? {
            Node::Launch {
                kernel: k,
                cfg,
                params,
            } => (k, cfg, params),
            other => {
                return Err(Error::invalid(format!(
                    "{call}: node {index} is {}, not a launch",
                    node_kind(other)
                )))
            }
        };
        if !Arc::ptr_eq(&recorded.module, &kernel.module) || recorded.index != kernel.index {
            return Err(Error::invalid(format!(
                "{call}: node {index} launches \"{}\", not \"{}\"",
                recorded.attributes().name,
                kernel.attributes().name
            )));
        }
        Ok((cfg, params))
    }

    /// Replace the parameters of launch node `index` for later replays. `kernel` must be the
    /// kernel the node launches (the same function of the same module) and `params` its whole
    /// parameter block. Waits for earlier replays to complete first.
    pub fn set_params(&mut self, index: usize, kernel: &Kernel, params: &[u8]) -> Result<()> {
        const CALL: &str = "tg_cmdbuf_set_params";
        self.finished(CALL)?;
        self.launch_node(index, kernel, CALL)?;
        let Some(Patch::Params { cpu, len }) = self.image.as_ref().map(|i| i.patches[index]) else {
            return Err(Error::new(
                Status::Internal,
                format!("{CALL}: node {index} has no parameter block"),
            ));
        };
        if params.len() != len {
            return Err(Error::new(
                Status::InvalidLaunch,
                format!(
                    "{CALL}: kernel \"{}\" takes {len} bytes of parameters, got {}",
                    kernel.attributes().name,
                    params.len()
                ),
            ));
        }
        self.wait_replays(CALL)?;
        // SAFETY: the parameter block inside the image's constant bank; no replay reads it now.
        unsafe { crate::core::wcmem::copy(cpu, params.as_ptr(), len) };
        // wait_replays saw the GPU done with the image (crate::hw::barrier::after_gpu_value
        // keeps these stores after that). The fence: as where the image is first written.
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        if let Some(Node::Launch { params: p, .. }) = self.nodes.get_mut(index) {
            p.copy_from_slice(params);
        }
        Ok(())
    }

    /// Replace the launch configuration (grid, block, dynamic shared memory) of launch node
    /// `index` for later replays, as a CUDA graph's kernel node takes new dimensions
    /// (`cuGraphExecKernelNodeSetParams`). `kernel` must be the kernel the node launches;
    /// `cfg` is checked like a recorded launch's, and its `concurrent` flag must be the
    /// recorded one (it decides how the command buffer is laid out). Waits for earlier replays
    /// to complete, then rewrites that node's QMD and constant bank 0 in place (and the link
    /// from it to a launch chained after it).
    pub fn set_launch(&mut self, index: usize, kernel: &Kernel, cfg: &LaunchConfig) -> Result<()> {
        const CALL: &str = "tg_cmdbuf_set_launch";
        self.finished(CALL)?;
        let (old_cfg, params) = self.launch_node(index, kernel, CALL)?;
        let (old_cfg, params) = (*old_cfg, params.to_vec());
        // The flags decide how the command buffer is laid out.
        for (flag, was, now) in [
            ("TG_LAUNCH_CONCURRENT", old_cfg.concurrent, cfg.concurrent),
            (
                "TG_LAUNCH_COOPERATIVE",
                old_cfg.cooperative,
                cfg.cooperative,
            ),
        ] {
            if was != now {
                return Err(Error::invalid(format!(
                    "{CALL}: node {index} was recorded {} {flag}; the flag cannot change",
                    if was { "with" } else { "without" }
                )));
            }
        }
        let cluster = |c: &LaunchConfig| crate::core::queue::launch_cluster(kernel, c).is_some();
        if cluster(cfg) != cluster(&old_cfg) {
            return Err(Error::invalid(format!(
                "{CALL}: node {index} was recorded {} a thread-block cluster; a launch cannot change between cluster and plain (cfg->cluster {:?})",
                if cluster(&old_cfg) { "with" } else { "without" },
                cfg.cluster
            )));
        }
        check_launch(&self.dev, kernel, cfg).map_err(|e| rename(e, "tg_launch", CALL))?;
        let Some(meta) = self
            .image
            .as_ref()
            .and_then(|i| i.launches.get(index).cloned().flatten())
        else {
            return Err(Error::new(
                Status::Internal,
                format!("{CALL}: node {index} has no launch in the image"),
            ));
        };
        // Build the new QMD and bank before waiting: a configuration the encoders refuse
        // changes nothing.
        let (gpu_va, cpu) = {
            let a = &self.image.as_ref().expect("finished").alloc;
            (a.gpu_va, a.cpu)
        };
        let cb_va = gpu_va + meta.cb_off;
        let mut cb = vec![0u8; meta.cb_size as usize];
        let mut words = self.encode_launch(kernel, cfg, &params, &mut cb, cb_va, meta.ws)?;
        if meta.prefetched {
            kernel.qmd.clear_cbank0_invalidate(&mut words);
        }
        let mut out = words;
        if let Some((succ, prefetch)) = meta.succ {
            let image = self.image.as_ref().expect("finished");
            let (Some(Some(sm)), Some(Node::Launch { kernel: sk, .. })) =
                (image.launches.get(succ), self.nodes.get(succ))
            else {
                return Err(Error::new(
                    Status::Internal,
                    format!("{CALL}: node {index}'s successor {succ} is not a launch"),
                ));
            };
            let s_va = gpu_va + sm.qmd_off;
            if prefetch {
                kernel.qmd.chain(&mut out, s_va, &sm.words, &sk.qmd)?;
            } else {
                kernel.qmd.set_dependent(&mut out, s_va)?;
            }
        }
        self.wait_replays(CALL)?;
        // SAFETY: the node's QMD slot and constant bank inside the image's CPU-mapped
        // allocation; no replay reads them now.
        unsafe {
            crate::core::wcmem::copy_dwords(
                cpu.add(meta.qmd_off as usize) as *mut u32,
                out.as_ptr(),
                kernel.qmd.dwords(),
            );
            crate::core::wcmem::copy(cpu.add(meta.cb_off as usize), cb.as_ptr(), cb.len());
        }
        // As in set_params.
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        if let Some(Some(m)) = self.image.as_mut().and_then(|i| i.launches.get_mut(index)) {
            m.words = words;
        }
        if let Some(Node::Launch { cfg: c, .. }) = self.nodes.get_mut(index) {
            *c = *cfg;
        }
        Ok(())
    }

    /// Replace the value of signal or wait node `index` for later replays. Waits for earlier
    /// replays to complete first.
    pub fn set_value(&mut self, index: usize, value: u64) -> Result<()> {
        const CALL: &str = "tg_cmdbuf_set_value";
        self.finished(CALL)?;
        match self.node(index, CALL)? {
            Node::Signal { .. } | Node::Wait { .. } => {}
            other => {
                return Err(Error::invalid(format!(
                    "{CALL}: node {index} is {}, not a signal or a wait",
                    node_kind(other)
                )))
            }
        }
        let Some(Patch::Payload { cpu }) = self.image.as_ref().map(|i| i.patches[index]) else {
            return Err(Error::new(
                Status::Internal,
                format!("{CALL}: node {index} has no payload"),
            ));
        };
        self.wait_replays(CALL)?;
        // SAFETY: PAYLOAD_LO/HI of the node's method run inside the image; no replay reads them.
        unsafe {
            std::ptr::write_volatile(cpu, value as u32);
            std::ptr::write_volatile(cpu.add(1), (value >> 32) as u32);
        }
        // As in set_params.
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        match self.nodes.get_mut(index) {
            Some(Node::Signal { value: v, .. }) | Some(Node::Wait { value: v, .. }) => *v = value,
            _ => {}
        }
        Ok(())
    }
}
