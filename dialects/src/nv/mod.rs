//! The `nv` dialect: Hopper made explicit. Shared-memory buffers with a
//! stage dimension, TMA loads completing on mbarriers, asynchronous wgmma
//! with commit and wait (A from shared memory or from registers loaded by
//! `nv.load_fragment`), CTA barriers, and the epilogue's stores.
//!
//! Ops marked "elected" (`nv.tma_load`, `nv.mbarrier_expect_tx`, `nv.tma_store`,
//! `nv.tma_store_wait`) are issued by one thread of the executing threads (in
//! a consumer region of `nv.warp_specialize`, one of each consumer
//! warpgroup, which runs the region as its own); the lowering elects it.
//! `nv.copy_async` runs on the CTA's second warp (`memory::COPYING_WARP`).
//! All other ops run on every
//! thread. The tile dialect's index arithmetic, `tile.for`
//! and element-wise ops stay in use next to these ops.

pub mod epilogue;
pub mod fragment;
pub mod grid;
pub mod memory;
pub mod mma;
pub mod reduce;
pub mod roles;

// The op table, `Opcode`s and typed views, generated from `ops.ods`.
include!(concat!(env!("OUT_DIR"), "/nv_ops.rs"));
