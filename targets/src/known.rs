//! The GPUs tilec knows, and the one it compiles for when none is named.
//! Figures are NVIDIA's datasheets' and the CUDA programming guide's
//! (compute capability 9.0); `docs/targets.md` says which is which.

use crate::Target;

impl Target {
    /// The NVIDIA H100 in its SXM form: 132 SMs, 80 GB of HBM3.
    pub const H100: Target = Target {
        name: "h100",
        part: "NVIDIA H100 SXM",
        model: "H100",
        sm: "sm_90a",
        sms: 132,
        smem_per_cta_bytes: 227 << 10,
        smem_per_sm_bytes: 228 << 10,
        registers_per_sm: 64 << 10,
        max_registers_per_thread: 255,
        l2_bytes: 50 << 20,
        l2_sector_bytes: 32,
        hbm_bytes: 80 << 30,
        hbm_bytes_per_s: 3_350_000_000_000,
        bf16_flops: 989_000_000_000_000,
        fp8_flops: 1_979_000_000_000_000,
        boost_clock_hz: 1_980_000_000,
        max_cluster_size: 8,
        active_clusters: [(2, 66), (4, 30), (8, 15)],
    };

    /// The NVIDIA H200 (SXM): the H100's chip with 141 GB of HBM3e, 1.43
    /// times the bandwidth, and all of its 60 MiB of L2 (the driver's
    /// `L2_CACHE_SIZE`, in every H200 report of `tilec-bench`); every other
    /// fact is the H100's.
    pub const H200: Target = Target {
        name: "h200",
        part: "NVIDIA H200",
        model: "H200",
        l2_bytes: 60 << 20,
        hbm_bytes: 141 << 30,
        hbm_bytes_per_s: 4_800_000_000_000,
        ..Target::H100
    };

    /// Every target tilec knows, in the order messages list them.
    pub const ALL: &'static [Target] = &[Target::H100, Target::H200];

    /// The target when none is named: the H200, the GPU the project's
    /// kernels run on. An artifact compiled without `--target` must load on
    /// that GPU, since the runtime refuses an artifact compiled for another
    /// known one; change this when the GPU changes.
    pub const DEFAULT: Target = Target::H200;
}
