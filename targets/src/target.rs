//! The [`Target`] type: one GPU's facts, and how a target is found by name
//! or from the device the driver reports.

/// One GPU tilec compiles for: the hardware facts the compiler, the runtime
/// and the benchmark read. Every known target is a constant
/// ([`Target::H100`], [`Target::H200`]), listed in [`Target::ALL`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Target {
    /// The short name the command line, pass pipelines and manifests use
    /// (`h100`): lower case, unique among [`Target::ALL`].
    pub name: &'static str,
    /// The part as people name it (`NVIDIA H100 SXM`), for messages and
    /// reports.
    pub part: &'static str,
    /// The model the driver's device name carries as a word of its own
    /// (`H100` in `NVIDIA H100 80GB HBM3`), one half of recognising the
    /// device ([`Target::matches_device`]).
    pub model: &'static str,
    /// The PTX target (`sm_90a`): the NVPTX CPU and `#nvvm.target` chip the
    /// back end compiles for, and the manifest's `target`. The `a` makes
    /// wgmma and `setmaxnreg` available, and ties the code to exactly this
    /// compute capability.
    pub sm: &'static str,
    /// Streaming multiprocessors.
    pub sms: u32,
    /// Shared memory one CTA may use, in bytes: the opt-in maximum
    /// (`CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`), which the
    /// runtime opts a kernel into above the 48 KiB every kernel gets.
    pub smem_per_cta_bytes: u32,
    /// Shared memory of one SM, in bytes, which its co-resident CTAs share
    /// (each also loses 1 KiB the hardware keeps for it).
    pub smem_per_sm_bytes: u32,
    /// 32-bit registers of one SM, which its co-resident threads share.
    pub registers_per_sm: u32,
    /// The most registers one thread may hold (more spill to local memory).
    pub max_registers_per_thread: u32,
    /// The L2 cache, in bytes: what tiles of A and B may stay resident in
    /// between the CTAs that read them.
    pub l2_bytes: u64,
    /// Bytes of an L2 sector, the unit L2 moves data in: a TMA box whose
    /// global rows start off it (rows an odd multiple of 16 bytes apart)
    /// takes about twice the L2 throughput for the same bytes.
    pub l2_sector_bytes: u32,
    /// HBM capacity, in bytes. The datasheet's gigabytes are binary ones;
    /// the driver reports a little less, keeping some for itself, which
    /// [`Target::matches_device`] allows for.
    pub hbm_bytes: u64,
    /// HBM bandwidth, in bytes per second (datasheet): the roof of a
    /// memory-bound GEMM.
    pub hbm_bytes_per_s: u64,
    /// Dense (no sparsity) BF16 tensor-core peak, in FLOP/s (datasheet).
    pub bf16_flops: u64,
    /// Dense FP8 (E4M3 or E5M2) tensor-core peak, in FLOP/s (datasheet).
    pub fp8_flops: u64,
    /// The highest SM clock, in Hz. Long tensor-core runs hold less than
    /// this under the power cap.
    pub boost_clock_hz: u64,
    /// The most CTAs a cluster may have without the non-portable opt-in.
    pub max_cluster_size: u32,
    /// Clusters of 2, 4 and 8 CTAs of one CTA an SM that run at once, as
    /// `(CTAs, clusters)`: a cluster's CTAs share one GPC, so where a GPC's
    /// SMs are not a multiple of the cluster's CTAs some stay idle, and
    /// clusters past these wait for a later wave
    /// (`cuOccupancyMaxActiveClusters`).
    pub active_clusters: [(u32, u32); 3],
}

impl Target {
    /// The names of [`Target::ALL`], in its order, for option values and
    /// messages.
    pub const NAMES: &'static [&'static str] = &{
        let mut names = [""; Target::ALL.len()];
        let mut i = 0;
        while i < names.len() {
            names[i] = Target::ALL[i].name;
            i += 1;
        }
        names
    };

    /// The target named `name` (`h100`, `h200`); the error names the known
    /// targets.
    pub fn from_name(name: &str) -> Result<&'static Target, String> {
        Target::ALL
            .iter()
            .find(|t| t.name == name)
            .ok_or_else(|| format!("unknown target '{name}' (known targets: {})", Target::NAMES.join(", ")))
    }

    /// Whether the device the driver reports as `device_name`, with
    /// `total_memory_bytes` of memory, is this target: the name holds
    /// [`Target::model`] as a word of its own (`NVIDIA H100 80GB HBM3`,
    /// `NVIDIA H200`, but not `NVIDIA GH200 480GB`), and the memory is at
    /// most [`Target::hbm_bytes`] and less by no more than a tenth (the
    /// driver keeps some for itself; a part of the same model with another
    /// memory size, such as the 94 GB H100 NVL, has other SMs or bandwidth).
    pub fn matches_device(&self, device_name: &str, total_memory_bytes: u64) -> bool {
        let named = device_name.split(|c: char| !c.is_ascii_alphanumeric()).any(|word| word.eq_ignore_ascii_case(self.model));
        named && total_memory_bytes <= self.hbm_bytes && total_memory_bytes >= self.hbm_bytes - self.hbm_bytes / 10
    }

    /// The known target the device is ([`Target::matches_device`]), if any.
    pub fn of_device(device_name: &str, total_memory_bytes: u64) -> Option<&'static Target> {
        Target::ALL.iter().find(|t| t.matches_device(device_name, total_memory_bytes))
    }
}

/// [`Target::DEFAULT`], so that options holding a `&'static Target` can
/// derive `Default`.
impl Default for &'static Target {
    fn default() -> Self {
        &Target::DEFAULT
    }
}
