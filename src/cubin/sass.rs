//! Recognising texture and surface instructions in SASS, so that a kernel using texture or
//! surface objects is refused (`TG_ERROR_NOT_SUPPORTED`) instead of running without the texture
//! header and sampler pools it needs (it would fault on the GPU).
//!
//! From Turing (sm_75) on, an instruction is 16 bytes and bits 11:0 of its first little-endian
//! 64-bit word select the operation and its operand form. The values below were read from
//! `nvdisasm` 12.9 of nvrtc 12.9 cubins: every texture/surface PTX operation (`tex`, `tld4`,
//! `txq`, `suld`, `sust`, `sured`, bound and bindless, 1-D to cube and arrays) compiled for
//! sm_75 … sm_121, against ~75,000 instructions of ordinary kernels (arithmetic, memory,
//! atomics, shuffles, `mma`, `ldmatrix`, `cp.async`, barriers, calls) with no collision. Volta
//! (sm_70/72) is not covered (no scan there).

/// (bits 11:0, mnemonic) per SM generation.
const TURING_TO_ADA: &[(u16, &str)] = &[
    (0x361, "TEX"),
    (0x364, "TLD4"),
    (0x367, "TLD"),
    (0x36d, "TXD"),
    (0x370, "TXQ"),
    (0x3a0, "SURED"),
    (0x59f, "SURED"),
    (0x99a, "SULD"),
    (0x99c, "SUST"),
    (0x99e, "SUST"),
    (0xb60, "TEX"),
    (0xb63, "TLD4"),
    (0xb66, "TLD"),
    (0xb6c, "TXD"),
    (0xb6f, "TXQ"),
    (0xb99, "SULD"),
    (0xb9b, "SUST"),
    (0xb9d, "SUST"),
];
const HOPPER_ON: &[(u16, &str)] = &[
    (0xf60, "TEX"),
    (0xf63, "TLD4"),
    (0xf66, "TLD"),
    (0xf6c, "TXD"),
    (0xf6f, "TXQ"),
    (0xf99, "SULD"),
    (0xf9b, "SUST"),
    (0xf9d, "SUST"),
    (0xf9f, "SURED"),
];

fn table(sm: (u32, u32)) -> &'static [(u16, &'static str)] {
    match sm {
        (7, m) if m >= 5 => TURING_TO_ADA,
        (8, _) => TURING_TO_ADA,
        (major, _) if major >= 9 => HOPPER_ON,
        _ => &[],
    }
}

/// The first texture or surface instruction in `code` (SASS for `sm`): its byte offset and
/// mnemonic.
pub fn first_texture_instruction(code: &[u8], sm: (u32, u32)) -> Option<(usize, &'static str)> {
    let t = table(sm);
    if t.is_empty() {
        return None;
    }
    code.chunks_exact(16).enumerate().find_map(|(i, insn)| {
        let op = u16::from_le_bytes([insn[0], insn[1]]) & 0xfff;
        t.iter().find(|(v, _)| *v == op).map(|(_, m)| (i * 16, *m))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn insn(op: u16) -> [u8; 16] {
        let mut b = [0u8; 16];
        // Operand bits above 11 must not matter.
        b[..2].copy_from_slice(&(op | 0xa000).to_le_bytes());
        b[2] = 0xff;
        b
    }

    #[test]
    fn finds_the_first_texture_instruction_per_generation() {
        let mut code = Vec::new();
        code.extend_from_slice(&insn(0x947)); // BRA
        code.extend_from_slice(&insn(0xb66)); // TLD (bindless, sm_8x)
        code.extend_from_slice(&insn(0xf9d)); // SUST (sm_90)
        assert_eq!(first_texture_instruction(&code, (8, 7)), Some((16, "TLD")));
        assert_eq!(first_texture_instruction(&code, (9, 0)), Some((32, "SUST")));
        assert_eq!(first_texture_instruction(&code, (7, 2)), None);
        assert_eq!(first_texture_instruction(&code[..16], (9, 0)), None);
        // A trailing partial instruction is ignored.
        assert_eq!(first_texture_instruction(&code[..31], (9, 0)), None);
    }
}
