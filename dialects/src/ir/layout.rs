//! Layout attributes carried by tile types, in the spirit of Triton's and
//! Gluon's encodings. The tile dialect leaves layouts open; the
//! `tile-assign-layouts` pass fills them in.

/// How a tile's elements are placed in shared memory or spread over threads.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Layout {
    /// Shared memory readable by wgmma and TMA: rows of the contiguous
    /// dimension swizzled in `swizzle_bytes` spans (128, 64, 32, or 0 for
    /// none). With no swizzle, `padding_elems` pads each row against bank
    /// conflicts. `transposed` marks a tile stored MN-major.
    NvmmaShared {
        /// The swizzle span in bytes: 128, 64, 32, or 0 for none.
        swizzle_bytes: u32,
        /// The tile is stored MN-major (its first dimension contiguous).
        transposed: bool,
        /// Elements of padding after each row (only without a swizzle).
        padding_elems: u32,
    },
    /// The wgmma accumulator layout (MMA version 3): a warpgroup tiling of
    /// `instr_shape` = [M, N, K] instructions over `warps_per_cta`.
    Mma {
        /// The MMA generation: 3 is Hopper's wgmma.
        version: u32,
        /// Warps along M and N; whole warpgroups along M (`[4G, 1]`).
        warps_per_cta: Vec<u32>,
        /// One instruction's `[M, N, K]` per warp (`[16, N, K]`).
        instr_shape: Vec<u32>,
    },
    /// An operand of a dot held in registers, laid out for its parent MMA.
    DotOperand {
        /// Which operand: 0 for A, 1 for B.
        op_idx: u32,
        /// Consecutive K elements a thread holds.
        k_width: u32,
        /// The MMA layout of the dot's accumulator.
        parent: Box<Layout>,
    },
    /// A plain distributed layout for epilogues and element-wise work.
    Blocked {
        /// Consecutive elements each thread holds, per dimension.
        size_per_thread: Vec<u32>,
        /// Threads of a warp along each dimension (their product is 32).
        threads_per_warp: Vec<u32>,
        /// Warps along each dimension (their product is the CTA's warps).
        warps_per_cta: Vec<u32>,
        /// Dimensions from fastest-varying to slowest.
        order: Vec<u32>,
    },
    /// The parent layout with dimension `dim` removed (kept with extent
    /// 1): each thread holds the elements of the parent's positions it
    /// holds, projected. A row vector `Slice { dim: 1, parent: Mma }` gives
    /// each thread the rows of its accumulator fragment (a block-scaled
    /// dot's per-row scales).
    Slice {
        /// The parent's dimension the tile has extent 1 in.
        dim: u32,
        /// The layout sliced.
        parent: Box<Layout>,
    },
}

impl Layout {
    /// The `#tile.<mnemonic>` spelling of this layout kind.
    pub fn mnemonic(&self) -> &'static str {
        match self {
            Layout::NvmmaShared { .. } => "nvmma_shared",
            Layout::Mma { .. } => "mma",
            Layout::DotOperand { .. } => "dot_operand",
            Layout::Blocked { .. } => "blocked",
            Layout::Slice { .. } => "slice",
        }
    }

    /// Whether the layout places the tile in shared memory (not registers).
    pub fn is_shared(&self) -> bool {
        matches!(self, Layout::NvmmaShared { .. })
    }
}
