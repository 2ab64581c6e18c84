use tilec_artifact::{ArtifactError, DType, ScalarType};

/// Every failure the runtime reports. Launch-time validation errors name the
/// tensor (and dimension) at fault, so a bad binding never reaches the GPU.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// The CUDA driver library could not be loaded.
    #[error("libcuda could not be loaded (no NVIDIA driver on this machine?); LD_LIBRARY_PATH={ld_library_path:?}")]
    NoCuda {
        /// The library search path at the time.
        ld_library_path: String,
    },
    /// A CUDA library (cuBLAS, cuBLASLt) could not be loaded.
    #[error("could not load {lib} (tried {candidates:?}); add its directory to LD_LIBRARY_PATH (now {ld_library_path:?}), e.g. the Python environment's nvidia/.../lib")]
    LibraryNotLoaded {
        /// The library's name.
        lib: &'static str,
        /// The file names tried.
        candidates: Vec<String>,
        /// The library search path at the time.
        ld_library_path: String,
    },
    /// A CUDA driver call failed.
    #[error("{call} failed: {err}")]
    Driver {
        /// The function that failed.
        call: &'static str,
        /// The library's error.
        err: cudarc::driver::DriverError,
    },
    /// A cuBLAS call failed.
    #[error("{call} failed: {err:?}")]
    Cublas {
        /// The function that failed.
        call: &'static str,
        /// The library's error.
        err: cudarc::cublas::result::CublasError,
    },
    /// A cuBLASLt call failed.
    #[error("{call} failed: {err:?}")]
    CublasLt {
        /// The function that failed.
        call: &'static str,
        /// The library's error.
        err: cudarc::cublaslt::result::CublasError,
    },
    /// The artifact is unreadable or inconsistent.
    #[error(transparent)]
    Artifact(#[from] ArtifactError),
    /// The kernel targets another GPU architecture than the device's.
    #[error("kernel `{entry}` targets {target} but the device is sm_{major}{minor}")]
    ArchMismatch {
        /// The kernel's entry point.
        entry: String,
        /// The artifact's target (`sm_90a`).
        target: String,
        /// The device's compute capability, major.
        major: i32,
        /// The device's compute capability, minor.
        minor: i32,
    },
    /// The kernel was compiled for another GPU tilec knows than the device
    /// (see [`check_target`](crate::check_target)).
    #[error("kernel `{entry}`: artifact compiled for {compiled_for}, device is {device} ({device_target}): recompile with --target {device_target}")]
    TargetMismatch {
        /// The kernel's entry point.
        entry: String,
        /// The manifest's `gpu`.
        compiled_for: String,
        /// The device name the driver reports.
        device: String,
        /// The target the device is.
        device_target: &'static str,
    },
    /// The driver's JIT rejected the PTX.
    #[error("loading the PTX of `{entry}` failed: {err}\n{log}")]
    ModuleLoad {
        /// The kernel's entry point.
        entry: String,
        /// The library's error.
        err: cudarc::driver::DriverError,
        /// The JIT's error log.
        log: String,
    },
    /// The kernel needs more dynamic shared memory than the device gives a block.
    #[error("kernel `{entry}` needs {need} bytes of dynamic shared memory, the device allows {max} (after {static_bytes} static)")]
    SmemOverDeviceLimit {
        /// The kernel's entry point.
        entry: String,
        /// What the kernel needs.
        need: u32,
        /// What the device or kernel allows.
        max: u32,
        /// Static shared memory of the kernel, in bytes.
        static_bytes: u32,
    },
    /// The manifest's block is larger than the compiled kernel can run.
    #[error("kernel `{entry}` can run at most {max} threads per block, the manifest asks for {need}")]
    BlockTooLargeForKernel {
        /// The kernel's entry point.
        entry: String,
        /// What the kernel needs.
        need: u32,
        /// What the device or kernel allows.
        max: u32,
    },
    /// The cluster cannot be scheduled with this block and shared memory.
    #[error("kernel `{entry}`: not even one cluster of {cluster:?} fits on an SM group with this block/shared memory")]
    ClusterDoesNotFit {
        /// The kernel's entry point.
        entry: String,
        /// The cluster's dimensions.
        cluster: [u32; 3],
    },
    /// Programmatic dependent launch asked for a kernel that may touch
    /// memory before the previous grid completes.
    #[error("kernel `{entry}`: its manifest does not say `programmatic_launch`: it may read or write memory before the previous kernel on the stream completes, so it cannot be launched with programmatic dependent launch (compile it with the tile-programmatic-launch pass)")]
    NotProgrammatic {
        /// The kernel's entry point.
        entry: String,
    },
    /// A shape symbol the kernel needs is not bound (the symbol).
    #[error("symbol `{0}` is not bound (bind it in the Problem)")]
    MissingSymbol(String),
    /// A bound shape symbol is not one the kernel declares.
    #[error("symbol `{symbol}` = {value} is bound but not used by the kernel")]
    UnusedSymbol {
        /// The shape symbol.
        symbol: String,
        /// The value bound.
        value: u64,
    },
    /// A tensor the kernel declares has no buffer (the tensor).
    #[error("tensor `{0}` is not bound to a buffer")]
    MissingTensor(String),
    /// A buffer is bound to a tensor the kernel does not declare (its name).
    #[error("a buffer is bound to `{0}`, which the kernel does not declare")]
    UnknownTensor(String),
    /// A tensor is bound twice (the tensor).
    #[error("tensor `{0}` is bound twice")]
    DuplicateBinding(String),
    /// A tensor dimension is zero.
    #[error("tensor `{tensor}` dimension {dim} (`{symbol}`) is zero")]
    ZeroSizedDim {
        /// The tensor's name in the manifest.
        tensor: String,
        /// The dimension (0 is the outermost).
        dim: usize,
        /// The shape symbol.
        symbol: String,
    },
    /// A tensor dimension is over TMA's limit.
    #[error("tensor `{tensor}` dimension {dim} is {value}, over the TMA limit 2^32")]
    DimTooLarge {
        /// The tensor's name in the manifest.
        tensor: String,
        /// The dimension (0 is the outermost).
        dim: usize,
        /// The value bound.
        value: u64,
    },
    /// A tensor loaded through a flat descriptor has more elements than the
    /// kernel's signed 32-bit element index reaches.
    #[error("tensor `{tensor}` has {elements} elements, over the 2^31 - 1 a flat TMA descriptor's index reaches")]
    FlatTooLarge {
        /// The tensor's name in the manifest.
        tensor: String,
        /// Its element count.
        elements: u64,
    },
    /// A buffer's element type differs from the manifest's.
    #[error("tensor `{tensor}` is {expected} in the manifest but the buffer holds {got}")]
    DtypeMismatch {
        /// The tensor's name in the manifest.
        tensor: String,
        /// The element type the manifest declares.
        expected: DType,
        /// The element type of the bound buffer.
        got: DType,
    },
    /// A buffer is smaller than its tensor.
    #[error("tensor `{tensor}` needs {need} bytes, the buffer has {have}")]
    BufferTooSmall {
        /// The tensor's name in the manifest.
        tensor: String,
        /// What the kernel needs.
        need: u64,
        /// Bytes the buffer has.
        have: u64,
    },
    /// A buffer's address is not aligned as TMA or the kernel needs.
    #[error("tensor `{tensor}` address {addr:#x} is not {align}-byte aligned")]
    Misaligned {
        /// The tensor's name in the manifest.
        tensor: String,
        /// The buffer's device address.
        addr: u64,
        /// The alignment required, in bytes.
        align: u64,
    },
    /// A tensor's row stride is not a multiple of 16 bytes (TMA's rule).
    #[error("tensor `{tensor}`: stride of dimension {dim} is {stride} bytes, TMA needs a multiple of 16 (pad the inner dimension)")]
    StrideNotMultipleOf16 {
        /// The tensor's name in the manifest.
        tensor: String,
        /// The dimension (0 is the outermost).
        dim: usize,
        /// The stride, in bytes.
        stride: u64,
    },
    /// A tensor's stride is over TMA's limit.
    #[error("tensor `{tensor}`: stride of dimension {dim} is {stride} bytes, TMA needs < 2^40")]
    StrideTooLarge {
        /// The tensor's name in the manifest.
        tensor: String,
        /// The dimension (0 is the outermost).
        dim: usize,
        /// The stride, in bytes.
        stride: u64,
    },
    /// A shape value does not fit its kernel parameter's type.
    #[error("parameter {index}: `{symbol}` = {value} does not fit {ty:?}")]
    ScalarOverflow {
        /// The parameter's position in the kernel signature.
        index: usize,
        /// The shape symbol.
        symbol: String,
        /// The value bound.
        value: u64,
        /// The parameter's type.
        ty: ScalarType,
    },
    /// The grid is over the device's limits.
    #[error("grid {grid:?} exceeds the device limits (x < 2^31, y and z <= 65535)")]
    GridTooLarge {
        /// The grid computed.
        grid: [u64; 3],
    },
    /// `cuTensorMapEncodeTiled` rejected a descriptor.
    #[error("cuTensorMapEncodeTiled for tensor `{tensor}` failed: {err} (arguments: {args})")]
    TmaEncode {
        /// The tensor's name in the manifest.
        tensor: String,
        /// The library's error.
        err: cudarc::driver::DriverError,
        /// The arguments passed.
        args: String,
    },
    /// The workspace a kernel takes could not be allocated.
    #[error("cannot allocate the kernel's {bytes}-byte workspace: {err}")]
    WorkspaceAlloc {
        /// The bytes asked for.
        bytes: u64,
        /// The library's error.
        err: cudarc::driver::DriverError,
    },
    /// A launch or the kernel itself failed.
    #[error("kernel `{entry}` failed: {err}")]
    KernelFailed {
        /// The kernel's entry point.
        entry: String,
        /// The library's error.
        err: cudarc::driver::DriverError,
    },
    /// The artifact is not the kind of kernel asked for (why).
    #[error("not a GEMM artifact: {0}")]
    NotGemm(String),
    /// The arguments of a GEMM call are inconsistent (why).
    #[error("GEMM arguments: {0}")]
    GemmArgs(String),
    /// An NCCL call failed.
    #[error("{call} failed on rank {rank}: {err:?}")]
    Nccl {
        /// The function that failed.
        call: &'static str,
        /// The rank it failed on.
        rank: usize,
        /// The library's error.
        err: cudarc::nccl::result::NcclError,
    },
    /// This rank stopped because another rank failed at the same step.
    #[error("rank {rank}: another rank failed during {step}")]
    PeerFailed {
        /// This rank.
        rank: usize,
        /// The step the ranks agreed on.
        step: String,
    },
    /// A tensor-parallel GEMM that cannot be split as asked (why).
    #[error("tensor-parallel GEMM: {0}")]
    TpArgs(String),
    /// Anything else (what).
    #[error("{0}")]
    Other(String),
}

/// The runtime's result type.
pub type Result<T, E = RuntimeError> = std::result::Result<T, E>;

/// Names the CUDA driver call a driver error came from:
/// `stream.clone_htod(&v).ctx("cuMemcpyHtoD(A)")?`.
pub trait DriverCtx<T> {
    /// The result, its error as [`RuntimeError::Driver`] naming `call`.
    fn ctx(self, call: &'static str) -> Result<T>;
}

impl<T> DriverCtx<T> for std::result::Result<T, cudarc::driver::DriverError> {
    fn ctx(self, call: &'static str) -> Result<T> {
        self.map_err(|err| RuntimeError::Driver { call, err })
    }
}

/// `Ok` if a CUDA library is `present` (cudarc's `is_culib_present`), else
/// [`RuntimeError::LibraryNotLoaded`] with the file names cudarc tried for
/// `name` and the search path.
pub(crate) fn check_lib(present: bool, lib: &'static str, name: &str) -> Result<()> {
    if present {
        return Ok(());
    }
    Err(RuntimeError::LibraryNotLoaded { lib, candidates: cudarc::get_lib_name_candidates(name), ld_library_path: ld_library_path() })
}

pub(crate) fn ld_library_path() -> String {
    std::env::var("LD_LIBRARY_PATH").unwrap_or_default()
}
