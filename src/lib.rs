//! tilec: compiles GEMMs written in the tile IR for NVIDIA Hopper. This crate
//! holds the command-line tools; the IR lives in `tilec-dialects` and the
//! passes in `tilec-passes`.

pub mod opt;
