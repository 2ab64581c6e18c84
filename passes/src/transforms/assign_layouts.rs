//! `tile-assign-layouts`: gives every tile a layout. Operands of `dot` and
//! `dot_scaled` get NVMMA shared layouts (they are staged through shared
//! memory for wgmma), except an A pinned to the dot-operand layout of the
//! accumulator's MMA layout: it is staged too, then converted to registers
//! for the dot. A block-scaled dot's row scales get the slice of the
//! accumulator's MMA layout (each thread holds the scales of its rows) and
//! its block scales a layout that gives every thread the whole tile;
//! accumulators, and every register tile tied to them through loops and
//! element-wise ops, get the MMA v3 layout. A layout the user pinned is kept
//! when legal (an illegal one is an error saying why), and where it differs
//! from what its producer gives, a `tile.convert_layout` is inserted; a
//! cleanup then removes conversions that convert nothing.

use crate::config::ConfigEntries;
use crate::layout_rules::{instr_shape_k, instr_shape_n, padding_elems, swizzle_bytes, warps_per_cta};
use crate::options::{OptionKind, OptionSpec};
use crate::phase::{Phase, PhaseRule};
use crate::pass::PassInfo;
use crate::pass::{op_error, Pass};
use std::collections::HashMap;
use tilec_dialects::ir::{Attribute, Attributes, Body, Builder, ElemType, EntityRef, InsertPoint, Op, TileType, Type, Value};
use tilec_dialects::registry::Opcode;
use tilec_dialects::tile::{ConvertLayout, Deinterleave, Dot, DotScaled, For, Load, Reduce};
use tilec_dialects::syntax::layout_to_string;
use tilec_dialects::{Diagnostic, Function, Layout};

/// `tile-assign-layouts`'s registration: name, options, phases and constructor.
pub const INFO: PassInfo = PassInfo {
    name: "tile-assign-layouts",
    summary: "Assign NVMMA shared layouts to dot operands and MMA v3 layouts to accumulators",
    options: &[
        OptionSpec {
            name: "num-warps",
            kind: OptionKind::Enum(&["4", "8"]),
            default: "4",
            help: "warps of the consumer when the function has no num_warps attribute",
        },
        OptionSpec {
            name: "mma-n",
            kind: OptionKind::Int { min: 0, max: 256 },
            default: "0",
            help: "wgmma instruction N of the accumulators (a multiple of 8 dividing BLOCK_N); 0 takes tile.config's mma_n, else the widest that fits",
        },
    ],
    phases: PhaseRule { needs: Phase::Tile..=Phase::TileLayouts, leaves: Some(Phase::TileLayouts), reason: "layouts are chosen for tile IR, before its loops are scheduled or lowered" },
    create: |options| Box::new(AssignLayouts { default_warps: options.word("num-warps").parse().expect("enum of numbers"), mma_n: options.int("mma-n") }),
};

/// The `tile-assign-layouts` pass with its options resolved.
pub struct AssignLayouts {
    default_warps: u32,
    /// The wgmma instruction N the accumulators take; 0 for tile.config's
    /// `mma_n` or the widest that fits.
    mma_n: i64,
}

impl Pass for AssignLayouts {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn run(&mut self, func: &mut Function) -> Result<(), Diagnostic> {
        let num_warps = match func.attrs.get_int("num_warps") {
            None => self.default_warps,
            Some(w @ (4 | 8)) => w as u32,
            Some(w) if has_dot(func) => {
                return Err(Diagnostic::error(func.loc.clone(), format!("num_warps must be 4 or 8, found {w}")))
            }
            // Only dots need the warp count: nv-level input keeps its own (a
            // warp-specialised kernel has 12 warps).
            Some(w) => w as u32,
        };
        func.attrs.set("num_warps", Attribute::Int(i64::from(num_warps), ElemType::I64));
        let mma_n = match self.mma_n {
            0 => ConfigEntries::of(func)?.mma_n,
            n => Some(n),
        };
        let body = &mut func.body;
        let classes = RegisterClasses::build(body, func.region);
        // A tile split into column runs takes a wgmma N that divides them.
        let runs = body.walk_region(func.region).into_iter().filter_map(|op| Deinterleave::of(body, op)).map(|d| d.block(body)).min();
        let mut class_layout: HashMap<Value, Layout> = HashMap::new();
        for op in body.walk_region(func.region) {
            let Some((a, b, acc)) = dot_operands(body, op) else { continue };
            let acc_ty = tile_type(body, acc);
            let elem_bits = tile_type(body, a).elem.bits();
            let mma = choose_mma(body, op, &acc_ty, elem_bits, num_warps, mma_n, runs)?;
            if matches!(tile_type(body, a).layout, Some(Layout::DotOperand { .. })) {
                assign_a_registers(body, func.region, op, a, &mma)?;
            } else {
                assign_shared(body, op, a, "A")?;
            }
            assign_shared(body, op, b, "B")?;
            if let Some(scaled) = DotScaled::of(body, op) {
                // Row scales run along the operand's rows: the result's rows
                // for A's, its columns for B's (blocks along the rows).
                let (lines, blocks) = (scaled.row_scales(body), scaled.block_scales(body));
                let (sliced, whose_lines, whose_blocks) = if scaled.blocks_along_rows(body) { (0, "B's scales", "A's scales") } else { (1, "A's scales", "B's scales") };
                assign_scales(body, op, lines, Layout::Slice { dim: sliced, parent: Box::new(mma.clone()) }, whose_lines)?;
                let whole = whole_in_every_thread(&tile_type(body, blocks).shape, num_warps);
                assign_scales(body, op, blocks, whole, whose_blocks)?;
            }
            let root = classes.root(acc);
            if let Some(prev) = class_layout.insert(root, mma.clone()) {
                if prev != mma {
                    return Err(op_error(body, op, "two dots share an accumulator with different MMA layouts".into()));
                }
            }
        }
        apply_register_layouts(body, func.region, &classes, &class_layout);
        remove_redundant_conversions(body, func.region);
        Ok(())
    }
}

fn has_dot(func: &Function) -> bool {
    func.body.walk_region(func.region).iter().any(|&op| dot_operands(&func.body, op).is_some())
}

fn tile_type(body: &Body, v: Value) -> TileType {
    body.value_type(v).as_tile().cloned().expect("the verifier checked dot operands are tiles")
}

/// A, B and the accumulator of a `dot` or `dot_scaled`; `None` for other ops.
fn dot_operands(body: &Body, op: Op) -> Option<(Value, Value, Value)> {
    if let Some(dot) = Dot::of(body, op) {
        return Some((dot.lhs(body), dot.rhs(body), dot.acc(body)));
    }
    DotScaled::of(body, op).map(|dot| (dot.lhs(body), dot.rhs(body), dot.acc(body)))
}

/// The NVMMA shared layout a staged operand gets: the widest swizzle its
/// contiguous rows allow, or padding when none does.
pub fn default_shared_layout(tile: &TileType) -> Layout {
    let (rows, cols) = (tile.shape[0], tile.shape[1]);
    let swizzle = swizzle_bytes(cols, tile.elem.bits(), rows);
    let padding = if swizzle == 0 { padding_elems(cols, tile.elem.bits()) } else { 0 };
    Layout::NvmmaShared { swizzle_bytes: swizzle, transposed: false, padding_elems: padding }
}

fn assign_shared(body: &mut Body, dot: Op, v: Value, what: &str) -> Result<(), Diagnostic> {
    let tile = tile_type(body, v);
    let layout = match &tile.layout {
        None => default_shared_layout(&tile),
        Some(pinned @ Layout::NvmmaShared { swizzle_bytes: s, .. }) => {
            let row_bytes = tile.shape[1] * i64::from(tile.elem.bits()) / 8;
            if !matches!(s, 0 | 32 | 64 | 128) {
                return Err(op_error(body, dot, format!("operand {what}: wgmma cannot read a {s}-byte swizzle (only 0, 32, 64 or 128)")));
            }
            if *s != 0 && row_bytes % i64::from(*s) != 0 {
                return Err(op_error(
                    body,
                    dot,
                    format!("operand {what}: a {s}-byte swizzle does not divide its {row_bytes}-byte rows"),
                ));
            }
            pinned.clone()
        }
        Some(other) => {
            return Err(op_error(
                body,
                dot,
                format!("operand {what} is pinned to '{}', but wgmma reads it from shared memory", layout_to_string(other)),
            ))
        }
    };
    body.values[v].ty = Type::Tile(tile.with_layout(Some(layout)));
    Ok(())
}

/// Gives a block-scaled dot's scales the layout the promotion reads them
/// in; a pinned layout must be that one.
fn assign_scales(body: &mut Body, dot: Op, v: Value, layout: Layout, what: &str) -> Result<(), Diagnostic> {
    let tile = tile_type(body, v);
    match &tile.layout {
        None => {
            body.values[v].ty = Type::Tile(tile.with_layout(Some(layout)));
            Ok(())
        }
        Some(pinned) if *pinned == layout => Ok(()),
        Some(pinned) => Err(op_error(
            body,
            dot,
            format!("{what} are pinned to '{}', but the promotion reads them as '{}'", layout_to_string(pinned), layout_to_string(&layout)),
        )),
    }
}

/// A blocked layout in which every thread holds the whole (small) tile: a
/// dot's per-block scales, one or two per tile, read by every thread.
fn whole_in_every_thread(shape: &[i64], num_warps: u32) -> Layout {
    Layout::Blocked {
        size_per_thread: shape.iter().map(|&d| d as u32).collect(),
        threads_per_warp: vec![1, 32],
        warps_per_cta: vec![1, num_warps],
        order: vec![1, 0],
    }
}

/// Keeps A pinned to a dot-operand layout (wgmma reads A from registers)
/// when the layout is the one wgmma's A fragment has for `mma`. A is still
/// staged through shared memory by TMA: the tile it is loaded as gets the
/// shared layout the rules give (or keeps a legal pinned one), and a
/// `tile.convert_layout` from it to the dot-operand layout feeds the dot.
fn assign_a_registers(body: &mut Body, region: tilec_dialects::Region, dot: Op, a: Value, mma: &Layout) -> Result<(), Diagnostic> {
    let tile = tile_type(body, a);
    let Some(Layout::DotOperand { parent, .. }) = &tile.layout else { unreachable!("checked by the caller") };
    let Some(dot_op) = Dot::of(body, dot) else {
        return Err(op_error(body, dot, "operand A of a block-scaled dot cannot be held in registers".into()));
    };
    if dot_op.transpose_a(body) {
        return Err(op_error(body, dot, "operand A in registers cannot be transposed: ldmatrix reads it K-major".into()));
    }
    tilec_dialects::nv::fragment::check_a_fragment_layout(tile.layout.as_ref(), tile.elem.bits())
        .map_err(|why| op_error(body, dot, format!("operand A is pinned to '{}': {why}", layout_to_string(tile.layout.as_ref().expect("pinned")))))?;
    if **parent != *mma {
        return Err(op_error(
            body,
            dot,
            format!("operand A's dot-operand parent '{}' is not the accumulator's MMA layout '{}'", layout_to_string(parent), layout_to_string(mma)),
        ));
    }
    let def = body.defining_op(a);
    match def.map(|d| body.opcode(d)) {
        // Loaded in registers directly: load to shared memory, then convert.
        Some(Opcode::TileLoad) => {
            let staged = tile.with_layout(Some(default_shared_layout(&tile)));
            convert_after_definition(body, region, a, staged);
            // The conversion took A's name; the staged tile is its shared copy.
            let converted = dot_op.lhs(body);
            body.values[a].name_hint = body.values[converted].name_hint.as_ref().map(|h| format!("{h}_shared"));
            Ok(())
        }
        // Already converted from a loaded tile: stage that tile.
        Some(Opcode::TileConvertLayout) => {
            let input = ConvertLayout::of(body, def.expect("defined")).expect("verified").input(body);
            if body.defining_op(input).is_none_or(|d| Load::of(body, d).is_none()) {
                return Err(op_error(body, dot, "operand A in registers must be converted from a tile.load (wgmma's A is staged through shared memory)".into()));
            }
            assign_shared(body, dot, input, "A")
        }
        _ => Err(op_error(body, dot, "operand A in registers must come from a tile.load (wgmma's A is staged through shared memory)".into())),
    }
}

/// The accumulator's MMA layout: the one pinned on it, else the widest
/// instruction N that fits, or `mma_n` where given (a narrower one: a
/// block-scaled dot then promotes an instruction's columns at a time).
fn choose_mma(body: &Body, dot: Op, acc: &TileType, elem_bits: u32, num_warps: u32, mma_n: Option<i64>, runs: Option<i64>) -> Result<Layout, Diagnostic> {
    let (block_m, block_n) = (acc.shape[0], acc.shape[1]);
    if block_m % 64 != 0 {
        return Err(op_error(body, dot, format!("BLOCK_M ({block_m}) must be a multiple of 64, one warpgroup's wgmma")));
    }
    let k = instr_shape_k(elem_bits);
    if let Some(pinned) = &acc.layout {
        let Layout::Mma { version: 3, instr_shape, .. } = pinned else {
            return Err(op_error(body, dot, format!("the accumulator is pinned to '{}', not a version 3 MMA layout", layout_to_string(pinned))));
        };
        let n = i64::from(instr_shape.get(1).copied().unwrap_or(0));
        if instr_shape.len() != 3 || instr_shape[0] != 16 || instr_shape[2] != k {
            return Err(op_error(body, dot, format!("the pinned MMA instruction shape must be [16, N, {k}]")));
        }
        if n == 0 || n % 8 != 0 || n > 256 || block_n % n != 0 {
            return Err(op_error(body, dot, format!("the pinned instruction N ({n}) must be a multiple of 8, at most 256, dividing BLOCK_N ({block_n})")));
        }
        return Ok(pinned.clone());
    }
    let widest = instr_shape_n(block_m, block_n, num_warps)
        .ok_or_else(|| op_error(body, dot, format!("no wgmma instruction N divides BLOCK_N ({block_n})")))?;
    let widest = match runs {
        None => widest,
        Some(run) => (1..=widest / 8).rev().map(|i| i * 8).find(|&n| block_n % i64::from(n) == 0 && run % i64::from(n) == 0).ok_or_else(|| {
            op_error(body, dot, format!("no wgmma instruction N divides both BLOCK_N ({block_n}) and the {run}-column runs a tile.deinterleave splits"))
        })?,
    };
    let n = match mma_n {
        None => widest,
        Some(n) if n > 0 && n % 8 == 0 && i64::from(widest) % n == 0 => n as u32,
        Some(n) => {
            return Err(op_error(body, dot, format!("the wgmma instruction N {n} (mma_n) must be a multiple of 8 dividing {widest}, the widest that fits BLOCK_N ({block_n}) over the warps")));
        }
    };
    Ok(Layout::Mma { version: 3, warps_per_cta: warps_per_cta(block_m, num_warps).to_vec(), instr_shape: vec![16, n, k] })
}

/// Register tiles that must share one layout: a dot's accumulator and
/// result, a loop's init, body argument, yielded value and result, and the
/// operands and results of element-wise ops and casts (union-find).
struct RegisterClasses {
    parent: HashMap<Value, Value>,
}

impl RegisterClasses {
    fn build(body: &Body, region: tilec_dialects::Region) -> Self {
        let mut classes = RegisterClasses { parent: HashMap::new() };
        for op in body.walk_region(region) {
            if let Some(dot) = Dot::of(body, op) {
                classes.union(dot.acc(body), dot.result(body));
            } else if let Some(dot) = DotScaled::of(body, op) {
                classes.union(dot.acc(body), dot.result(body));
            } else if let Some(for_op) = For::of(body, op) {
                let block = body.entry_block(for_op.region(body));
                let yielded = body.terminator(block).map(|t| body.ops[t].operands.clone()).unwrap_or_default();
                for (i, (&init, &result)) in for_op.inits(body).iter().zip(for_op.results(body)).enumerate() {
                    classes.union(init, result);
                    classes.union(body.blocks[block].args[1 + i], result);
                    if let Some(&y) = yielded.get(i) {
                        classes.union(y, result);
                    }
                }
            } else if let Some(d) = Deinterleave::of(body, op) {
                // The runs keep the input's positions in every thread.
                for result in [d.first(body), d.second(body)] {
                    classes.union(d.input(body), result);
                }
            } else if let Some(r) = Reduce::of(body, op) {
                // Each element's group result sits where the element did.
                classes.union(r.input(body), r.result(body));
            } else if body.ops[op].def.traits.elementwise {
                for &result in &body.ops[op].results {
                    classes.union_tiles(body, &body.ops[op].operands, result);
                }
            }
        }
        classes
    }

    fn root(&self, mut v: Value) -> Value {
        while let Some(&p) = self.parent.get(&v) {
            if p == v {
                break;
            }
            v = p;
        }
        v
    }

    /// Joins `result` with those of `operands` that are tiles.
    fn union_tiles(&mut self, body: &Body, operands: &[Value], result: Value) {
        for &operand in operands {
            if body.value_type(operand).as_tile().is_some() {
                self.union(operand, result);
            }
        }
    }

    fn union(&mut self, a: Value, b: Value) {
        let (ra, rb) = (self.root(a), self.root(b));
        if ra != rb {
            self.parent.insert(ra, rb);
        }
    }
}

/// Gives each register tile its class's layout. A result pinned to another
/// layout keeps it: the op then produces the class layout and a
/// `tile.convert_layout` after it makes the pinned one.
fn apply_register_layouts(
    body: &mut Body,
    region: tilec_dialects::Region,
    classes: &RegisterClasses,
    class_layout: &HashMap<Value, Layout>,
) {
    let mut values: Vec<Value> = Vec::new();
    for op in body.walk_region(region) {
        values.extend(body.ops[op].results.iter().copied());
        for &r in &body.ops[op].regions {
            values.extend(body.blocks[body.entry_block(r)].args.iter().copied());
        }
    }
    for v in values {
        let Some(layout) = class_layout.get(&classes.root(v)) else { continue };
        let Some(tile) = body.value_type(v).as_tile().cloned() else { continue };
        match &tile.layout {
            None => body.values[v].ty = Type::Tile(tile.with_layout(Some(layout.clone()))),
            Some(pinned) if pinned == layout => {}
            Some(_) => convert_after_definition(body, region, v, tile.with_layout(Some(layout.clone()))),
        }
    }
}

/// Retypes op result `v` to `produced` and converts it to its old (pinned)
/// type for every user.
fn convert_after_definition(body: &mut Body, region: tilec_dialects::Region, v: Value, produced: TileType) {
    let Some(def) = body.defining_op(v) else { return };
    let pinned = body.value_type(v).clone();
    let block = body.ops[def].parent.expect("attached");
    let ops = &body.blocks[block].ops;
    let next = ops[ops.iter().position(|&o| o == def).expect("in block") + 1];
    let loc = body.ops[def].loc.clone();
    let mut b = Builder::new(body, InsertPoint::Before(next), loc);
    let convert = ConvertLayout::build(&mut b, v, pinned, Attributes::new());
    let converted = convert.result(body);
    body.replace_uses_except(region, v, converted, convert.op());
    body.values[v].ty = Type::Tile(produced);
    // Users see the pinned value under the name they gave it.
    body.values[converted].name_hint = body.values[v].name_hint.take();
}

/// Removes conversions to the layout a value already has, folds conversion
/// chains into one, and drops conversions left unused.
fn remove_redundant_conversions(body: &mut Body, region: tilec_dialects::Region) {
    for op in body.walk_region(region) {
        let Some(convert) = ConvertLayout::of(body, op).filter(|_| body.ops[op].parent.is_some()) else { continue };
        let mut input = convert.input(body);
        while let Some(inner) = body.defining_op(input).and_then(|d| ConvertLayout::of(body, d)) {
            input = inner.input(body);
        }
        let result = convert.result(body);
        if body.value_type(input) == body.value_type(result) {
            body.replace_all_uses(region, result, input);
            body.remove_op(op);
        } else {
            convert.set_input(body, input);
        }
    }
    let uses = body.use_counts(region);
    for op in body.walk_region(region) {
        if ConvertLayout::of(body, op).is_some_and(|c| uses[c.result(body).index()] == 0) {
            body.remove_op(op);
        }
    }
}
