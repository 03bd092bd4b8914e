//! Graphs: kernel, memcpy (device to device) and empty nodes with dependencies; instantiation
//! records the nodes in dependency order into a libtegragpu command buffer, which a launch
//! replays on the stream's queue.

#![allow(unused)]
