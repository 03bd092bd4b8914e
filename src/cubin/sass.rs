//! Recognising texture and surface instructions in SASS. Texture instructions read texture
//! objects through the device's texture header and sampler pools (`crate::core::Texture`);
//! surface instructions need surface objects over CUDA arrays, which libtegragpu does not
//! provide, so a kernel that uses them is refused (`TG_ERROR_NOT_SUPPORTED`) instead of faulting
//! on the GPU.
//!
//! From Volta (sm_70) on, an instruction is 16 bytes; bits 8:0 of its first little-endian 64-bit
//! word are the operation, bits 11:9 the operand form (handle in a register, in a constant bank,
//! in a uniform register), so one set of values serves every architecture. The values were read
//! with `nvdisasm` 13.5 (sm_75 … sm_121; sm_70/72 decoded as sm_75) from cubins of every texture
//! and surface PTX operation (bound and bindless) and 280 CUDA C++ texture/surface kernels, and by
//! decoding each 12-bit value with 55 fillings of the other bits; no value decodes as both a
//! texture/surface operation and anything else. Ordinary kernels (547 cubins, 54,696
//! instructions: arithmetic, memory, atomics, shuffles, `mma`, `ldmatrix`, `cp.async`, TMA,
//! barriers, calls) match none. Neighbouring values are ordinary instructions (0x15d NANOSLEEP,
//! 0x177 USTGR, 0x192 MEMBAR, 0x1a1 MATCH, 0x1b2 SYNCS, 0x1b4 UTMALDG), so the set is exact.
//!
//! Not visible here: `txq`/`suq` queries of channel type, order, array size, mip levels or samples
//! compile to loads from a driver descriptor table (the cubin then references
//! `.nv.unified.texrefDescSize` / `.nv.surfrefDescSize`), and `tex.grad.3d` to a call of
//! `__cuda_syscall_tex_grad_3d_*`; the relocation pass refuses those by symbol name.

/// Bits 8:0 of texture and surface operations, with their mnemonics.
const OPS: &[(u16, u16, &str)] = &[
    (0x160, 0x162, "TEX"),
    (0x163, 0x165, "TLD4"),
    (0x166, 0x168, "TLD"),
    (0x169, 0x16b, "TMML"),
    (0x16c, 0x16e, "TXD"),
    (0x16f, 0x171, "TXQ"),
    (0x172, 0x174, "FOOTPRINT"),
    (0x193, 0x196, "SUATOM"),
    (0x197, 0x19a, "SULD"),
    (0x19b, 0x19e, "SUST"),
    (0x19f, 0x1a0, "SURED"),
    (0x1b3, 0x1b3, "SUQUERY"),
];

/// The first texture or surface instruction in `code` (SASS for `sm`): its byte offset and
/// mnemonic. Only for sm_70 and later (16-byte instructions); `None` for older code.
pub fn first_texture_instruction(code: &[u8], sm: (u32, u32)) -> Option<(usize, &'static str)> {
    first_of(code, sm, |_| true)
}

/// The first surface instruction (SUATOM, SULD, SUST, SURED, SUQUERY) in `code`.
pub fn first_surface_instruction(code: &[u8], sm: (u32, u32)) -> Option<(usize, &'static str)> {
    first_of(code, sm, |m| m.starts_with("SU"))
}

fn first_of(
    code: &[u8],
    sm: (u32, u32),
    keep: impl Fn(&str) -> bool,
) -> Option<(usize, &'static str)> {
    if sm.0 < 7 {
        return None;
    }
    code.chunks_exact(16).enumerate().find_map(|(i, insn)| {
        let op = u16::from_le_bytes([insn[0], insn[1]]) & 0x1ff;
        OPS.iter()
            .find(|(lo, hi, m)| (*lo..=*hi).contains(&op) && keep(m))
            .map(|(_, _, m)| (i * 16, *m))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn insn(word: u64) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&word.to_le_bytes());
        b
    }

    #[test]
    fn finds_the_first_texture_instruction() {
        // Encodings nvdisasm shows: sm_87 TLD.SCR.LZ (handle in cbank), sm_90 TLD.LZ (uniform
        // register), sm_87 SUST, and an ordinary BRA / MEMBAR / MATCH before them.
        let mut code = Vec::new();
        code.extend_from_slice(&insn(0x0000_000f_fc00_0947)); // BRA-like, op 0x147
        code.extend_from_slice(&insn(0x0000_0000_0000_7992)); // MEMBAR 0x192
        code.extend_from_slice(&insn(0x0000_0000_0000_73a1)); // MATCH 0x1a1
        code.extend_from_slice(&insn(0x1000_58ff_0002_7b66)); // TLD (sm_87)
        assert_eq!(first_texture_instruction(&code, (8, 7)), Some((48, "TLD")));
        assert_eq!(first_texture_instruction(&code[..48], (9, 0)), None);
        let sm90 = insn(0x0000_06ff_0004_8f66);
        assert_eq!(first_texture_instruction(&sm90, (9, 0)), Some((0, "TLD")));
        let sust = insn(0x1000_5805_0000_7b9d);
        assert_eq!(first_texture_instruction(&sust, (8, 7)), Some((0, "SUST")));
        // A trailing partial instruction is ignored; pre-Volta code is not scanned.
        assert_eq!(first_texture_instruction(&sust[..15], (8, 7)), None);
        assert_eq!(first_texture_instruction(&sust, (6, 2)), None);
        // Surface instructions only: the texture fetches are skipped.
        assert_eq!(first_surface_instruction(&code, (8, 7)), None);
        let mut both = code.clone();
        both.extend_from_slice(&sust);
        assert_eq!(first_surface_instruction(&both, (8, 7)), Some((64, "SUST")));
    }
}
