//! The C API (extern "C"), wrapped by include/tegragpu.h.
