//! Raw ABI: nvgpu.
