//! CUDA cubin (ELF) loading.
