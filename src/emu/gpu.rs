//! The emulated GPU: host, compute and copy engines running channel work on a thread.
