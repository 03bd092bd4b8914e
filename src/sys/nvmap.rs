//! Raw ABI: nvmap.
