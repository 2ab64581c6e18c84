//! `tile-rasterize{group=G}`: one CTA per output tile still, but the grid
//! becomes one-dimensional and each CTA finds its tile in grouped order
//! (`crate::tile_order`): G tiles down M, then across N. The hardware starts
//! CTAs in the order of their ids, so the CTAs running at once cover a
//! G-row band of tiles instead of every row of a column or two: at
//! 8192^3 with 128x256 tiles a wave of 132 CTAs reads 86 MB of A and B
//! instead of 142 MB. The function gets `raster_group = G`, from which the
//! lowering writes the manifest's grid rule (`tiles` with `group_m`). A
//! batch over grid z (a masked grouped GEMM's experts) moves to grid y,
//! where the launcher puts it for such a grid.
//!
//! A persistent kernel (`grid = "sms"`) orders its tiles itself and is left
//! alone; so is a kernel whose clusters pair neighbouring tiles along x or
//! y, which a one-dimensional order would split (split-K's clusters along z
//! stay whole).

use crate::config::{in_option_range, ConfigEntries};
use crate::options::{OptionKind, OptionSpec};
use crate::phase::{Phase, PhaseRule};
use crate::pass::PassInfo;
use crate::tile_order::{grouped_coords, OutputTiles, TileOrder};
use crate::pass::Pass;
use tilec_dialects::ir::{Attribute, Attributes, Builder, ElemType, InsertPoint};
use tilec_dialects::tile::BlockId;
use tilec_dialects::{Diagnostic, Function};

/// The most tile rows one group holds.
const MAX_GROUP: i64 = 64;

/// `tile-rasterize`'s registration: name, options, phases and constructor.
pub const INFO: PassInfo = PassInfo {
    name: "tile-rasterize",
    summary: "Give each CTA of a one-dimensional grid its output tile in grouped (L2-friendly) order",
    options: &[OptionSpec {
        name: "group",
        kind: OptionKind::Int { min: 0, max: MAX_GROUP },
        default: "0",
        help: "tiles along M in one rasterisation group (0: tile.config's raster_group; none keeps the two-dimensional grid)",
    }],
    phases: PhaseRule { needs: Phase::Tile..=Phase::TileLayouts, leaves: None, reason: "it rewrites the block ids the loads and stores are indexed by, before their schedule copies them (run it before tile-pipeline)" },
    create: |options| Box::new(Rasterize { group: options.int("group") }),
};

/// The `tile-rasterize` pass with its options resolved.
pub struct Rasterize {
    group: i64,
}

impl Pass for Rasterize {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn run(&mut self, func: &mut Function) -> Result<(), Diagnostic> {
        let group = if self.group > 0 { self.group } else { in_option_range(func, &INFO, "group", "raster_group", ConfigEntries::of(func)?.raster_group)?.unwrap_or(0) };
        if group == 0 || func.attrs.get("grid").is_some() || func.attrs.get("raster_group").is_some() {
            return Ok(());
        }
        if let Some(Attribute::Array(dims)) = func.attrs.get("cluster_dims") {
            if dims.iter().take(2).any(|d| d.as_int() != Some(1)) {
                return Err(Diagnostic::error(func.loc.clone(), "tile-rasterize: a cluster along grid x or y pairs neighbouring tiles, which a one-dimensional tile order would split"));
            }
        }
        let tiles = OutputTiles::find(INFO.name, "to rasterise", func)?;
        let OutputTiles { bid_m, bid_n, bid_z, pid_m, pid_n, rank, .. } = tiles;
        let body = &mut func.body;
        let loc = body.ops[bid_m].loc.clone();
        let mut b = Builder::new(body, InsertPoint::Before(bid_m), loc);
        let tile = BlockId::build(&mut b, 0, Attributes::new()).result(b.body);
        let tile = b.name(tile, "tile");
        let (tiles_m, tiles_n) = tiles.counts(&mut b);
        let (m, n) = grouped_coords(&mut b, tile, tiles_m, tiles_n, group, TileOrder::Grouped);
        body.replace_all_uses(func.region, pid_m, m);
        body.replace_all_uses(func.region, pid_n, n);
        body.remove_op(bid_m);
        body.remove_op(bid_n);
        // A batch index (the output's leading dimension) follows the launcher
        // to grid y; split-K's z, a cluster dimension, stays.
        if let Some(z) = bid_z.filter(|_| rank == 3) {
            let mut b = Builder::new(body, InsertPoint::Before(z), body.ops[z].loc.clone());
            let batch = BlockId::build(&mut b, 1, Attributes::new()).result(b.body);
            let old = body.result(z, 0);
            body.values[batch].name_hint = body.values[old].name_hint.clone();
            body.replace_all_uses(func.region, old, batch);
            body.remove_op(z);
        }
        func.attrs.set("raster_group", Attribute::Int(group, ElemType::I64));
        Ok(())
    }
}
