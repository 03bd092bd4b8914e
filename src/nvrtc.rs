//! Optional run-time compilation of CUDA C through libnvrtc, loaded with libloading.
