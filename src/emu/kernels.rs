//! Registry of reference kernels: code bytes of known cubin functions → CPU closures.
