//! Staging, for every pass that stages tiles through shared memory
//! (`tile-lower-to-nv`, `tile-pipeline`, `tile-warp-specialize`):
//! recognising staged loads (by TMA) and narrow loads (a block-scaled dot's
//! scales, which threads read back from a narrow buffer), allocating
//! buffers and barriers within the shared-memory budget, issuing one
//! stage's loads, reading the narrow tiles back, and removing the loads
//! they replace.
//!
//! A narrow tile that is a column of a column-major tensor (row scales
//! stored M-major) is one run of memory: TMA loads it as one flat box with
//! the stage's other boxes, its bytes in the stage's one `expect_tx`. The
//! box starts at the 16-byte boundary at or before the column (TMA's
//! alignment; a column of a tensor whose rows are not a multiple of four
//! starts between two), so it holds [`flat_box_rows_of`] rows, and the read
//! takes the tile from `nv.run_offset` rows in. Any other narrow tile is
//! copied by the copying warp's `cp.async`, each lane arriving on the same
//! barrier. One copy of a stage's row scales, instead of 32 lanes' copies
//! and arrivals, made the block-scaled FP8 kernels faster (measured:
//! docs/evidence.md, hopper/staging.rs, module documentation).

use crate::config::{record_built, ConfigEntries};
use crate::selection::{ceil_div, Scales};
use crate::pass::op_error;
use crate::options::{OptionKind, OptionSpec, PassOptions};
use std::collections::{HashMap, HashSet};
use tilec_dialects::ir::{Attribute, Attributes, Body, Builder, ElemType, EntityRef, InsertPoint, Op, Region, SmemType, Type, Value};
use tilec_dialects::nv::memory::{copy_async_fault, flat_box_rows_of, COPY_ARRIVALS, MAX_TMA_BOX};
use tilec_dialects::nv::{AllocMbarriers, AllocSmem, CopyAsync, LoadShared, MbarrierExpectTx, RunOffset, SmemRows, TmaLoad};
use tilec_dialects::tile::{Addi, Load, Muli};
use tilec_dialects::{Diagnostic, Function, Layout};

/// Shared memory one CTA may use on sm_90 (227 KiB), the limit the runtime
/// checks a manifest against.
pub const SMEM_BUDGET_BYTES: i64 = tilec_target::Target::DEFAULT.smem_per_cta_bytes as i64;

/// A `tile.load` whose result the layout pass put in shared memory.
pub fn is_staged_load(body: &Body, op: Op) -> bool {
    Load::of(body, op).is_some_and(|load| {
        matches!(body.value_type(load.result(body)).as_tile().and_then(|t| t.layout.as_ref()), Some(Layout::NvmmaShared { .. }))
    })
}

/// Element coordinates of a tile access: tile coordinates times the tile's
/// extent in each dimension. A tile of lower rank than its tensor has
/// extent 1 in the leading dimensions: their coordinates are elements.
pub fn element_coords(b: &mut Builder<'_>, tile_coords: &[Value], shape: &[i64]) -> Vec<Value> {
    let leading = tile_coords.len() - shape.len();
    let mut coords = tile_coords[..leading].to_vec();
    coords.extend(tile_coords[leading..].iter().zip(shape).map(|(&c, &extent)| {
        let e = b.index(extent);
        Muli::build(b, c, e, Attributes::new()).result(b.body)
    }));
    coords
}

/// Element coordinates of `load`'s tile: its indices as they are when it
/// loads at element coordinates (`elements`), else [`element_coords`] of them.
pub fn load_element_coords(b: &mut Builder<'_>, load: Load, indices: &[Value]) -> Vec<Value> {
    if load.elements(b.body) {
        return indices.to_vec();
    }
    let shape = b.body.value_type(load.result(b.body)).as_tile().expect("tile loads load tiles").shape.clone();
    element_coords(b, indices, &shape)
}

/// The op in the function's entry block that contains `op` (or `op` itself).
pub fn outermost_ancestor(body: &Body, op: Op) -> Op {
    body.ancestors(op).last().unwrap_or(op)
}

/// A `tile.load` into registers of a tile narrow enough to be copied by
/// threads (a block-scaled dot's scales): a staged loop copies it into
/// shared memory with its stage (by TMA or `nv.copy_async`) instead of
/// loading it from global memory in the iteration that needs it.
pub fn is_copied_load(body: &Body, op: Op) -> bool {
    Load::of(body, op).is_some_and(|load| {
        body.value_type(load.result(body))
            .as_tile()
            .is_some_and(|t| t.layout.as_ref().is_some_and(|l| !l.is_shared()) && copy_async_fault(t).is_none())
    })
}

/// The `scales` option of the passes that schedule a K loop
/// (`tile-pipeline`, `tile-warp-specialize`).
pub const SCALES_OPTION: OptionSpec = OptionSpec {
    name: "scales",
    kind: OptionKind::Enum(&Scales::WORDS),
    default: "staged",
    help: "block-scaled dots' scales: copied into shared memory with their stage (staged), loaded into registers one iteration ahead (prefetched), or copied a chunk of iterations at a time (resident, tile-pipeline only)",
};

/// The `scales` option as a pass keeps it: where the pipeline asked the
/// scales to wait, or `None` when it left the choice to `tile.config`.
pub fn scales_option(options: &PassOptions) -> Option<Scales> {
    // The option's words are checked when the pipeline is parsed.
    options.given("scales").then(|| Scales::from_word(options.word("scales")).unwrap_or(Scales::Staged))
}

/// Where a K loop's scales wait: as the `scales` option says when the
/// pipeline gave it, else as config selection chose in `tile.config`, else
/// staged (the option's default).
pub fn scale_form(func: &Function, option: Option<Scales>) -> Result<Scales, Diagnostic> {
    let chosen = ConfigEntries::of(func)?.scales.filter(|&s| s != Scales::None);
    Ok(option.or(chosen).unwrap_or(Scales::Staged))
}

/// Writes the `stages` and the `scales` that a K-loop pass's pipeline gave
/// in place of `tile.config`'s entries over them ([`record_built`]); `None`
/// where the pass took the entry.
pub fn record_given(func: &mut Function, stages: Option<i64>, scales: Option<Scales>) {
    if let Some(stages) = stages {
        record_built(func, "stages", Attribute::Int(stages, ElemType::I64));
    }
    if let Some(scales) = scales {
        record_built(func, "scales", Attribute::String(scales.word().into()));
    }
}

/// The K steps of scales a CTA holds at once where they are resident
/// ([`Scales::resident_chunk`]): from the K range a CTA runs at the shape
/// config selection chose for (`tile.config`'s `k`, `block_k` and
/// `splits`), else the longest chunk. A K range longer than the chunk
/// copies the scales again each chunk; one shorter leaves the chunk's end
/// unused.
pub fn resident_chunk(func: &Function) -> Result<i64, Diagnostic> {
    let entries = ConfigEntries::of(func)?;
    let Some(Attribute::Dict(d)) = func.attrs.get("tile.config") else { return Ok(Scales::MAX_RESIDENT_CHUNK) };
    let (Some(k), Some(block_k)) = (d.get_int("k"), entries.block_k) else { return Ok(Scales::MAX_RESIDENT_CHUNK) };
    let splits = entries.splits.unwrap_or(1).max(1);
    Ok(Scales::resident_chunk(ceil_div(ceil_div(k, block_k.max(1)), splits)))
}

/// The unswizzled shared layout: a copied tile's buffer stores it densely.
fn dense_shared() -> Layout {
    Layout::NvmmaShared { swizzle_bytes: 0, transposed: false, padding_elems: 0 }
}

/// The tensor arguments of `func` stored column-major (a column of one is
/// a single run of memory), for [`StagedBuffers::allocate`].
pub fn column_major_tensors(func: &Function) -> HashSet<Value> {
    func.args().iter().enumerate().filter(|&(i, _)| func.is_column_major(i)).map(|(_, &arg)| arg).collect()
}

/// Buffers of `stages` stages for the tiles `loads` produce, and the bytes
/// one stage of all of them takes (what a barrier's `expect_tx` waits for).
pub struct StagedBuffers {
    /// Load result -> its buffer.
    pub buffer_of: HashMap<Value, Value>,
    /// The load results threads read back from a narrow buffer (scales).
    pub narrow: HashSet<Value>,
    /// The narrow ones `nv.copy_async` copies (the others go by TMA).
    pub copied: HashSet<Value>,
    /// Bytes one stage of the TMA-loaded buffers takes: what a stage's `expect_tx` waits for.
    pub stage_bytes: i64,
    /// Bytes one stage of the copied buffers takes.
    pub copied_bytes: i64,
    /// The mbarriers signalling that a stage's loads have landed.
    pub full: Value,
    /// Where the copied scales are resident: the K steps a chunk holds (the
    /// copied buffers' stages) and the barrier each chunk's copies arrive on.
    pub resident: Option<Resident>,
}

/// Scales copied a chunk of K steps at a time ([`Scales::Resident`]).
#[derive(Clone, Copy, Debug)]
pub struct Resident {
    /// K steps a chunk holds.
    pub chunk: i64,
    /// The barriers the chunks' copies arrive on, chunk j on stage
    /// j mod [`RESIDENT_BARRIERS`].
    pub full: Value,
    /// Shared memory the chunk's buffers and their barriers take.
    pub bytes: i64,
}

/// Stages of the resident scales' barrier: chunks alternate between two,
/// so that a chunk's copy and the waits for it name the chunk by its stage
/// and phase as the operand stages do (the barrier verifier tells the
/// first chunk's copy, before the loop, from the later ones by them).
pub const RESIDENT_BARRIERS: i64 = 2;

impl StagedBuffers {
    /// Allocates, at the builder, a `stages`-stage buffer for each of
    /// `loads` (staged loads by TMA, then narrow ones, so that the narrow
    /// buffers leave no gaps between the TMA buffers' aligned ones) and a
    /// full barrier per stage, which each copy arrives on too. A narrow
    /// tile is loaded by TMA where it is a column of one of
    /// `column_major`'s tensors that one flat box can take. With
    /// `resident_chunk`, the tiles threads copy get buffers of that many
    /// K steps instead, and a barrier of their own.
    pub fn allocate(b: &mut Builder<'_>, loads: &[Op], stages: i64, column_major: &HashSet<Value>, resident_chunk: Option<i64>) -> StagedBuffers {
        let mut buffer_of = HashMap::new();
        let (mut narrow, mut copied) = (HashSet::new(), HashSet::new());
        let (mut stage_bytes, mut copied_bytes, mut resident_bytes) = (0, 0, 0);
        let (tma, narrow_loads): (Vec<Op>, Vec<Op>) = loads.iter().partition(|&&l| is_staged_load(b.body, l));
        for (&load, is_narrow) in tma.iter().map(|l| (l, false)).chain(narrow_loads.iter().map(|l| (l, true))) {
            let result = b.body.result(load, 0);
            let mut tile = b.body.value_type(result).as_tile().cloned().expect("staged loads are tiles");
            let tensor = Load::of(b.body, load).expect("staged loads are tile.load").tensor(b.body);
            let flat_rows = if is_narrow { flat_box_rows_of(&tile, column_major.contains(&tensor)) } else { None };
            let by_threads = is_narrow && flat_rows.is_none();
            if is_narrow {
                tile.layout = Some(dense_shared());
                narrow.insert(result);
                match flat_rows {
                    Some(rows) => tile.shape[0] = rows,
                    None => {
                        copied.insert(result);
                    }
                }
            }
            let smem = SmemType { stages: resident_chunk.filter(|_| by_threads).unwrap_or(stages), tile };
            match (by_threads, resident_chunk) {
                (false, _) => stage_bytes += smem.stage_bytes(),
                (true, None) => copied_bytes += smem.stage_bytes(),
                (true, Some(chunk)) => resident_bytes += chunk * smem.stage_bytes(),
            }
            let buf = AllocSmem::build(b, Type::Smem(smem), Attributes::new()).result(b.body);
            let hint = b.body.values[result].name_hint.clone().unwrap_or_else(|| "tile".into());
            b.name(buf, &format!("{hint}_smem"));
            buffer_of.insert(result, buf);
        }
        let copy_arrivals = COPY_ARRIVALS * copied.len() as i64;
        let arrivals = 1 + if resident_chunk.is_some() { 0 } else { copy_arrivals };
        let full = AllocMbarriers::build(b, Type::MBarrier(stages), arrivals, Attributes::new()).result(b.body);
        b.name(full, "full");
        let resident = resident_chunk.filter(|_| !copied.is_empty()).map(|chunk| {
            let full = AllocMbarriers::build(b, Type::MBarrier(RESIDENT_BARRIERS), copy_arrivals, Attributes::new()).result(b.body);
            Resident { chunk, full: b.name(full, "scales_full"), bytes: resident_bytes + 8 * RESIDENT_BARRIERS }
        });
        StagedBuffers { buffer_of, narrow, copied, stage_bytes, copied_bytes, full, resident }
    }

    /// Errors at `at` when `stages` stages of these buffers, with
    /// `barriers` mbarriers of 8 bytes per stage (and the resident scales'
    /// buffers beside them), exceed the budget; the error says how many
    /// stages fit.
    pub fn check_budget(&self, body: &Body, at: Op, stages: i64, barriers: i64) -> Result<(), Diagnostic> {
        let per_stage = self.stage_bytes + self.copied_bytes + 8 * barriers;
        let resident = self.resident.map_or(0, |r| r.bytes);
        let total = stages * per_stage + resident;
        if total <= SMEM_BUDGET_BYTES {
            return Ok(());
        }
        let fit = (SMEM_BUDGET_BYTES - resident).max(0) / per_stage;
        Err(op_error(
            body,
            at,
            format!(
                "{stages} stages of {} bytes need {total} bytes of shared memory, over the {SMEM_BUDGET_BYTES}-byte budget of sm_90; at most {fit} stage(s) fit",
                self.stage_bytes + self.copied_bytes
            ),
        ))
    }

    /// The same buffers, looked up by the results of `clones` (copies of
    /// `loads` in another region).
    pub fn rekeyed(&self, body: &Body, loads: &[Op], clones: &[Op]) -> StagedBuffers {
        let buffer_of = loads
            .iter()
            .zip(clones)
            .map(|(&l, &c)| (body.result(c, 0), self.buffer_of[&body.result(l, 0)]))
            .collect();
        let clones_of = |set: &HashSet<Value>| -> HashSet<Value> {
            loads.iter().zip(clones).filter(|(&l, _)| set.contains(&body.result(l, 0))).map(|(_, &c)| body.result(c, 0)).collect()
        };
        let (narrow, copied) = (clones_of(&self.narrow), clones_of(&self.copied));
        StagedBuffers { buffer_of, narrow, copied, stage_bytes: self.stage_bytes, copied_bytes: self.copied_bytes, full: self.full, resident: self.resident }
    }

    /// Arms `stage`'s barrier with one stage's bytes and issues the TMA loads
    /// and copies of `loads`, whose tile coordinates are `coords[i]`;
    /// resident scales are copied by [`StagedBuffers::issue_resident`].
    pub fn issue(&self, b: &mut Builder<'_>, loads: &[Op], coords: &[Vec<Value>], stage: Value) {
        MbarrierExpectTx::build(b, self.full, stage, self.stage_bytes, Attributes::new());
        for (&load, tile_coords) in loads.iter().zip(coords) {
            let load = Load::of(b.body, load).expect("staged loads are tile.load");
            let (tensor, result) = (load.tensor(b.body), load.result(b.body));
            if self.is_resident(result) {
                continue;
            }
            let element = load_element_coords(b, load, tile_coords);
            let buffer = self.buffer_of[&result];
            if self.copied.contains(&result) {
                CopyAsync::build(b, tensor, &element, buffer, stage, self.full, stage, Attributes::new());
            } else {
                for (window, coords) in tma_boxes(b, buffer, &element) {
                    TmaLoad::build(b, tensor, &coords, window, stage, self.full, stage, Attributes::new());
                }
            }
        }
    }

    /// Whether the tile `result` loads is one of the resident scales.
    fn is_resident(&self, result: Value) -> bool {
        self.resident.is_some() && self.copied.contains(&result)
    }

    /// Copies a chunk of resident scales: for each copied load among
    /// `loads`, the tiles of the chunk's K steps from `coords[i]` (the
    /// first step's tile coordinates) on, one `nv.copy_async` over all
    /// the chunk's stages, arriving on `barrier_stage` of the resident
    /// barrier.
    pub fn issue_resident(&self, b: &mut Builder<'_>, loads: &[Op], coords: &[Vec<Value>], barrier_stage: Value) {
        let resident = self.resident.expect("a resident chunk is copied only where the scales are resident");
        for (&load, tile_coords) in loads.iter().zip(coords) {
            let load = Load::of(b.body, load).expect("staged loads are tile.load");
            let (tensor, result) = (load.tensor(b.body), load.result(b.body));
            if !self.copied.contains(&result) {
                continue;
            }
            let element = load_element_coords(b, load, tile_coords);
            let first = b.index(0);
            let mut attrs = Attributes::new();
            attrs.set("stages", Attribute::Int(resident.chunk, ElemType::I64));
            CopyAsync::build(b, tensor, &element, self.buffer_of[&result], first, resident.full, barrier_stage, attrs);
        }
    }

    /// Replaces each narrow load among `loads` (in `region`) by a read of
    /// `stage` of its buffer (of stage `slot` where the scales are resident);
    /// row scales `share.of` rows tall are read only in the consumer's
    /// `share` of its rows. The read comes where the load was, after the
    /// stage's wait. A flat box's tile is read from `nv.run_offset` rows
    /// into it.
    pub fn read_narrow(&self, body: &mut Body, region: Region, loads: &[Op], stage: Value, slot: Value, share: Option<RowShare>) {
        for &load in loads {
            let result = body.result(load, 0);
            if !self.narrow.contains(&result) {
                continue;
            }
            let mut b = Builder::new(body, InsertPoint::Before(load), body.ops[load].loc.clone());
            let whole = self.buffer_of[&result];
            let mut ty = b.body.value_type(result).as_tile().cloned().expect("narrow loads are tiles");
            // Only row scales divide with the rows; column scales (the
            // swapped GEMM's) are every consumer's whole.
            let along_rows = matches!(ty.layout, Some(Layout::Slice { dim: 1, .. }));
            let share = share.filter(|s| s.of == ty.shape[0] && along_rows);
            let buffer = if self.copied.contains(&result) {
                share.map_or(whole, |s| rows_window(&mut b, whole, s.first, s.rows, "scale_rows"))
            } else {
                run_window(&mut b, load, whole, share)
            };
            ty.shape = b.body.value_type(buffer).as_smem().expect("a buffer").tile.shape.clone();
            let at = if self.is_resident(result) { slot } else { stage };
            let read = LoadShared::build(&mut b, buffer, at, Type::Tile(ty), Attributes::new()).result(b.body);
            body.values[read].name_hint = body.values[result].name_hint.clone();
            body.replace_all_uses(region, result, read);
            body.remove_op(load);
        }
    }
}

/// The TMA boxes that fill a stage of `buffer` from `element`, each a
/// window of the buffer with its element coordinates: the whole buffer, or
/// for a tile taller than a box (B's stage of a tile wider than 256
/// columns) equal windows of whole 8-row swizzle atoms, one box each.
fn tma_boxes(b: &mut Builder<'_>, buffer: Value, element: &[Value]) -> Vec<(Value, Vec<Value>)> {
    let smem = b.body.value_type(buffer).as_smem().expect("a buffer").clone();
    let rows = smem.tile.shape[0];
    let parts = (rows + MAX_TMA_BOX - 1) / MAX_TMA_BOX;
    let transposed = matches!(smem.tile.layout, Some(Layout::NvmmaShared { transposed: true, .. }));
    if parts == 1 || rows % (SWIZZLE_ATOM_ROWS * parts) != 0 || element.len() < 2 || transposed {
        return vec![(buffer, element.to_vec())];
    }
    let part = rows / parts;
    let at = element.len() - 2;
    (0..parts)
        .map(|p| {
            let first = b.index(p * part);
            let window = rows_window(b, buffer, first, part, "box");
            let mut coords = element.to_vec();
            coords[at] = Addi::build(b, coords[at], first, Attributes::new()).result(b.body);
            (window, coords)
        })
        .collect()
}

/// Rows of a shared-memory swizzle atom: a window must start on one.
const SWIZZLE_ATOM_ROWS: i64 = 8;

/// A consumer's share of the tiles as tall as the CTA's: `rows` rows from
/// row `first` (each of two consumers sharing a tile reads its half).
#[derive(Clone, Copy, Debug)]
pub struct RowShare {
    /// The share's first row (computed from the consumer's index).
    pub first: Value,
    /// Rows in the share.
    pub rows: i64,
    /// The height of the tiles that are shared: the CTA tile's BLOCK_M.
    pub of: i64,
}

/// Rows `[row, row + rows)` of every stage of `buffer`, named `name`.
pub fn rows_window(b: &mut Builder<'_>, buffer: Value, row: Value, rows: i64, name: &str) -> Value {
    let mut smem = b.body.value_type(buffer).as_smem().expect("a buffer").clone();
    smem.tile.shape[0] = rows;
    let window = SmemRows::build(b, buffer, row, Type::Smem(smem), Attributes::new()).result(b.body);
    b.name(window, name)
}

/// The rows of flat-box buffer `whole` that hold the tile `load` reads, or
/// the consumer's `share` of them: `nv.run_offset` rows in.
fn run_window(b: &mut Builder<'_>, load: Op, whole: Value, share: Option<RowShare>) -> Value {
    let load_op = Load::of(b.body, load).expect("staged loads are tile.load");
    let (tensor, indices) = (load_op.tensor(b.body), load_op.indices(b.body).to_vec());
    let coords = load_element_coords(b, load_op, &indices);
    let offset = RunOffset::build(b, tensor, &coords, Attributes::new()).result(b.body);
    let (row, rows) = match share {
        Some(s) => (Addi::build(b, s.first, offset, Attributes::new()).result(b.body), s.rows),
        None => (offset, b.body.value_type(load_op.result(b.body)).as_tile().expect("a tile").shape[0]),
    };
    rows_window(b, whole, row, rows, "run_rows")
}

/// Removes loads whose tiles now come from buffers; a tile still used by
/// another op cannot be staged.
pub fn remove_staged_loads(body: &mut Body, region: Region, loads: &[Op]) -> Result<(), Diagnostic> {
    let uses = body.use_counts(region);
    for &load in loads {
        if uses[body.result(load, 0).index()] > 0 {
            return Err(op_error(body, load, "loads a staged tile that is used by an op other than tile.dot".into()));
        }
        body.remove_op(load);
    }
    Ok(())
}
