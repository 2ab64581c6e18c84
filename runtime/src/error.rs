use tilec_artifact::{ArtifactError, DType, ScalarType};

/// Every failure the runtime reports. Launch-time validation errors name the
/// tensor (and dimension) at fault, so a bad binding never reaches the GPU.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error("libcuda could not be loaded (no NVIDIA driver on this machine?); LD_LIBRARY_PATH={ld_library_path:?}")]
    NoCuda { ld_library_path: String },
    #[error("could not load {lib} (tried {candidates:?}); add its directory to LD_LIBRARY_PATH (now {ld_library_path:?}), e.g. the Python environment's nvidia/.../lib")]
    LibraryNotLoaded { lib: &'static str, candidates: Vec<String>, ld_library_path: String },
    #[error("{call} failed: {err}")]
    Driver { call: &'static str, err: cudarc::driver::DriverError },
    #[error("{call} failed: {err:?}")]
    Cublas { call: &'static str, err: cudarc::cublas::result::CublasError },
    #[error("{call} failed: {err:?}")]
    CublasLt { call: &'static str, err: cudarc::cublaslt::result::CublasError },
    #[error(transparent)]
    Artifact(#[from] ArtifactError),
    #[error("kernel `{entry}` targets {target} but the device is sm_{major}{minor}")]
    ArchMismatch { entry: String, target: String, major: i32, minor: i32 },
    #[error("loading the PTX of `{entry}` failed: {err}\n{log}")]
    ModuleLoad { entry: String, err: cudarc::driver::DriverError, log: String },
    #[error("kernel `{entry}` needs {need} bytes of dynamic shared memory, the device allows {max} (after {static_bytes} static)")]
    SmemOverDeviceLimit { entry: String, need: u32, max: u32, static_bytes: u32 },
    #[error("kernel `{entry}` can run at most {max} threads per block, the manifest asks for {need}")]
    BlockTooLargeForKernel { entry: String, need: u32, max: u32 },
    #[error("kernel `{entry}`: not even one cluster of {cluster:?} fits on an SM group with this block/shared memory")]
    ClusterDoesNotFit { entry: String, cluster: [u32; 3] },
    #[error("symbol `{0}` is not bound (bind it in the Problem)")]
    MissingSymbol(String),
    #[error("symbol `{symbol}` = {value} is bound but not used by the kernel")]
    UnusedSymbol { symbol: String, value: u64 },
    #[error("tensor `{0}` is not bound to a buffer")]
    MissingTensor(String),
    #[error("a buffer is bound to `{0}`, which the kernel does not declare")]
    UnknownTensor(String),
    #[error("tensor `{0}` is bound twice")]
    DuplicateBinding(String),
    #[error("tensor `{tensor}` dimension {dim} (`{symbol}`) is zero")]
    ZeroSizedDim { tensor: String, dim: usize, symbol: String },
    #[error("tensor `{tensor}` dimension {dim} is {value}, over the TMA limit 2^32")]
    DimTooLarge { tensor: String, dim: usize, value: u64 },
    #[error("tensor `{tensor}` is {expected} in the manifest but the buffer holds {got}")]
    DtypeMismatch { tensor: String, expected: DType, got: DType },
    #[error("tensor `{tensor}` needs {need} bytes, the buffer has {have}")]
    BufferTooSmall { tensor: String, need: u64, have: u64 },
    #[error("tensor `{tensor}` address {addr:#x} is not {align}-byte aligned")]
    Misaligned { tensor: String, addr: u64, align: u64 },
    #[error("tensor `{tensor}`: stride of dimension {dim} is {stride} bytes, TMA needs a multiple of 16 (pad the inner dimension)")]
    StrideNotMultipleOf16 { tensor: String, dim: usize, stride: u64 },
    #[error("tensor `{tensor}`: stride of dimension {dim} is {stride} bytes, TMA needs < 2^40")]
    StrideTooLarge { tensor: String, dim: usize, stride: u64 },
    #[error("parameter {index}: `{symbol}` = {value} does not fit {ty:?}")]
    ScalarOverflow { index: usize, symbol: String, value: u64, ty: ScalarType },
    #[error("grid {grid:?} exceeds the device limits (x < 2^31, y and z <= 65535)")]
    GridTooLarge { grid: [u64; 3] },
    #[error("cuTensorMapEncodeTiled for tensor `{tensor}` failed: {err} (arguments: {args})")]
    TmaEncode { tensor: String, err: cudarc::driver::DriverError, args: String },
    #[error("kernel `{entry}` failed: {err}")]
    KernelFailed { entry: String, err: cudarc::driver::DriverError },
    #[error("not a GEMM artifact: {0}")]
    NotGemm(String),
    #[error("GEMM arguments: {0}")]
    GemmArgs(String),
    #[error("{0}")]
    Other(String),
}

pub type Result<T, E = RuntimeError> = std::result::Result<T, E>;

pub(crate) trait DriverCtx<T> {
    fn ctx(self, call: &'static str) -> Result<T>;
}

impl<T> DriverCtx<T> for std::result::Result<T, cudarc::driver::DriverError> {
    fn ctx(self, call: &'static str) -> Result<T> {
        self.map_err(|err| RuntimeError::Driver { call, err })
    }
}

pub(crate) fn ld_library_path() -> String {
    std::env::var("LD_LIBRARY_PATH").unwrap_or_default()
}
