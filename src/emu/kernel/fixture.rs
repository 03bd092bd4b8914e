//! The emulated ga10b's `nvgpu_gpu_characteristics`.
//!
//! Values marked [SEED] were measured on an Orin AGX (nvgpu-kernel-interface.md §3, seed 001);
//! values marked [INFER] were not in the seeds' dump and are plausible ga10b values chosen so
//! that consumers get non-zero topology; don't treat them as hardware facts.

use crate::sys::nvgpu::*;

/// The characteristics fixture of the emulated Orin.
pub fn ga10b_characteristics() -> nvgpu_gpu_characteristics {
    let mut chipname = [0u8; 8];
    chipname[..5].copy_from_slice(b"ga10b");
    nvgpu_gpu_characteristics {
        arch: 0x170,                                            // [SEED]
        r#impl: 0xb,                                            // [SEED]
        rev: 0xa1,                                              // [SEED]
        num_gpc: 1,                                             // [SEED]
        numa_domain_id: NVGPU_GPU_CHARACTERISTICS_NO_NUMA_INFO, // [SEED]
        L2_cache_size: 4 << 20,                                 // [SEED]
        on_board_video_memory_size: 0,                          // [SEED]
        num_tpc_per_gpc: 4,                                     // [SEED]
        bus_type: NVGPU_GPU_BUS_TYPE_AXI,                       // [SEED]
        big_page_size: 0,                                       // [SEED]
        compression_page_size: 64 << 10,                        // [SEED]
        pde_coverage_bit_count: 47,                             // [SRC] top level
        available_big_page_sizes: 0,                            // [SEED]
        flags: 0x01bf_5fff_7f5d_035d,                           // [SEED]
        twod_class: 0x902d,                                     // [SEED]
        threed_class: 0xc797,                                   // [SEED]
        compute_class: 0xc7c0,                                  // [SEED]
        gpfifo_class: 0xc76f,                                   // [SEED]
        inline_to_memory_class: 0xa140,                         // [SEED]
        dma_copy_class: 0xc7b5,                                 // [SEED]
        gpc_mask: 1,                                            // [SEED]
        sm_arch_sm_version: 0x807,                              // [SEED]
        sm_arch_spa_version: 0x806,                             // [SEED]
        sm_arch_warp_count: 96,                                 // [SEED]
        gpu_ioctl_nr_last: NVGPU_GPU_IOCTL_LAST as i16,         // [SEED] 44
        tsg_ioctl_nr_last: NVGPU_TSG_IOCTL_LAST as i16,         // [SEED] 21
        dbg_gpu_ioctl_nr_last: 33,                              // [SRC]
        ioctl_channel_nr_last: NVGPU_IOCTL_CHANNEL_LAST as i16, // [SEED] 128
        as_ioctl_nr_last: NVGPU_AS_IOCTL_LAST as i16,           // [SEED] 14
        gpu_va_bit_count: 40,                                   // [SEED]
        max_fbps_count: 2,                                      // [SEED]
        fbp_en_mask: 3,                                         // [SEED]
        emc_en_mask: 0,                                         // [INFER]
        max_ltc_per_fbp: 1,                                     // [SEED]
        max_lts_per_ltc: 4,                                     // [SEED]
        max_tex_per_tpc: 4,                                     // [INFER]
        max_gpc_count: 2,                                       // [INFER]
        chipname,                                               // [SEED]
        num_ltc: 2,                                             // [SEED]
        lts_per_ltc: 4,                                         // [INFER]
        map_buffer_batch_limit: 256,                            // [INFER]
        max_freq: 1_300_000_000,                                // [SEED]
        // [SRC] hal/gr/init/gr_init_gp10b_fusa.c: gp10b_gr_init_get_supported_preemption_modes
        // (CONFIG_NVGPU_GFXP, CONFIG_NVGPU_CILP) and gp10b_gr_init_get_default_preemption_modes
        // (wait-for-idle), via os/linux/ioctl_ctrl.c:nvgpu_set_preemption_mode_flags.
        graphics_preemption_mode_flags: NVGPU_GRAPHICS_PREEMPTION_MODE_WFI
            | NVGPU_GRAPHICS_PREEMPTION_MODE_GFXP,
        compute_preemption_mode_flags: NVGPU_COMPUTE_PREEMPTION_MODE_WFI
            | NVGPU_COMPUTE_PREEMPTION_MODE_CTA
            | NVGPU_COMPUTE_PREEMPTION_MODE_CILP,
        default_graphics_preempt_mode: NVGPU_GRAPHICS_PREEMPTION_MODE_WFI,
        default_compute_preempt_mode: NVGPU_COMPUTE_PREEMPTION_MODE_WFI,
        reg_ops_limit: 1024,           // [INFER]
        num_ppc_per_gpc: 2,            // [INFER]
        max_veid_count_per_tsg: 64,    // [SRC] hw_gr_ga10b.h max_veid_count_init 0x40
        num_sub_partition_per_fbpa: 2, // [INFER]
        max_gpfifo_entries: 1 << 28,   // [SEED]
        ..Default::default()
    }
}
