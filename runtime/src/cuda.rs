//! The CUDA side: device, module loading, TMA descriptor encoding, cluster
//! launch with `cuLaunchKernelEx`, and event timing.

use crate::error::{ld_library_path, DriverCtx, Result, RuntimeError};
use crate::plan::{one_cta_an_sm, plan_launch, smem_alone_on_sm, LaunchPlan, ParamValue, Problem, TensorBinding, TmaEncode};
use crate::target_check::check_target;
use cudarc::driver::sys;
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr};
use std::ffi::c_void;
use std::sync::Arc;
use std::time::Instant;
use tilec_artifact::{Artifact, DType, GridRule, Manifest};

/// True if the CUDA driver library can be loaded.
pub fn cuda_available() -> bool {
    unsafe { sys::is_culib_present() }
}

/// `Ok` if libcuda can be loaded, else [`RuntimeError::NoCuda`].
pub fn ensure_cuda() -> Result<()> {
    if cuda_available() {
        Ok(())
    } else {
        Err(RuntimeError::NoCuda { ld_library_path: ld_library_path() })
    }
}

/// Element types that may back a tensor buffer.
pub trait Element: cudarc::driver::DeviceRepr {
    /// The manifest's name for the element type.
    const DTYPE: DType;
}
impl Element for half::bf16 {
    const DTYPE: DType = DType::Bf16;
}
impl Element for half::f16 {
    const DTYPE: DType = DType::F16;
}
impl Element for f32 {
    const DTYPE: DType = DType::F32;
}
impl Element for f64 {
    const DTYPE: DType = DType::F64;
}
impl Element for i32 {
    const DTYPE: DType = DType::I32;
}
impl Element for u32 {
    const DTYPE: DType = DType::U32;
}
impl Element for i64 {
    const DTYPE: DType = DType::I64;
}
impl Element for i8 {
    const DTYPE: DType = DType::I8;
}
impl Element for u8 {
    const DTYPE: DType = DType::U8;
}

/// One GPU, one context, one stream. Event tracking is off: all work goes to
/// `stream`, in order.
pub struct Gpu {
    /// The device's primary context.
    pub ctx: Arc<CudaContext>,
    /// The stream all work goes to.
    pub stream: Arc<CudaStream>,
    /// The device name, as the driver reports it.
    pub name: String,
    /// Compute capability (major, minor): (9, 0) for Hopper.
    pub cc: (i32, i32),
    /// Streaming multiprocessors on the device.
    pub num_sms: u32,
    /// The most shared memory a block may opt in to, in bytes.
    pub smem_optin: u32,
    /// Shared memory of one SM, in bytes.
    pub smem_per_sm: u32,
    /// Total device memory, in bytes (`cuDeviceTotalMem`): with the name,
    /// what tells which target the device is.
    pub total_mem: u64,
    /// The CUDA driver version (`12040` for 12.4).
    pub driver_version: i32,
}

impl Gpu {
    /// Opens device `ordinal`: its primary context and a stream; an error when there is no CUDA driver or device.
    pub fn new(ordinal: usize) -> Result<Self> {
        ensure_cuda()?;
        let ctx = CudaContext::new(ordinal).ctx("cuInit/cuDevicePrimaryCtxRetain")?;
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.default_stream();
        let name = ctx.name().ctx("cuDeviceGetName")?;
        let cc = ctx.compute_capability().ctx("cuDeviceGetAttribute(COMPUTE_CAPABILITY)")?;
        let num_sms = ctx
            .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .ctx("cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)")? as u32;
        let smem_optin = ctx
            .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
            .ctx("cuDeviceGetAttribute(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)")? as u32;
        let smem_per_sm = ctx
            .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)
            .ctx("cuDeviceGetAttribute(MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)")? as u32;
        let total_mem = ctx.total_mem().ctx("cuDeviceTotalMem")? as u64;
        let mut driver_version = 0;
        unsafe { sys::cuDriverGetVersion(&mut driver_version) }.result().ctx("cuDriverGetVersion")?;
        Ok(Gpu { ctx, stream, name, cc, num_sms, smem_optin, smem_per_sm, total_mem, driver_version })
    }

    /// Synchronises the stream, reporting a kernel fault as `KernelFailed`.
    pub fn sync(&self, what: &str) -> Result<()> {
        self.stream.synchronize().map_err(|err| RuntimeError::KernelFailed { entry: what.to_string(), err })
    }

    /// The device address of `slice` (event tracking is off, so taking it
    /// records nothing).
    pub fn addr<T>(&self, slice: &CudaSlice<T>) -> u64 {
        slice.device_ptr(&self.stream).0
    }

    /// Binds `slice` to the manifest tensor `name`.
    pub fn bind<T: Element>(&self, name: &str, slice: &CudaSlice<T>) -> TensorBinding {
        TensorBinding {
            name: name.to_string(),
            dtype: T::DTYPE,
            addr: self.addr(slice),
            bytes: (slice.len() * std::mem::size_of::<T>()) as u64,
        }
    }

    /// Fills a bf16/f16 buffer with the 16-bit pattern `bits` (0xFFFF: NaN).
    pub fn poison16<T: Element>(&self, slice: &mut CudaSlice<T>, bits: u16) -> Result<()> {
        assert_eq!(std::mem::size_of::<T>(), 2, "poison16 needs a 16-bit element type");
        let (addr, _g) = slice.device_ptr(&self.stream);
        unsafe { sys::cuMemsetD16Async(addr, bits, slice.len(), self.stream.cu_stream()) }
            .result()
            .ctx("cuMemsetD16Async")
    }

    /// Fills every byte of a buffer with `byte` (0xFF: NaN as bf16 and as
    /// e4m3).
    pub fn poison8<T: Element>(&self, slice: &mut CudaSlice<T>, byte: u8) -> Result<()> {
        let (addr, _g) = slice.device_ptr(&self.stream);
        let bytes = slice.len() * std::mem::size_of::<T>();
        unsafe { sys::cuMemsetD8Async(addr, byte, bytes, self.stream.cu_stream()) }.result().ctx("cuMemsetD8Async")
    }

    /// Loads an artifact: checks the PTX target and the GPU it was compiled
    /// for ([`check_target`]), JIT-compiles the PTX, finds the entry, and
    /// raises the dynamic shared-memory limit where needed.
    pub fn load(&self, artifact: &Artifact) -> Result<Kernel> {
        let m = &artifact.manifest;
        if let Some(sm) = m.target.strip_prefix("sm_") {
            let digits: String = sm.chars().take_while(|c| c.is_ascii_digit()).collect();
            if let Ok(v) = digits.parse::<i32>() {
                let have = self.cc.0 * 10 + self.cc.1;
                // sm_90a code runs only on exactly 9.0; plain sm_XY on >= XY.
                let ok = if sm.ends_with('a') { have == v } else { have >= v };
                if !ok {
                    return Err(RuntimeError::ArchMismatch {
                        entry: m.entry.clone(),
                        target: m.target.clone(),
                        major: self.cc.0,
                        minor: self.cc.1,
                    });
                }
            }
        }
        check_target(m, &self.name, self.total_mem)?;
        let t0 = Instant::now();
        let module = self.load_module(&artifact.ptx, &m.entry)?;
        let jit_ms = t0.elapsed().as_secs_f64() * 1e3;
        let func = module.load_function(&m.entry).ctx("cuModuleGetFunction")?;
        let attr = |a: sys::CUfunction_attribute, call: &'static str| -> Result<i32> {
            let mut v = 0;
            unsafe { sys::cuFuncGetAttribute(&mut v, a, func.cu_function()) }.result().ctx(call)?;
            Ok(v)
        };
        let static_smem = attr(
            sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
            "cuFuncGetAttribute(SHARED_SIZE_BYTES)",
        )? as u32;
        let max_threads = attr(
            sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
            "cuFuncGetAttribute(MAX_THREADS_PER_BLOCK)",
        )? as u32;
        let num_regs = attr(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_NUM_REGS, "cuFuncGetAttribute(NUM_REGS)")?;
        let threads: u32 = m.block.iter().product();
        if threads > max_threads {
            return Err(RuntimeError::BlockTooLargeForKernel { entry: m.entry.clone(), need: threads, max: max_threads });
        }
        let dyn_max = self.smem_optin.saturating_sub(static_smem);
        if m.dynamic_smem_bytes > dyn_max {
            return Err(RuntimeError::SmemOverDeviceLimit {
                entry: m.entry.clone(),
                need: m.dynamic_smem_bytes,
                max: dyn_max,
                static_bytes: static_smem,
            });
        }
        // Programmatic launches of one CTA an SM ask for this much (`Prepared::launch_on`).
        let alone_smem = smem_alone_on_sm(m.dynamic_smem_bytes, static_smem, self.smem_per_sm, dyn_max);
        if alone_smem + static_smem > 48 * 1024 {
            func.set_attribute(
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                alone_smem as i32,
            )
            .ctx("cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)")?;
        }
        let mut cluster_sms = self.num_sms;
        if m.cluster_size() > 1 {
            let cfg = cudarc::driver::LaunchConfig {
                grid_dim: (m.cluster[0], m.cluster[1], m.cluster[2]),
                block_dim: (m.block[0], m.block[1], m.block[2]),
                shared_mem_bytes: m.dynamic_smem_bytes,
            };
            // Without the cluster attribute the query uses the kernel's
            // compiled cluster shape, so ask with the attribute set.
            let n = max_active_clusters(&func, &cfg, m.cluster, &self.stream)
                .ctx("cuOccupancyMaxActiveClusters")?;
            if n == 0 {
                return Err(RuntimeError::ClusterDoesNotFit { entry: m.entry.clone(), cluster: m.cluster });
            }
            let ctas_per_sm = match m.grid {
                GridRule::Sms { ctas_per_sm, .. } => ctas_per_sm.max(1),
                GridRule::Tiles { .. } => 1,
            };
            cluster_sms = (n as u32 * m.cluster_size()).div_ceil(ctas_per_sm).min(self.num_sms);
        }
        Ok(Kernel {
            manifest: m.clone(),
            _module: module,
            func,
            stream: self.stream.clone(),
            num_sms: self.num_sms,
            cluster_sms,
            jit_ms,
            num_regs,
            static_smem,
            alone_smem,
        })
    }

    fn load_module(&self, ptx: &str, entry: &str) -> Result<Arc<CudaModule>> {
        match self.ctx.load_module(cudarc::nvrtc::Ptx::from_src(ptx)) {
            Ok(m) => Ok(m),
            Err(err) => {
                let log = jit_error_log(ptx);
                Err(RuntimeError::ModuleLoad { entry: entry.to_string(), err, log })
            }
        }
    }
}

fn max_active_clusters(
    func: &CudaFunction,
    cfg: &cudarc::driver::LaunchConfig,
    cluster: [u32; 3],
    stream: &CudaStream,
) -> std::result::Result<i32, cudarc::driver::DriverError> {
    let mut attr = cluster_attr(cluster);
    let lc = sys::CUlaunchConfig {
        gridDimX: cfg.grid_dim.0,
        gridDimY: cfg.grid_dim.1,
        gridDimZ: cfg.grid_dim.2,
        blockDimX: cfg.block_dim.0,
        blockDimY: cfg.block_dim.1,
        blockDimZ: cfg.block_dim.2,
        sharedMemBytes: cfg.shared_mem_bytes,
        hStream: stream.cu_stream(),
        attrs: &mut attr,
        numAttrs: 1,
    };
    let mut n = 0;
    unsafe { sys::cuOccupancyMaxActiveClusters(&mut n, func.cu_function(), &lc) }.result()?;
    Ok(n)
}

fn cluster_attr(cluster: [u32; 3]) -> sys::CUlaunchAttribute {
    let mut a: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
    a.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    a.value.clusterDim.x = cluster[0];
    a.value.clusterDim.y = cluster[1];
    a.value.clusterDim.z = cluster[2];
    a
}

/// Programmatic stream serialisation: the kernel may launch before the
/// previous kernel on the stream completes (once that one's CTAs have all
/// issued `griddepcontrol.launch_dependents` or exited).
fn programmatic_attr() -> sys::CUlaunchAttribute {
    let mut a: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
    a.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    a.value.programmaticStreamSerializationAllowed = 1;
    a
}

/// Re-runs the JIT with an error-log buffer to say why the PTX failed.
fn jit_error_log(ptx: &str) -> String {
    let Ok(src) = std::ffi::CString::new(ptx) else {
        return "PTX text contains a NUL byte".into();
    };
    let mut buf = vec![0u8; 16384];
    let mut opts = [
        sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
        sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
    ];
    let mut vals = [buf.as_mut_ptr() as *mut c_void, buf.len() as *mut c_void];
    let mut module: sys::CUmodule = std::ptr::null_mut();
    let r = unsafe {
        sys::cuModuleLoadDataEx(&mut module, src.as_ptr() as *const c_void, 2, opts.as_mut_ptr(), vals.as_mut_ptr())
    };
    if r == sys::CUresult::CUDA_SUCCESS {
        unsafe { sys::cuModuleUnload(module) };
        return "(the retry with a log buffer succeeded)".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// A loaded kernel plus its manifest.
pub struct Kernel {
    /// The artifact's launch contract.
    pub manifest: Manifest,
    _module: Arc<CudaModule>,
    /// The loaded entry point.
    pub func: CudaFunction,
    stream: Arc<CudaStream>,
    /// Streaming multiprocessors on the device, for persistent grids.
    pub num_sms: u32,
    /// The SMs the kernel's clusters fill at once
    /// (`cuOccupancyMaxActiveClusters`; every SM without clusters): a
    /// cluster's CTAs share a GPC, so clusters of four or eight leave some
    /// SMs idle, and a persistent grid sized for all of them would queue
    /// whole clusters behind the others, their tiles run a wave late.
    pub cluster_sms: u32,
    /// Wall time of module load (PTX JIT), milliseconds.
    pub jit_ms: f64,
    /// Registers per thread the JIT allocated.
    pub num_regs: i32,
    /// Static shared memory per block, in bytes.
    pub static_smem: u32,
    /// The dynamic shared memory with which a CTA has its SM to itself
    /// ([`smem_alone_on_sm`]).
    pub alone_smem: u32,
}

/// Parameter storage that must stay put while a launch reads it.
enum Slot {
    Tma(Box<sys::CUtensorMap>),
    Bytes(Box<[u64; 1]>),
}

/// The scratch memory the launches on one stream use (the manifest's
/// `workspace`): allocated zeroed on that stream, and left zeroed by each
/// launch, so the stream's launches, which run one after another, can all
/// use it, while another stream's run at the same time with their own.
struct Workspace {
    stream: sys::CUstream,
    buffer: CudaSlice<u8>,
}

/// A launch with encoded descriptors, ready to be issued (repeatedly).
pub struct Prepared {
    /// Grid, block, cluster, shared memory and parameters of the launch.
    pub plan: LaunchPlan,
    entry: String,
    func: sys::CUfunction,
    stream: Arc<CudaStream>,
    slots: Vec<Slot>,
    /// The parameter that takes a workspace, and its bytes.
    workspace_param: Option<(usize, u64)>,
    /// A workspace for each stream launched on.
    workspaces: Vec<Workspace>,
    /// The manifest allows programmatic dependent launch.
    programmatic_allowed: bool,
    /// Launches carry the programmatic stream serialisation attribute.
    programmatic: bool,
    /// The dynamic shared memory a programmatic launch asks for: with a grid
    /// of at most one CTA an SM, enough that each has its SM to itself
    /// ([`smem_alone_on_sm`]); else the manifest's.
    programmatic_smem: u32,
}

/// Encodes one TMA descriptor from pure arguments.
pub fn encode_tma(a: &TmaEncode) -> Result<sys::CUtensorMap> {
    let mut map: sys::CUtensorMap = unsafe { std::mem::zeroed() };
    let r = unsafe {
        sys::cuTensorMapEncodeTiled(
            &mut map,
            a.data_type,
            a.rank,
            a.global_address as *mut c_void,
            a.global_dim.as_ptr(),
            a.global_strides.as_ptr(),
            a.box_dim.as_ptr(),
            a.element_strides.as_ptr(),
            a.interleave,
            a.swizzle,
            a.l2_promotion,
            a.oob_fill,
        )
    };
    r.result().map_err(|err| RuntimeError::TmaEncode { tensor: a.tensor.clone(), err, args: format!("{a:?}") })?;
    Ok(map)
}

impl Kernel {
    /// The stream the kernel's own launches and allocations go to.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Validates the bindings, encodes TMA descriptors and fixes the grid.
    pub fn prepare(&self, problem: &Problem, tensors: &[TensorBinding]) -> Result<Prepared> {
        self.prepare_on(problem, tensors, self.num_sms)
    }

    /// [`Kernel::prepare`] with a persistent grid over `sms` SMs instead of
    /// all of them, for a launch that shares the GPU with another kernel
    /// (a collective) and should not queue CTAs behind it.
    pub fn prepare_on(&self, problem: &Problem, tensors: &[TensorBinding], sms: u32) -> Result<Prepared> {
        let sms = sms.clamp(1, self.num_sms).min(self.cluster_sms);
        let plan = plan_launch(&self.manifest, problem, tensors, sms)?;
        let programmatic_smem = if one_cta_an_sm(plan.grid, sms) { self.alone_smem } else { plan.dynamic_smem_bytes };
        let mut slots = Vec::with_capacity(plan.params.len());
        let mut workspace_param = None;
        for (i, p) in plan.params.iter().enumerate() {
            slots.push(match p {
                ParamValue::Tma(a) => Slot::Tma(Box::new(encode_tma(a)?)),
                ParamValue::Ptr(v) | ParamValue::U64(v) => Slot::Bytes(Box::new([*v])),
                ParamValue::I64(v) => Slot::Bytes(Box::new([*v as u64])),
                // 4-byte scalars sit in the low bytes (little-endian).
                ParamValue::I32(v) => Slot::Bytes(Box::new([*v as u32 as u64])),
                ParamValue::U32(v) => Slot::Bytes(Box::new([*v as u64])),
                ParamValue::F32(v) => Slot::Bytes(Box::new([v.to_bits() as u64])),
                // The stream's workspace is filled in at launch.
                ParamValue::Workspace(bytes) => {
                    workspace_param = Some((i, *bytes));
                    Slot::Bytes(Box::new([0]))
                }
            });
        }
        Ok(Prepared {
            plan,
            entry: self.manifest.entry.clone(),
            func: self.func.cu_function(),
            stream: self.stream.clone(),
            slots,
            workspace_param,
            workspaces: Vec::new(),
            programmatic_allowed: self.manifest.programmatic_launch,
            programmatic: false,
            programmatic_smem,
        })
    }
}

impl Prepared {
    /// The stream [`Prepared::launch`] issues on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Launches from now on carry programmatic dependent launch (`on`) or
    /// not: the kernel may then start while the previous kernel on the
    /// stream runs, and waits for it before touching memory. Refused for a
    /// kernel whose manifest does not say it waits.
    pub fn set_programmatic_launch(&mut self, on: bool) -> Result<()> {
        if on && !self.programmatic_allowed {
            return Err(RuntimeError::NotProgrammatic { entry: self.entry.clone() });
        }
        self.programmatic = on;
        Ok(())
    }

    /// Issues the kernel on the stream (asynchronous). TMA descriptors go by
    /// value: the driver copies the 128 bytes each pointer points at.
    pub fn launch(&mut self) -> Result<()> {
        let stream = self.stream.clone();
        self.launch_on(&stream)
    }

    /// The address of `stream`'s workspace, allocated on its first launch there.
    fn workspace_on(&mut self, stream: &Arc<CudaStream>, bytes: u64) -> Result<u64> {
        let handle = stream.cu_stream();
        let at = match self.workspaces.iter().position(|w| w.stream == handle) {
            Some(at) => at,
            None => {
                let buffer = stream.alloc_zeros::<u8>(bytes as usize).map_err(|err| RuntimeError::WorkspaceAlloc { bytes, err })?;
                self.workspaces.push(Workspace { stream: handle, buffer });
                self.workspaces.len() - 1
            }
        };
        let (addr, _sync) = self.workspaces[at].buffer.device_ptr(stream);
        Ok(addr)
    }

    /// Issues the kernel on `stream` (asynchronous). A kernel that takes a
    /// workspace uses the stream's own, so launches on several streams may
    /// run at once.
    pub fn launch_on(&mut self, stream: &Arc<CudaStream>) -> Result<()> {
        if let Some((slot, bytes)) = self.workspace_param {
            let addr = self.workspace_on(stream, bytes)?;
            self.slots[slot] = Slot::Bytes(Box::new([addr]));
        }
        let mut args: Vec<*mut c_void> = self
            .slots
            .iter_mut()
            .map(|s| match s {
                Slot::Tma(m) => (&mut **m) as *mut sys::CUtensorMap as *mut c_void,
                Slot::Bytes(b) => b.as_mut_ptr() as *mut c_void,
            })
            .collect();
        let p = &self.plan;
        let mut attrs = Vec::with_capacity(2);
        if p.cluster.iter().product::<u32>() > 1 {
            attrs.push(cluster_attr(p.cluster));
        }
        if self.programmatic {
            attrs.push(programmatic_attr());
        }
        let cfg = sys::CUlaunchConfig {
            gridDimX: p.grid[0],
            gridDimY: p.grid[1],
            gridDimZ: p.grid[2],
            blockDimX: p.block[0],
            blockDimY: p.block[1],
            blockDimZ: p.block[2],
            sharedMemBytes: if self.programmatic { self.programmatic_smem } else { p.dynamic_smem_bytes },
            hStream: stream.cu_stream(),
            attrs: if attrs.is_empty() { std::ptr::null_mut() } else { attrs.as_mut_ptr() },
            numAttrs: attrs.len() as u32,
        };
        unsafe { sys::cuLaunchKernelEx(&cfg, self.func, args.as_mut_ptr(), std::ptr::null_mut()) }
            .result()
            .map_err(|err| RuntimeError::KernelFailed { entry: self.entry.clone(), err })
    }

    /// Launches and synchronises: a fault surfaces here, named.
    pub fn launch_checked(&mut self) -> Result<()> {
        self.launch()?;
        self.stream.synchronize().map_err(|err| RuntimeError::KernelFailed { entry: self.entry.clone(), err })
    }
}
