//! GPU programming layer: method encoding, pushbuffers, GPFIFO ring, QMDs, architecture table.
