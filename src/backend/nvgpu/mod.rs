//! nvgpu + nvmap backend (Jetson Orin), real or over the emulated kernel.
