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
    NvmmaShared { swizzle_bytes: u32, transposed: bool, padding_elems: u32 },
    /// The wgmma accumulator layout (MMA version 3): a warpgroup tiling of
    /// `instr_shape` = [M, N, K] instructions over `warps_per_cta`.
    Mma { version: u32, warps_per_cta: Vec<u32>, instr_shape: Vec<u32> },
    /// An operand of a dot held in registers, laid out for its parent MMA.
    DotOperand { op_idx: u32, k_width: u32, parent: Box<Layout> },
    /// A plain distributed layout for epilogues and element-wise work.
    Blocked {
        size_per_thread: Vec<u32>,
        threads_per_warp: Vec<u32>,
        warps_per_cta: Vec<u32>,
        order: Vec<u32>,
    },
    /// The parent layout with dimension `dim` removed (kept with extent
    /// 1): each thread holds the elements of the parent's positions it
    /// holds, projected. A row vector `Slice { dim: 1, parent: Mma }` gives
    /// each thread the rows of its accumulator fragment (a block-scaled
    /// dot's per-row scales).
    Slice { dim: u32, parent: Box<Layout> },
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

    pub fn is_shared(&self) -> bool {
        matches!(self, Layout::NvmmaShared { .. })
    }
}
