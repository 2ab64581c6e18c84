//! The transforms, one per file.

pub mod assign_layouts;
pub mod canonicalize;
pub mod cluster_split;
pub mod defer_epilogue;
pub mod fit_tma_boxes;
pub mod licm;
pub mod lower_to_nv;
pub mod pair_promotions;
pub mod persistent;
pub mod pipeline;
pub mod prefetch_l2;
pub mod programmatic_launch;
pub mod rasterize;
pub mod select_config;
pub mod split_k;
pub mod stream_k;
pub mod swap_operands;
pub mod warp_specialize;
