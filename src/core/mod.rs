//! Backend-independent runtime: Device, Buffer, Module/Kernel, Queue, Signal.
