//! RM backend: nvidia.ko + nvidia-uvm (desktop GPUs, Jetson Thor).
