//! The rules config selection follows, as pure functions: a problem shape and
//! a machine in, candidate configurations ranked best first out, each with
//! the figures that ranked it (waves, last-wave utilisation, shared memory,
//! stages) and the reason it stands where it does. `tile-select-config`
//! (transforms/select_config.rs) binds the winner into the IR.
//!
//! The rules, in order (the measurements behind each are in
//! docs/evidence.md, under "config_rules.rs, rule N"):
//! 1. Tile shapes. Block M is 64, 128 or 256; block N any multiple of 16 up
//!    to 256; the FP32 accumulators fit two warpgroups'
//!    registers: the running result at most 128 a thread (BM * BN <= 2 *
//!    128 * 128) and, with block-scaled FP8's partial product of the m64
//!    row block being promoted (BN / 2 more), at most 192 when each
//!    warpgroup holds one m64 row block (128x192 over two), else 144 (at
//!    168, 256x112 over two spilled). One warpgroup takes
//!    the tile when all of it fits 128 a thread (4 warps, else 8, each
//!    warpgroup an m64 block of rows or more). A
//!    block-scaled tile whose warpgroups each hold more than one m64 block
//!    (256x96 over two) is ranked last, as a warp-specialised
//!    alternative, unless block M is pinned: over a long K it has fewer
//!    stages and each consumer promotes its two blocks in series; it gains
//!    only over a short K. Block K is 128 bytes of K (64 BF16,
//!    128 FP8): one row of the 128-byte swizzle, and FP8's scale
//!    granularity. A
//!    block-scaled dot whose tiles of B need not start a 128-row scale
//!    block (the program gives it the offset into the first) takes block N
//!    128 unless, over more than two waves, the best tile of another width
//!    takes at least 1% less time by waves x tiles an SM runs at once x
//!    tile area: its K loop is then lowered once per offset. Over fewer
//!    than 32 K blocks a width whose tiles span three scale blocks (176,
//!    eight loop copies) is left out: a short K loop does not pay for its
//!    copies, and a width spanning two ran faster there. A wider tile
//!    gains where it covers N in fewer tiles and loses where the narrower
//!    tiles fill more SMs. Where the best 128-wide tile
//!    runs in one wave and tiles half a scale block wide (64 columns,
//!    never across two blocks) would too, with more of them, block N is
//!    64: more CTAs stream B at once (not where the narrower tile would
//!    take a second wave).
//! 2. Fewest waves: ceil(tiles / SMs), where tiles = ceil(M/BM) * ceil(N/BN);
//!    in the plain pipeline, ceil(tiles / (SMs * R)) where R CTAs of the
//!    tile fit one SM's shared memory and registers and make more than two
//!    such waves. Rule 6 fills shared memory unless K is short, so R > 1
//!    mostly means a short K over many tiles, where one CTA's prologue
//!    and epilogue run beside the other's main loop; over two waves the
//!    smaller tile measured slower, hence more than two waves.
//!    Block-scaled FP8 CTAs that are more than the SMs
//!    make one wave where R to an SM hold them all; a pipelined pick over
//!    two waves one to an SM that would make one wave two to an SM, each
//!    with the stages that fit half an SM (at least 3), runs so (one GEMM,
//!    not batched or grouped): so it measured faster, and slower where the
//!    pairs take two or more waves.
//! 3. Fullest last wave: the SMs the last wave keeps busy, tiles - (waves -
//!    1) * SMs * R over R (all SMs when it divides).
//! 4. Least padded work: tiles * BM * BN, the elements computed including
//!    those past M and N.
//! 5. Widest N, then narrowest M: a wider tile re-reads A fewer times.
//! 6. Stages: the most that fit the shared-memory budget, at most 8 (16
//!    under rule 15) and at most the number of K blocks (more buffers than
//!    K blocks never fill), except in a persistent kernel over more than 2
//!    waves of tiles of several K blocks, whose producer fills them with
//!    the next tile's (`buffers_filled`). More than 8 in general measured no
//!    consistent gain at the picks they would change.
//! 7. Schedule: the plain software pipeline; warp specialisation (one or two
//!    consumers, persistent, grouped tile order) is ranked as an alternative,
//!    since with the same tile it measured below the plain pipeline.
//!    Block-scaled FP8 with
//!    a long K (at least 4096, 32 scale blocks) is the exception: there the
//!    warp-specialised tile is the pick, since each block's wgmma is waited
//!    for before its promotion and a second, independent consumer keeps the
//!    tensor cores busy meanwhile, and so is it
//!    over more than 2 waves of tiles, where the persistent producer hides
//!    each tile's prologue behind the last one's work (over 1 or 2 waves
//!    there is too little to hide). A
//!    64-row pick over more than 2 waves grows to 128 rows over two
//!    consumers, each promoting beside the other's wgmma. Over exactly 2
//!    waves a tile of 128 rows goes to two consumers too, a 64-row one
//!    stays pipelined (one consumer has no neighbour to overlap), unless
//!    the K loop's trip count is data (a masked
//!    grouped GEMM, whose tiles past an expert's rows run no K step) over
//!    more than 4 waves of tiles: a persistent CTA's static share of many
//!    tiles then holds data-dependent work, which the tiles grid balances
//!    in hardware. BF16 with at most 32 blocks of K over more
//!    than 2 waves is another, since its TMA-store epilogue overlaps the
//!    next tile's main loop (with a longer K the pipeline's tiles amortise
//!    their prologue and epilogue themselves); so is BF16 over at most 64
//!    K blocks where rule 8's chunks give the warp-specialised tile a
//!    stage more, and whatever K, from 2 waves on, where two
//!    consumers share the tile and store it by TMA: they leave no wgmma
//!    group in flight, so the producer gets each stage back an iteration
//!    sooner. Over at most 8 K blocks the 128x256 tile stays
//!    whole: with rule 8's fourth stage and rule 10's clusters it ran
//!    faster than 128x128 with one consumer. A
//!    tile at most 32 columns wide with a
//!    long K is the last exception: each K step's wgmma (64x16 or 64x32)
//!    is too short for one warpgroup that both waits on it and issues the
//!    next loads, and a dedicated producer hides the issue (64-column
//!    tiles have no such need). Ping-pong consumers (two taking turns at
//!    whole tiles of the best tile one warpgroup holds) are ranked as an
//!    alternative: where a tile two warpgroups share fits, they measured
//!    below it.
//!    Block-scaled FP8 at most 128 rows tall with at least 12 K blocks,
//!    whose pick is warp-specialised over at least 2 waves, takes them
//!    instead: one consumer's promotion overlaps the other's tile; with a
//!    short K or over one wave, where a CTA has one tile, there is nothing
//!    to take turns at.
//! 8. Epilogue: the TMA store (measured faster in both schedules) when
//!    C's rows are
//!    16-byte aligned (N * 2 bytes a multiple of 16), except in a
//!    warp-specialised tile at most 32 columns wide, where the store of a
//!    few kilobytes is no work to hide and its round trip through shared
//!    memory costs more than it saves; direct global stores otherwise.
//!    The pick with direct stores and the stage its output tile took is
//!    ranked as an alternative. A BF16 warp-specialised tile whose output,
//!    stored through a buffer half as wide in two chunks, leaves room for
//!    one more stage takes it: its consumers otherwise wait for data.
//! 9. SMs: the fewest that keep the wave count, ceil(tiles / waves); for a
//!    persistent candidate in 2-CTA clusters, counted in tile pairs, since
//!    the launcher starts whole clusters (the manifest's `wave_tile`).
//! 10. Clusters: pairs of CTAs that share an operand tile and load it once
//!     (TMA multicast), only where it is legal and there is more than one
//!     wave, as DeepGEMM does: along M (sharing B) when the tiles along M
//!     are even, else along N (sharing A) when those are, preferring the
//!     pair that shares the larger operand tile; an odd count would leave
//!     half a pair idle. The pick with clusters is ranked as an alternative,
//!     not picked: on the shapes of more than one wave it measured no
//!     better, on balance, than the same kernel without, except a BF16 pick
//!     that rule 7 warp-specialises for a short K over many waves, which
//!     takes its clusters (faster in every run), and
//!     a block-scaled FP8 pick that two
//!     consumers share over at least 32 K blocks and 3 waves (clusters
//!     along M, B multicast), which gained on average; with 16 K blocks or
//!     fewer such clusters lost.
//! 11. Scales (block-scaled FP8): copied into shared memory with their
//!     stage and read from there after its wait, unless in the plain
//!     pipeline that costs more than one stage or a CTA an SM holds at
//!     once; then each thread loads its scales from global memory one K
//!     step ahead. Staging was faster wherever it cost no stage, slower
//!     where it cost a pipeline a stage or an SM its second CTA; with A's
//!     scales M-major a prefetched load misses L1 every K block, so giving
//!     up one stage for staging wins. Staged
//!     M-major row scales are a
//!     flat TMA box of 32 rows more than the tile's (128 bytes a stage),
//!     which [`SmemLayout::smem_bytes`] counts.
//! 12. Split-K: where rule 7 would run a tile at most 32 columns wide over
//!     a long K in a single wave, two CTAs of a cluster share a tile twice
//!     as large instead, each running half the K loop in the plain
//!     pipeline, and sum their partial tiles in shared memory
//!     (`tile-split-k`): as many CTAs, each with half the K steps and twice
//!     the work per step. The tile grows along M where the pick's tiles
//!     cover M in more than one row without padding, else along N. More
//!     splits of larger tiles ran slower than two.
//!     Where the best tile leaves more than half the SMs idle (block-scaled
//!     FP8's 64x128 at M = 64 and 128), the same tile is split over the
//!     most CTAs, 2 to 4, that fit (clusters of 3 and 4 on at most 4/5 of
//!     the SMs: each cluster must fit one GPC) with each split's K loop
//!     under 32 blocks (a longer one keeps the one-consumer kernel, which
//!     beat the split). The unsplit pick is
//!     ranked next. Block-scaled tiles over more than one row of tiles (so
//!     that each tile of B serves several) are split into pairs instead:
//!     the most CTAs that run at once two to an SM (twice the capacity
//!     above), each with the stages that fit half an SM, where they are
//!     more than the SMs: two CTAs' promotions then overlap on each SM.
//!     With one row of tiles such pairs lost.
//! 13. Tile order: the plain pipeline over more than one wave of tiles,
//!     with more rows of tiles than a group and an A larger than the L2
//!     cache, takes its tiles in grouped order (`tile-rasterize`: groups of
//!     8 tile rows, down M, then across N) instead of the grid's column by
//!     column, in which the CTAs running at once cover every row of A and
//!     so stream all of it from memory for each column of tiles. With an A
//!     that L2 holds the column order already hits L2, and the grouped
//!     order measured slower.
//!     Persistent kernels keep their own grouped loop; clustered and split
//!     candidates their grid, and so does a masked grouped GEMM (each
//!     expert holds a few rows of tiles).
//! 14. Whole-width promotion: a block-scaled tile's K block goes out as one
//!     wgmma group as wide as the tile, promoted once it completes; the
//!     other consumer's group keeps the tensor cores busy meanwhile.
//!     Column halves (`mma_n`: two commit groups, the first promoted while
//!     the second runs) stay a knob of `tile.config` and
//!     `tile-assign-layouts`, not a pick: since the warpgroup index became
//!     warp-uniform, whole width ran faster than halves at every pick
//!     measured.
//! 15. Deep pairs: a BF16 pick of one wave over exactly two rows of 64-row
//!     tiles at most 64 columns wide, over at least 112 K blocks, runs
//!     warp-specialised with one consumer, both rows of tiles in 2-CTA
//!     clusters along M (each B tile loaded once for the pair) and the most
//!     stages that fit, past rule 6's 8 up to [`STAGES_LIMIT`]: cuBLAS's
//!     form for such shapes (`deep_paired_rows` says why).
//! 16. Tall shared tiles: a BF16 128x256 pick over at least 6 waves that
//!     two consumers share is shared as 256x128 instead, each consumer
//!     holding 128x128 (cuBLAS's tile for such shapes), where that tile
//!     takes as many waves; rule 10 then pairs its CTAs along N, which
//!     multicasts A's 256 rows. Over fewer waves it gained nothing.
//! 17. Stream-K: a BF16 pick that two consumers share, persistent and
//!     unclustered, whose last wave keeps at most 60% of the SMs busy, over
//!     at least 64 K blocks, shares that wave's tiles between all SMs by K
//!     iterations (`tile-stream-k`, pieces in order), each tile's pieces
//!     summed by the CTA that runs its first: the idle SMs of a thin last
//!     wave take work; with a fuller last wave or a shorter K the hand-over
//!     costs more than it saves (`stream_k_for`).
//! 18. Deferred epilogue: a BF16 pick that two consumers share, persistent,
//!     unclustered and without stream-K, at least 128 columns wide, over at
//!     least 4 waves and 64 K blocks, stores each tile during the next
//!     tile's first K steps, 64 columns a step (`tile-defer-epilogue`), so
//!     that the tensor cores no longer idle while the consumers store; with
//!     one chunk or in clusters over a short K it does not pay
//!     (`deferred_epilogue`).


mod alternatives;
mod candidate;
mod checks;
mod clusters;
mod column_halves;
mod deep_pairs;
mod deferred_epilogue;
mod epilogue;
mod pairs;
mod ping_pong;
mod problem;
mod rank;
mod raster;
mod reasons;
mod scales;
mod schedule;
mod smem;
mod split_k;
mod stream_k;
mod tall_tiles;
#[cfg(test)]
mod testing;
mod tiles;
mod waves;

pub use alternatives::alternatives;
pub use candidate::{figures, Candidate, Config, Epilogue, PieceOrder, Pins, Schedule, Scales, SplitReduce};
pub use checks::{check_pin, check_pins, check_shape};
pub use problem::{AccumulatorRegisters, Machine, Precision, Problem};
pub(crate) use problem::ceil_div;
pub use rank::{choose, rank};
pub use smem::{SmemLayout, MAX_STAGES, STAGES_LIMIT};
pub use tiles::{BLOCK_MS, BLOCK_N_STEP, MAX_BLOCK_N};
