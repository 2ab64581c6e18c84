//! Config selection's candidate space and policies, as pure functions: a
//! problem shape and a machine in, candidate configurations ranked best first
//! out, each with the figures that ranked it (waves, last-wave utilisation,
//! shared memory, stages) and the reason it stands where it does. The cost
//! model (`cost_model`) orders them and the alternatives by predicted time;
//! `tile-select-config` (transforms/select_config.rs) binds the winner into
//! the IR.
//!
//! How candidates are made ([`rank`](fn@rank), in rank.rs): every tile shape
//! ([`BLOCK_MS`] by every multiple of [`BLOCK_N_STEP`] up to
//! [`MAX_BLOCK_N`], tiles.rs) whose FP32 accumulators fit a warpgroup's
//! registers, or two warpgroups' ([`AccumulatorRegisters`], problem.rs),
//! becomes a plain-pipeline candidate (forms.rs, `tile_candidate`) with the
//! most stages that fit shared memory ([`SmemLayout`], smem.rs), its
//! block-scaled scales staged or prefetched (scales.rs) and its waves over
//! the SMs (waves.rs). They are ordered by fewest waves, fullest last wave,
//! least padded work, widest N (waves.rs, `compare`). Named policies then
//! reshape the ranking, each in a file of its own with the reasons for it
//! and a unit test:
//!
//! - tile shapes: `promotes_by_row_blocks` (tiles.rs: row-block tiles ranked
//!   last unless block M is pinned), `block_n_across_scale_blocks`,
//!   `spans_few_scale_blocks` and `promotion_work` (scale_widths.rs: a
//!   block-scaled dot's width across B's scale blocks);
//! - co-resident CTAs (waves.rs, `with_waves`) and pairs of block-scaled
//!   CTAs on an SM (pairs.rs, `one_wave_of_pairs`);
//! - stages (smem.rs): `SmemLayout::most_stages` and `buffers_filled`;
//! - scales (scales.rs): `stages_and_scales`; resident scales
//!   (resident.rs): `prefers_resident_scales`;
//! - schedule (schedule.rs): `prefers_warp_specialized`,
//!   `two_consumer_tile`, `warp_specialized`; ping-pong consumers
//!   (ping_pong.rs): `prefers_ping_pong`, `ping_pong`;
//! - epilogue: `epilogue_for` (epilogue.rs: the TMA store where it can),
//!   `direct_stores` and `chunked_epilogue` (epilogue_forms.rs);
//! - the SMs a grid takes (waves.rs): `with_waves`, `persistent_sms`;
//! - clusters (clusters.rs): `cluster_for`, `prefers_clusters`;
//! - split-K (split_k.rs): `split_k`, `paired_split_k`;
//! - tile order (raster.rs): `raster_group_for`;
//! - deep pairs (deep_pairs.rs): `deep_paired_rows`;
//! - tall shared tiles (tall_tiles.rs): `prefers_tall_shared_tiles`;
//! - stream-K (stream_k.rs): `stream_k_for`;
//! - the deferred epilogue (deferred_epilogue.rs): `deferred_epilogue`,
//!   `takes_deferred_epilogue`;
//! - whole-width promotion: a block-scaled tile's K block goes out as one
//!   wgmma group as wide as the tile, promoted once it completes, while the
//!   other consumer's group keeps the tensor cores busy; column halves
//!   (`mma_n`) stay a knob of `tile.config` and `tile-assign-layouts`,
//!   which [`Config`] does not carry (candidate.rs).
//!
//! A policy's other forms of a candidate are built as the ranked ones are
//! (forms.rs, `rescheduled`). [`alternatives`](fn@alternatives)
//! (alternatives.rs) adds the forms the cost model weighs besides the
//! ranked ones (splits through a workspace, stream-K widths, ping-pong
//! beside an epilogue, two consumers sharing columns, column_halves.rs);
//! reasons.rs says why each candidate stands where it does, and checks.rs
//! refuses shapes and pins the passes cannot build. The measurements behind
//! each policy are in docs/evidence.md, under its file and name.

mod alternatives;
mod candidate;
mod checks;
mod clusters;
mod column_halves;
mod deep_pairs;
mod deferred_epilogue;
mod epilogue;
mod epilogue_forms;
mod forms;
mod pairs;
mod ping_pong;
mod problem;
mod rank;
mod raster;
mod reasons;
mod resident;
mod scale_widths;
mod scales;
mod schedule;
mod smem;
mod split_k;
mod stream_k;
mod swap;
mod tall_tiles;
#[cfg(test)]
mod testing;
mod tiles;
mod waves;

pub use alternatives::alternatives;
pub use candidate::{Candidate, Config, Epilogue, PieceOrder, Pins, Schedule, Scales, SplitReduce};
pub use checks::{check_pin, check_pins, check_shape};
pub use clusters::clustered_alternatives;
pub use problem::{AccumulatorRegisters, Machine, Precision, Problem};
pub(crate) use problem::ceil_div;
pub use rank::{choose, rank};
pub use resident::{prefers_resident_scales, with_resident_scales, RESIDENT_MIN_K_BLOCKS};
pub use smem::{SmemLayout, MAX_STAGES, STAGES_LIMIT};
pub use swap::weighs_swapped;
pub use tiles::{BLOCK_MS, BLOCK_N_STEP, MAX_BLOCK_N};
pub use waves::figures;
