//! Raw ABI: rm.
