//! CPU barriers between the CPU and the GPU, each argued against the memory model of the CPU it
//! runs on (Arm: the Armv8-A memory model, "other-multi-copy atomic", barriers cumulative;
//! x86-64: TSO, with weakly ordered write-combining).
//!
//! **What the CPU shares with the GPU, and how Linux maps it on the Orin (nvgpu + nvmap, arm64):**
//!
//! * Command ring (pushbuffer segments), QMD + constant-bank ring, kernel-argument ring, GPFIFO
//!   ring, USERD (GP_GET at 0x88, GP_PUT at 0x8C), command-buffer images, the texture pool,
//!   uploaded code: nvmap `WRITE_COMBINE` (`pgprot_writecombine`) = **Normal Non-cacheable**,
//!   which the architecture treats as Outer Shareable. (`TEGRAGPU_RING_MEMORY=host` puts the
//!   three queue rings in nvmap `CACHEABLE` memory instead: Normal Write-Back Inner Shareable,
//!   which the Orin's GPU reads I/O-coherently, snooping the CPU caches.)
//! * The doorbell (`NV_USERMODE_NOTIFY_CHANNEL_PENDING`, usermode region + 0x90): `mmap` of the
//!   ctrl node, `pgprot_noncached` (nvgpu `os/linux/ioctl_ctrl.c:gk20a_ctrl_dev_mmap`) =
//!   **Device-nGnRnE**: no gathering, no reordering, no early write acknowledgement; accesses
//!   must be aligned (the doorbell is one aligned 32-bit `str`).
//! * Signals and queue timelines: nvmap `CACHEABLE` = Normal Write-Back Inner Shareable. The GPU
//!   writes them with host semaphore releases issued after wait-for-idle, so the work's own
//!   writes are visible before the semaphore value is (the GPU side of the contract).
//! * The error notifier: Normal Non-cacheable, written by the kernel driver on a CPU.
//!
//! **Why Rust's atomics are not enough.** On aarch64 `fence(Release | SeqCst)` is `dmb ish`,
//! `fence(Acquire)` is `dmb ishld`, and `load(Acquire)` / `store(Release)` are `ldar` / `stlr`.
//! The ISH barriers order accesses only as observed by observers in the Inner Shareable domain,
//! that is the CPUs; the GPU is an I/O master outside it. Ordering toward the GPU needs a barrier
//! of the Outer Shareable or full-system domain, or a DSB, which is what Linux does on arm64:
//! `dma_wmb()` = `dmb oshst`, `dma_rmb()` = `dmb oshld`, `wmb()` = `dsb st`, `mb()` = `dsb sy`.
//!
//! **The submit path** ([`crate::hw::gpfifo::GpRing::kick`]), in program order:
//!
//! 1. stores of the commands, QMDs, constant banks and the GPFIFO entry (Normal-NC: the CPU may
//!    gather, merge and reorder them in its write buffer);
//! 2. [`before_gp_put`]: `dsb st` (aarch64) / `sfence` (x86-64);
//! 3. the GP_PUT store to USERD (Normal-NC);
//! 4. [`before_doorbell`]: `dsb sy` (aarch64) / `mfence` (x86-64);
//! 5. the doorbell store (Device-nGnRnE on Arm, UC on x86-64).
//!
//! The GPU's host reads GP_PUT from USERD when the doorbell arrives, then fetches the GPFIFO
//! entries below it and the pushbuffer and QMDs they point to; so (1) must be visible to the GPU
//! before (3), and (3) before (5). nvgpu's own kernel submit path is the same sequence: every
//! ring write through `nvgpu_mem_wr32` is followed by `nvgpu_wmb()` (`dsb st`), and
//! `hal/fifo/userd_gv11b.c:gv11b_userd_gp_put` writes GP_PUT, then `nvgpu_mb()` (`dsb sy`), then
//! rings the doorbell.
//!
//! **Work recorded on one thread and submitted on another** (a C API queue used from several
//! threads; `tg_signal_wait` submitting the queue that holds a recorded release): the recording
//! thread's ring stores reach the submitting thread through the queue's lock (release, then
//! acquire), so they are observed by the submitting CPU before its barrier in step 2. DSB and DMB
//! are cumulative: the barrier orders every store its CPU has observed (group A), not only its
//! own, before the stores after it, for every observer of its domain (full system for `dsb st`).
//! This is the pattern Linux drivers use when one CPU fills DMA descriptors under a spinlock and
//! another rings the device.
//!
//! **Completion (the reader side)**: a CPU wait reads a semaphore the GPU wrote (a signal, a
//! queue's timeline) and then touches what that value guards: it reads results from buffers, or
//! rewrites ring regions, texture entries and signal slots the GPU has finished with.
//! [`after_gpu_value`] comes between the two: `dmb oshld` orders the semaphore load before every
//! later load and store as observed in the Outer Shareable domain, so a result load cannot be
//! satisfied with data older than the semaphore value (Arm loads may be performed speculatively
//! and out of order; a control dependency orders a later store, not a later load), and no
//! rewrite of a ring region becomes visible to the GPU before the read that said the GPU was done
//! with it. It is Linux's `dma_rmb()`, the barrier a driver puts between reading a DMA
//! descriptor's ownership bit and reading the descriptor. On x86-64 loads from write-back memory
//! are not reordered with older loads, and stores are not reordered with older loads (TSO), so
//! only the compiler must be kept from moving accesses across it.
//!
//! **Page size**: the Orin runs a 4 KiB-page kernel, and the nvgpu backend assumes it
//! (`backend::nvgpu::PAGE_SIZE`: nvmap allocation granule and alignment, the CPU mappings of
//! USERD, the notifier and the GPFIFO ring, `MAP_FIXED_NOREPLACE` at the GPU VA). A 64 KiB-page
//! aarch64 kernel is not supported.

use std::sync::atomic::{compiler_fence, fence, Ordering};

/// Between the stores of ring contents (commands, QMDs, constant banks, GPFIFO entries) and the
/// GP_PUT store that publishes them.
///
/// * aarch64: `dsb st`. Completes every earlier store of this CPU, and every store it has
///   observed (cumulativity), to every observer in the full system, the GPU included, before any
///   later instruction executes; Normal-NC stores still in the write buffer are drained. `dmb
///   oshst` would order them too (Linux's `writel` relies on it); `dsb st` is what NVIDIA's
///   kernel driver issues after each ring write (`nvgpu_wmb()`), and its cost is paid once per
///   submit. The `dmb ish` of `fence(Release)` before it only orders for the other CPUs.
/// * x86-64: `sfence`. Write-combined stores are weakly ordered with respect to other stores and
///   may sit in the write-combining buffers; `sfence` orders them before later stores. The
///   `fence(Release)` is a compiler barrier there.
#[inline(always)]
pub fn before_gp_put() {
    compiler_fence(Ordering::Release);
    fence(Ordering::Release);
    #[cfg(target_arch = "aarch64")]
    // SAFETY: a barrier instruction; no effect on registers, flags or memory contents.
    unsafe {
        std::arch::asm!("dsb st", options(nostack, preserves_flags));
    }
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SFENCE has no preconditions.
    unsafe {
        std::arch::x86_64::_mm_sfence();
    }
}

/// Between the GP_PUT store (USERD, Normal-NC / WC) and the doorbell store (Device-nGnRnE / UC).
///
/// * aarch64: `dsb sy`. The GP_PUT store has completed (is visible to the GPU's host, which
///   reads USERD from memory when the doorbell arrives) before the doorbell store is even issued.
///   A DMB would only order the two stores' observation; the doorbell goes to a different
///   endpoint (the GPU's register) than GP_PUT (memory), so NVIDIA's driver completes GP_PUT with
///   `nvgpu_mb()` (`dsb sy`) first (`gv11b_userd_gp_put`), and so does this. (`dsb st` would be
///   enough, only stores being involved; `dsb sy` matches the driver.) The `dmb ish` of
///   `fence(SeqCst)` before it orders for the other CPUs.
/// * x86-64: `mfence` (`fence(SeqCst)`): drains the write-combining buffers, so the WC GP_PUT
///   store is globally visible before the UC doorbell store.
#[inline(always)]
pub fn before_doorbell() {
    compiler_fence(Ordering::SeqCst);
    fence(Ordering::SeqCst);
    #[cfg(target_arch = "aarch64")]
    // SAFETY: a barrier instruction; no effect on registers, flags or memory contents.
    unsafe {
        std::arch::asm!("dsb sy", options(nostack, preserves_flags));
    }
}

/// After a load of a value the GPU (or the kernel driver) wrote, that says other memory is ready
/// (a semaphore: a signal or a queue's timeline; an error notifier's status), before the loads
/// and stores that depend on it.
///
/// * aarch64: `dmb oshld` (Linux's `dma_rmb()`): every load before it is ordered before every
///   load and store after it, as observed by the Outer Shareable domain, the GPU included. The
///   `ldar` of `load(Acquire)` orders later accesses for the CPUs; this extends the order to the
///   GPU's writes and to memory the GPU reads.
/// * x86-64: a compiler barrier. Loads from write-back memory are not reordered with older loads,
///   nor stores with older loads.
#[inline(always)]
pub fn after_gpu_value() {
    compiler_fence(Ordering::SeqCst);
    #[cfg(target_arch = "aarch64")]
    // SAFETY: a barrier instruction; no effect on registers, flags or memory contents.
    unsafe {
        std::arch::asm!("dmb oshld", options(nostack, preserves_flags));
    }
}
