//! `tile-fit-tma-boxes`: marks the TMA loads whose boxes may stop at the
//! tensor's last row (`nv.tma_load {fit_rows}`). A box that passes the end
//! of a tensor still costs the copy engine a request per row, zeros
//! included: a decode GEMM (M of a few rows) in 64-row tiles asks for 64
//! rows of A to use one, and that, not HBM, bounds its K loop. A fitted box
//! is as tall as the tensor's rows rounded up to 8 (at most the full box);
//! the runtime sizes the descriptor and the kernel the barrier's expected
//! bytes from the launch's shape, so one kernel still serves every shape.
//!
//! The buffer rows a fitted box leaves out are never written. That is safe
//! only where a row of the buffer feeds nothing but the same row of the
//! result: the wgmma operands read K-major (A as M x K, B as N x K), whose
//! stale rows make rows or columns of the accumulator that lie past the
//! tensor and are never stored. A buffer read any other way (an operand
//! read MN-major, whose rows are K and would add stale products into every
//! result; registers loaded by threads; an epilogue's staging) keeps its
//! full boxes, and so does B wherever an op `crosses_columns` (ODS: a
//! quantisation's group maximum, SwiGLU's two halves): a stale column
//! there would reach a stored one. No op combines rows.

use crate::phase::{Phase, PhaseRule};
use crate::pass::PassInfo;
use crate::pass::{Pass, Statistic};
use std::collections::HashMap;
use tilec_dialects::ir::{Attribute, Body, Op, Value};
use tilec_dialects::nv::{SmemRows, TmaLoad, TmaPrefetch, Wgmma};
use tilec_dialects::registry::Opcode;
use tilec_dialects::{Diagnostic, Function};

/// `tile-fit-tma-boxes`'s registration: name, options, phases and constructor.
pub const INFO: PassInfo = PassInfo {
    name: "tile-fit-tma-boxes",
    summary: "Fit the TMA boxes of K-major wgmma operands to the tensor's rows at launch, so a tile taller than the tensor loads only the rows that exist",
    options: &[],
    phases: PhaseRule { needs: Phase::Nv..=Phase::Nv, leaves: None, reason: "it marks nv.tma_load ops by how nv.wgmma reads their buffers (run it after tile-lower-to-nv)" },
    create: |_| Box::new(FitTmaBoxes::default()),
};

/// The `tile-fit-tma-boxes` pass, with what it fitted.
#[derive(Default)]
pub struct FitTmaBoxes {
    fitted: u64,
}

impl Pass for FitTmaBoxes {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn run(&mut self, func: &mut Function) -> Result<(), Diagnostic> {
        let body = &mut func.body;
        let ops = body.walk_region(func.region);
        let columns_combined = ops.iter().any(|&op| body.ops[op].def.traits.crosses_columns);
        let row_safe = row_safe_buffers(body, &ops, columns_combined);
        for op in ops {
            // A prefetch fetches the box of the loads into its buffer, fitted as theirs are.
            let (tensor, buffer, fitted, is_load) = if let Some(load) = TmaLoad::of(body, op) {
                (load.tensor(body), load.buffer(body), load.fit_rows(body), true)
            } else if let Some(prefetch) = TmaPrefetch::of(body, op) {
                (prefetch.tensor(body), prefetch.buffer(body), prefetch.fit_rows(body), false)
            } else {
                continue;
            };
            let rank = body.value_type(tensor).as_ref_type().map_or(0, |t| t.shape.len());
            let tile_rank = body.value_type(buffer).as_smem().map_or(0, |s| s.tile.shape.len());
            if rank >= 2 && tile_rank >= 2 && row_safe.get(&root_buffer(body, buffer)) == Some(&true) && !fitted {
                body.ops[op].attrs.set("fit_rows", Attribute::Unit);
                self.fitted += u64::from(is_load);
            }
        }
        Ok(())
    }

    /// `fit_rows` changes no barrier, access or byte count the verifier
    /// reads: it counts a fitted load's bytes as a full box's, as the
    /// `expect_tx` before it does.
    fn preserves_barriers(&self) -> bool {
        true
    }

    fn statistics(&self) -> Vec<Statistic> {
        vec![Statistic { name: "loads-fitted", description: "TMA loads whose boxes stop at the tensor's rows", value: self.fitted }]
    }
}

/// The buffer a row window (`nv.smem_rows`) is cut from, or `buffer` itself.
fn root_buffer(body: &Body, mut buffer: Value) -> Value {
    while let Some(rows) = body.defining_op(buffer).and_then(|op| SmemRows::of(body, op)) {
        buffer = rows.buffer(body);
    }
    buffer
}

/// Each buffer some op reads, and whether every read is a wgmma's K-major
/// operand (rows of the buffer are rows or columns of the result; columns
/// only where `columns_combined` is false). TMA loads write buffers and row
/// windows only name them: neither counts.
fn row_safe_buffers(body: &Body, ops: &[Op], columns_combined: bool) -> HashMap<Value, bool> {
    let mut safe: HashMap<Value, bool> = HashMap::new();
    let mut read = |buffer: Value, k_major: bool| {
        *safe.entry(root_buffer(body, buffer)).or_insert(true) &= k_major;
    };
    for &op in ops {
        match body.opcode(op) {
            Opcode::NvTmaLoad | Opcode::NvTmaPrefetch | Opcode::NvSmemRows => {}
            Opcode::NvWgmma => {
                let mma = Wgmma::of(body, op).expect("matched");
                let a = mma.a(body);
                if body.value_type(a).as_smem().is_some() {
                    read(a, !mma.transpose_a(body));
                }
                read(mma.b(body), mma.transpose_b(body) && !columns_combined);
            }
            _ => {
                for &v in &body.ops[op].operands {
                    if body.value_type(v).as_smem().is_some() {
                        read(v, false);
                    }
                }
            }
        }
    }
    safe
}
