//! `tile-stream-k{order=reversed|in-order}`: the CTAs of a persistent loop
//! over output tiles (`tile-persistent`) share the tiles of its partial
//! last wave evenly, by K iterations instead of whole tiles, so that no SM
//! idles at the end (CUTLASS's stream-K, after data-parallel waves).
//!
//! With G CTAs, T tiles and kt K iterations a tile, the `T / G` full waves
//! stay whole tiles, handed out as before (tile c + i * G to CTA c). The
//! last `T mod G` tiles form `sk = (T mod G) * kt` iterations in tile
//! order, and CTA c runs the contiguous range [c * P, (c + 1) * P) of them,
//! P = ceil(sk / G): every CTA ends at about the same time. (Spreading one
//! more wave over the CTAs, as a range of P >= kt would, put twice a
//! wave's operands in flight, and those tiles ran far slower;
//! measured: docs/evidence.md, stream_k.rs, module documentation.)
//!
//! A tile is then split between consecutive CTAs, each running one piece
//! of it. Each CTA runs its pieces in the order `order` gives
//! ([`PieceOrder`]), and the piece it runs last makes it the tile's owner:
//! in order, the piece that starts the tile; reversed, the one that ends it.
//! Every other piece of the tile is the one its CTA c' runs first; c' parks
//! that partial accumulator in workspace slot c' (`tile.park_partial`) and
//! stores nothing. The owner adds the parked tiles of the tile's other
//! CTAs in the order of their index (`tile.add_parked`, which waits until
//! the slot is full) and stores the sum, so runs agree bit for bit. Each
//! wait is for a piece its CTA ran first; it relies on every CTA of the grid
//! being resident at once, as a persistent grid of one CTA per SM is.
//!
//! The pass pays where the last wave is thin: where it is nearly full, the
//! pieces' spread K offsets cut the L2 hits on the shared operands (in
//! order), or the hand-over costs what the fuller wave saves (reversed)
//! (measured: docs/evidence.md, stream_k.rs, module documentation; config
//! selection's `stream_k_for` says when it takes the pass).
//!
//! The pass drops `tile-persistent`'s `wave_tile`, so the launcher starts
//! a CTA on every SM: the shares are even over the whole device.
//!
//! The loop over tiles becomes a loop over the CTA's work units: its
//! whole tiles, then its pieces, each a tile and a range of its K loop
//! (`crate::k_range`). A grid wider than the workspace's [`PARK_SLOTS`]
//! slots runs every tile whole.

use crate::config::ConfigEntries;
use crate::hopper::counting::trip_count;
use crate::hopper::schedule::loop_block;
use crate::hopper::wgmma::next_op;
use crate::selection::PieceOrder;
use crate::k_range::{find_k_loop, guard_stores, restrict_k_loop, top_level_stores};
use crate::options::{OptionKind, OptionSpec};
use crate::phase::{Phase, PhaseRule};
use crate::pass::PassInfo;
use crate::pass::{op_error, Pass};
use tilec_dialects::ir::{Attribute, Attributes, Body, Builder, ElemType, InsertPoint, Op, Type, Value};
use tilec_dialects::tile::reduce::PARK_SLOTS;
use tilec_dialects::tile::{
    AddParked, Addi, BlockId, Ceildivsi, Cmpi, Divsi, For, If, Maxsi, Minsi, Muli, NumBlocks, ParkPartial, Select, Store, Subi, Yield,
};
use tilec_dialects::{Diagnostic, Function};

/// `tile-stream-k`'s registration: name, options, phases and constructor.
pub const INFO: PassInfo = PassInfo {
    name: "tile-stream-k",
    summary: "Share the last waves of a persistent loop over tiles between its CTAs by K iterations, handing partial tiles over through a workspace",
    options: &[OptionSpec {
        name: "order",
        kind: OptionKind::Enum(PieceOrder::WORDS),
        default: "reversed",
        help: "the order in which a CTA runs its pieces: reversed (its K offsets stay in step with the other CTAs') or in-order (default: tile.config's stream_k)",
    }],
    phases: PhaseRule {
        needs: Phase::TileLayouts..=Phase::TileLayouts,
        leaves: None,
        reason: "it rewrites the loop over tiles that tile-persistent makes, with the K loop's bounds hoisted out of it by tile-licm, and the K loop's schedule is built on the narrowed bounds (run it after tile-persistent and tile-licm, before tile-warp-specialize or tile-pipeline)",
    },
    create: |options| Box::new(StreamK { order: PieceOrder::parse(options.word("order")), from_config: !options.given("order") }),
};

/// The `tile-stream-k` pass with its options resolved.
pub struct StreamK {
    order: PieceOrder,
    /// Whether `order` was left out, so `tile.config`'s `stream_k` decides.
    from_config: bool,
}

impl Pass for StreamK {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn run(&mut self, func: &mut Function) -> Result<(), Diagnostic> {
        if let Some(order) = ConfigEntries::of(func)?.stream_k.filter(|_| self.from_config) {
            self.order = order;
        }
        if func.attrs.get("grid").and_then(Attribute::as_str) != Some("sms") {
            return Err(Diagnostic::error(func.loc.clone(), "tile-stream-k needs a persistent loop over tiles (run tile-persistent first)"));
        }
        for (attr, why) in [("cluster_along", "the CTAs of a cluster walk runs of tiles"), ("cluster_dims", "a tile's CTAs form a cluster")] {
            if func.attrs.get(attr).is_some() {
                return Err(Diagnostic::error(func.loc.clone(), format!("tile-stream-k needs a kernel without '{attr}' ({why})")));
            }
        }
        let entry = func.entry_block();
        let body = &mut func.body;
        let tile_loop = tile_loop(body, entry, func.loc.clone())?;
        let tiles_block = loop_block(body, tile_loop);
        let k_loop = find_k_loop(body, tiles_block, func.loc.clone(), INFO.name)?;
        let bounds = [k_loop.lower_bound(body), k_loop.upper_bound(body), k_loop.step(body)];
        if bounds.iter().any(|&v| body.defined_within(v, tile_loop.op())) {
            return Err(op_error(
                body,
                k_loop.op(),
                "has bounds computed inside the loop over tiles; tile-stream-k needs the same K loop for every tile (run tile-licm first; a masked grouped GEMM's trip count changes with the tile)".into(),
            ));
        }
        match body.ops[k_loop.op()].results[..] {
            [acc] if body.value_type(acc).as_tile().is_some_and(|t| t.elem == ElemType::F32) => {}
            _ => return Err(op_error(body, k_loop.op(), "must carry one value, an f32 accumulator tile, which tile-stream-k hands over between CTAs".into())),
        }
        let stores = top_level_stores(body, tiles_block, INFO.name)?;
        if let Some(&batched) = stores.iter().find(|&&o| Store::of(body, o).is_some_and(|st| body.value_type(st.tensor(body)).as_ref_type().is_some_and(|r| r.shape.len() > 2))) {
            return Err(op_error(body, batched, "stores into a batch of problems (a rank-3 output); tile-stream-k shares the tiles of one GEMM".into()));
        }

        let shares = Shares::build(body, tile_loop, k_loop);
        let unit = Unit::build(body, tile_loop, &shares, self.order);
        restrict_k_loop(body, k_loop, unit.first, unit.iterations, "kt_piece");
        hand_over(body, k_loop, &shares, &unit);
        guard_stores(body, &stores, unit.owns);
        // The last wave is shared by every CTA of the grid: the launcher
        // must start them all, not the fewest that keep whole tiles' waves.
        func.attrs.remove("wave_tile");
        Ok(())
    }
}

/// The loop over tiles `tile-persistent` made: the top-level `tile.for`
/// from the CTA's block id x stepping by the grid's size.
fn tile_loop(body: &Body, entry: tilec_dialects::ir::Block, loc: tilec_dialects::Location) -> Result<For, Diagnostic> {
    let is_grid = |v: Value, dim_of: fn(&Body, Op) -> Option<i64>| body.defining_op(v).and_then(|o| dim_of(body, o)) == Some(0);
    let block_x = |body: &Body, o: Op| BlockId::of(body, o).map(|b| b.dim(body));
    let grid_x = |body: &Body, o: Op| NumBlocks::of(body, o).map(|n| n.dim(body));
    body.blocks[entry]
        .ops
        .iter()
        .filter_map(|&o| For::of(body, o))
        .find(|l| is_grid(l.lower_bound(body), block_x) && is_grid(l.step(body), grid_x))
        .ok_or_else(|| Diagnostic::error(loc, "tile-stream-k needs the loop over tiles tile-persistent makes (from the block id x, stepping by the grid's size)"))
}

/// The shares of work, built before the loop over tiles: the figures of
/// the module doc, named as there.
struct Shares {
    /// The CTA's index c.
    cta: Value,
    /// The grid's size G.
    grid: Value,
    /// K iterations a tile (at least one, so that an empty K still visits
    /// and stores every tile), kt.
    kt: Value,
    /// The K loop's own trip count (zero for an empty K).
    trip: Value,
    /// Tiles run whole, in the first waves.
    dp_tiles: Value,
    /// Whole tiles this CTA runs.
    dp_count: Value,
    /// The stream-K iterations each CTA runs, P.
    share: Value,
    /// This CTA's range of stream-K iterations, [lo, hi).
    lo: Value,
    hi: Value,
    /// The first and the last tile of the stream-K tiles this range touches.
    first_tile: Value,
    last_tile: Value,
}

impl Shares {
    fn build(body: &mut Body, tile_loop: For, k_loop: For) -> Shares {
        let (cta, tiles, grid) = (tile_loop.lower_bound(body), tile_loop.upper_bound(body), tile_loop.step(body));
        let mut b = Builder::new(body, InsertPoint::Before(tile_loop.op()), body.ops[tile_loop.op()].loc.clone());
        let trip = trip_count(&mut b, k_loop);
        let (c0, c1) = (b.index(0), b.index(1));
        let kt = Maxsi::build(&mut b, trip, c1, Attributes::new()).result(b.body);
        let kt = b.name(kt, "kt_per_tile");
        let waves = Divsi::build(&mut b, tiles, grid, Attributes::new()).result(b.body);
        let wave_tiles = Muli::build(&mut b, waves, grid, Attributes::new()).result(b.body);
        let slots = b.index(PARK_SLOTS);
        let fits = Cmpi::build(&mut b, grid, slots, "sle", Attributes::new()).result(b.body);
        let fits = b.name(fits, "workspace_fits");
        let dp_tiles = Select::build(&mut b, fits, wave_tiles, tiles, Attributes::new()).result(b.body);
        let dp_tiles = b.name(dp_tiles, "dp_tiles");
        let left = Subi::build(&mut b, dp_tiles, cta, Attributes::new()).result(b.body);
        let dp_count = Ceildivsi::build(&mut b, left, grid, Attributes::new()).result(b.body);
        let dp_count = Maxsi::build(&mut b, dp_count, c0, Attributes::new()).result(b.body);
        let dp_count = b.name(dp_count, "dp_count");
        let sk_tiles = Subi::build(&mut b, tiles, dp_tiles, Attributes::new()).result(b.body);
        let total = Muli::build(&mut b, sk_tiles, kt, Attributes::new()).result(b.body);
        let total = b.name(total, "sk_iterations");
        let share = Ceildivsi::build(&mut b, total, grid, Attributes::new()).result(b.body);
        let share = Maxsi::build(&mut b, share, c1, Attributes::new()).result(b.body);
        let share = b.name(share, "sk_share");
        let start = Muli::build(&mut b, cta, share, Attributes::new()).result(b.body);
        let lo = Minsi::build(&mut b, start, total, Attributes::new()).result(b.body);
        let lo = b.name(lo, "sk_lo");
        let end = Addi::build(&mut b, lo, share, Attributes::new()).result(b.body);
        let hi = Minsi::build(&mut b, end, total, Attributes::new()).result(b.body);
        let hi = b.name(hi, "sk_hi");
        let first_tile = Divsi::build(&mut b, lo, kt, Attributes::new()).result(b.body);
        let last = Subi::build(&mut b, hi, c1, Attributes::new()).result(b.body);
        let last_tile = Divsi::build(&mut b, last, kt, Attributes::new()).result(b.body);
        let last_tile = b.name(last_tile, "sk_last_tile");
        let span = Subi::build(&mut b, last_tile, first_tile, Attributes::new()).result(b.body);
        let span = Addi::build(&mut b, span, c1, Attributes::new()).result(b.body);
        let some = Cmpi::build(&mut b, lo, hi, "slt", Attributes::new()).result(b.body);
        let sk_units = Select::build(&mut b, some, span, c0, Attributes::new()).result(b.body);
        let units = Addi::build(&mut b, dp_count, sk_units, Attributes::new()).result(b.body);
        let units = b.name(units, "work_units");
        tile_loop.set_lower_bound(body, c0);
        tile_loop.set_upper_bound(body, units);
        tile_loop.set_step(body, c1);
        Shares { cta, grid, kt, trip, dp_tiles, dp_count, share, lo, hi, first_tile, last_tile }
    }
}

/// The work unit the loop's iteration runs, built at the top of its body:
/// its tile (which the body's uses of the old loop variable now read), its
/// range of the tile's K iterations, and its part in the hand-over.
struct Unit {
    /// The first K iteration it runs (0 for a whole tile or a tile's first piece).
    first: Value,
    /// The K iterations it runs.
    iterations: Value,
    /// The piece parks its accumulator for the tile's owner.
    parks: Value,
    /// The piece's CTA owns the tile: it adds the parked pieces and stores it.
    owns: Value,
    /// The CTAs whose parked pieces the owner adds, [from, to), in order;
    /// an empty range for a whole tile or a parked piece.
    partners_from: Value,
    partners_to: Value,
}

impl Unit {
    fn build(body: &mut Body, tile_loop: For, s: &Shares, order: PieceOrder) -> Unit {
        let block = loop_block(body, tile_loop);
        let unit = body.blocks[block].args[0];
        let users: Vec<Op> = body.walk_region(tile_loop.region(body)).into_iter().filter(|&o| body.ops[o].operands.contains(&unit)).collect();
        let top = body.blocks[block].ops[0];
        let mut b = Builder::new(body, InsertPoint::Before(top), body.ops[tile_loop.op()].loc.clone());
        b.name(unit, "unit");
        let (c0, c1) = (b.index(0), b.index(1));
        let whole = Cmpi::build(&mut b, unit, s.dp_count, "slt", Attributes::new()).result(b.body);
        let whole = b.name(whole, "whole_tile");
        let strided = Muli::build(&mut b, unit, s.grid, Attributes::new()).result(b.body);
        let dp_tile = Addi::build(&mut b, s.cta, strided, Attributes::new()).result(b.body);
        let piece = Subi::build(&mut b, unit, s.dp_count, Attributes::new()).result(b.body);
        let sk_tile = match order {
            PieceOrder::InOrder => Addi::build(&mut b, s.first_tile, piece, Attributes::new()).result(b.body),
            PieceOrder::Reversed => Subi::build(&mut b, s.last_tile, piece, Attributes::new()).result(b.body),
        };
        let sk_tile = b.name(sk_tile, "sk_tile");
        let sk_global = Addi::build(&mut b, s.dp_tiles, sk_tile, Attributes::new()).result(b.body);
        let tile = Select::build(&mut b, whole, dp_tile, sk_global, Attributes::new()).result(b.body);
        let tile = b.name(tile, "tile");
        let base = Muli::build(&mut b, sk_tile, s.kt, Attributes::new()).result(b.body);
        let from = Subi::build(&mut b, s.lo, base, Attributes::new()).result(b.body);
        let from = Maxsi::build(&mut b, from, c0, Attributes::new()).result(b.body);
        let to = Subi::build(&mut b, s.hi, base, Attributes::new()).result(b.body);
        let to = Minsi::build(&mut b, to, s.kt, Attributes::new()).result(b.body);
        let first = Select::build(&mut b, whole, c0, from, Attributes::new()).result(b.body);
        let first = b.name(first, "k_first");
        let end = Select::build(&mut b, whole, s.kt, to, Attributes::new()).result(b.body);
        let end = b.name(end, "k_end");
        // The owner runs the piece the CTA runs last: the tile's start in
        // order, its end reversed.
        let (parks, owns) = match order {
            PieceOrder::InOrder => (Cmpi::build(&mut b, first, c0, "sgt", Attributes::new()), Cmpi::build(&mut b, first, c0, "eq", Attributes::new())),
            PieceOrder::Reversed => (Cmpi::build(&mut b, end, s.kt, "slt", Attributes::new()), Cmpi::build(&mut b, end, s.kt, "eq", Attributes::new())),
        };
        let (parks, owns) = (parks.result(b.body), owns.result(b.body));
        let parks = b.name(parks, "parks");
        let owns = b.name(owns, "owns_tile");
        let alone = Select::build(&mut b, whole, whole, parks, Attributes::new()).result(b.body);
        let (partners_from, partners_to) = match order {
            PieceOrder::InOrder => {
                // The CTAs after this one up to the one running the tile's last iteration.
                let next = Addi::build(&mut b, s.cta, c1, Attributes::new()).result(b.body);
                let tile_end = Addi::build(&mut b, base, s.kt, Attributes::new()).result(b.body);
                let last = Subi::build(&mut b, tile_end, c1, Attributes::new()).result(b.body);
                let last_cta = Divsi::build(&mut b, last, s.share, Attributes::new()).result(b.body);
                let past = Addi::build(&mut b, last_cta, c1, Attributes::new()).result(b.body);
                (next, Select::build(&mut b, alone, next, past, Attributes::new()).result(b.body))
            }
            PieceOrder::Reversed => {
                // The CTAs from the one running the tile's first iteration up to this one.
                let first_cta = Divsi::build(&mut b, base, s.share, Attributes::new()).result(b.body);
                (Select::build(&mut b, alone, s.cta, first_cta, Attributes::new()).result(b.body), s.cta)
            }
        };
        let partners_from = b.name(partners_from, "partners_from");
        let partners_to = b.name(partners_to, "partners_to");
        let ran = Minsi::build(&mut b, end, s.trip, Attributes::new()).result(b.body);
        let iterations = Subi::build(&mut b, ran, first, Attributes::new()).result(b.body);
        let iterations = Maxsi::build(&mut b, iterations, c0, Attributes::new()).result(b.body);
        let iterations = b.name(iterations, "k_iterations");
        for op in users {
            for operand in &mut body.ops[op].operands {
                if *operand == unit {
                    *operand = tile;
                }
            }
        }
        Unit { first, iterations, parks, owns, partners_from, partners_to }
    }
}

/// After the K loop: a piece that does not own its tile parks the
/// accumulator in slot c; the tile's owner adds the pieces its partners
/// parked, in the order of their index, and the sum replaces the
/// accumulator in what follows (the stores).
fn hand_over(body: &mut Body, k_loop: For, s: &Shares, unit: &Unit) {
    let loc = body.ops[k_loop.op()].loc.clone();
    let tiles_region = body.blocks[body.ops[k_loop.op()].parent.expect("attached")].parent.expect("in a region");
    let acc = body.ops[k_loop.op()].results[0];
    let after = next_op(body, k_loop.op());
    let mut b = Builder::new(body, InsertPoint::Before(after), loc.clone());
    let park = If::build(&mut b, unit.parks, Attributes::new()).op();
    let (_, parked) = b.body.add_region(park, &[]);
    let mut p = Builder::new(body, InsertPoint::End(parked), loc.clone());
    let park_op = ParkPartial::build(&mut p, acc, s.cta, Attributes::new()).op();
    Yield::build(&mut p, &[], Attributes::new());
    let mut b = Builder::new(body, InsertPoint::Before(after), loc.clone());
    let c1 = b.index(1);
    let ty = b.body.value_type(acc).clone();
    let partners = For::build(&mut b, unit.partners_from, unit.partners_to, c1, &[acc], &[ty.clone()], Attributes::new());
    let (_, partner_block) = b.body.add_region(partners.op(), &[Type::INDEX, ty]);
    let (partner, running) = (b.body.blocks[partner_block].args[0], b.body.blocks[partner_block].args[1]);
    b.name(partner, "partner");
    b.name(running, "running");
    let mut l = Builder::new(body, InsertPoint::End(partner_block), loc);
    let added = AddParked::build(&mut l, running, partner, Attributes::new()).result(l.body);
    Yield::build(&mut l, &[added], Attributes::new());
    let total = body.ops[partners.op()].results[0];
    body.values[total].name_hint = Some("whole_sum".into());
    for op in body.walk_region(tiles_region) {
        if op == partners.op() || op == park_op || op == k_loop.op() {
            continue;
        }
        for operand in &mut body.ops[op].operands {
            if *operand == acc {
                *operand = total;
            }
        }
    }
}
