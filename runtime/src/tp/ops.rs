//! One rank's part of a tensor-parallel GEMM on the GPU: its buffers, a
//! bound tilec GEMM for every launch of the [`schedule`](super::schedule),
//! and the four ways to run it that the benchmark compares.
//!
//! The GEMMs run on the rank's GPU stream and the collectives on its
//! communication stream. An operation starts by making the communication
//! stream wait for the GEMM stream (so a collective never overwrites a
//! buffer an earlier GEMM still reads) and ends by making the GEMM stream
//! wait for the communication stream, so an event pair on the GEMM stream
//! times the whole operation. Within the overlapped operation, events
//! order each chunk's GEMMs after its all-gather, or its reduce-scatter
//! after its GEMMs; the side that records an event is enqueued before the
//! side that waits on it, as a stream wait only sees records already made.

use super::schedule::{Buf, CommStep, GemmStep, Mode, Rows, TpGemm};
use super::shards::{Inputs, Matrix};
use super::world::Rank;
use crate::check::{POISON_BF16, SCALE_BLOCK};
use crate::cuda::Element;
use crate::error::{DriverCtx, Result, RuntimeError};
use crate::gemm::{BoundGemm, Gemm, GemmBuffers, GemmSize, GemmSpec, SaLayout, Scales};
use crate::plan::TensorBinding;
use cudarc::driver::{sys, CudaEvent, CudaSlice};
use cudarc::nccl::{NcclType, ReduceOp};
use half::bf16;
use tilec_artifact::DType;

/// An element type of A and B a tensor-parallel GEMM moves: bf16, or e4m3
/// as bytes.
pub trait TpElement: Element + NcclType + Copy + Default + Send + Sync {}
impl TpElement for bf16 {}
impl TpElement for u8 {}

/// The block scales of a rank: its own SA and SB, and the gathered SA.
struct DeviceScales {
    sa: CudaSlice<f32>,
    sa_gathered: Option<CudaSlice<f32>>,
    sb: CudaSlice<f32>,
}

/// A rank's device buffers (see [`Buf`]).
struct Buffers<T> {
    a: CudaSlice<T>,
    b: CudaSlice<T>,
    gathered: Option<CudaSlice<T>>,
    partial: Option<CudaSlice<bf16>>,
    c: CudaSlice<bf16>,
    scales: Option<DeviceScales>,
}

fn rows_binding(name: &str, dtype: DType, base: u64, row_bytes: u64, rows: Rows) -> TensorBinding {
    TensorBinding { name: name.into(), dtype, addr: base + rows.row * row_bytes, bytes: rows.rows * row_bytes }
}

impl<T: TpElement> Buffers<T> {
    /// Uploads the shard and allocates what the schedule writes.
    fn new(rank: &Rank, tp: &TpGemm, inputs: &Inputs<T>) -> Result<Self> {
        let s = &rank.gpu.stream;
        let (l, m) = (tp.local(), tp.size.m as usize);
        let kb = l.k.div_ceil(SCALE_BLOCK as u64) as usize;
        let all_gather = tp.mode == Mode::AllGatherGemm;
        Ok(Buffers {
            a: s.clone_htod(&inputs.a.data).ctx("cuMemcpyHtoD(A)")?,
            b: s.clone_htod(&inputs.b.data).ctx("cuMemcpyHtoD(B)")?,
            gathered: all_gather.then(|| unsafe { s.alloc::<T>(m * l.k as usize) }.ctx("cuMemAlloc(gathered A)")).transpose()?,
            partial: (!all_gather).then(|| unsafe { s.alloc::<bf16>(m * l.n as usize) }.ctx("cuMemAlloc(partial C)")).transpose()?,
            c: unsafe { s.alloc::<bf16>((l.c_rows * l.n) as usize) }.ctx("cuMemAlloc(C)")?,
            scales: match &inputs.scales {
                None => None,
                Some((sa, sb)) => Some(DeviceScales {
                    sa: s.clone_htod(&sa.data).ctx("cuMemcpyHtoD(SA)")?,
                    sa_gathered: all_gather.then(|| unsafe { s.alloc::<f32>(m * kb) }.ctx("cuMemAlloc(gathered SA)")).transpose()?,
                    sb: s.clone_htod(&sb.data).ctx("cuMemcpyHtoD(SB)")?,
                }),
            },
        })
    }

    /// The first address and the bytes of a row of `buf`, and of its scales.
    fn row_space(&self, rank: &Rank, tp: &TpGemm, buf: Buf) -> (u64, u64, Option<(u64, u64)>) {
        let l = tp.local();
        let sa_row = l.k.div_ceil(SCALE_BLOCK as u64) * 4;
        let a_row = l.k * std::mem::size_of::<T>() as u64;
        let c_row = l.n * 2;
        let scales = |pick: fn(&DeviceScales) -> Option<&CudaSlice<f32>>| {
            self.scales.as_ref().and_then(pick).map(|sa| (rank.gpu.addr(sa), sa_row))
        };
        let opt = |b: Option<u64>| b.expect("the schedule uses only the buffers of its mode");
        match buf {
            Buf::A => (rank.gpu.addr(&self.a), a_row, scales(|s| Some(&s.sa))),
            Buf::Gathered => (opt(self.gathered.as_ref().map(|g| rank.gpu.addr(g))), a_row, scales(|s| s.sa_gathered.as_ref())),
            Buf::Partial => (opt(self.partial.as_ref().map(|p| rank.gpu.addr(p))), c_row, None),
            Buf::C => (rank.gpu.addr(&self.c), c_row, None),
        }
    }

    /// Binds `gemm` to one launch: A's (and SA's) rows, B, and the output
    /// rows; a persistent kernel spreads over `sms` SMs.
    fn bind(&self, rank: &Rank, tp: &TpGemm, gemm: &Gemm, step: &GemmStep, sms: u32) -> Result<BoundGemm> {
        let l = tp.local();
        let (a_base, a_row, sa) = self.row_space(rank, tp, step.a.buf);
        let (c_base, c_row, _) = self.row_space(rank, tp, step.out.buf);
        let buffers = GemmBuffers {
            a: rows_binding("A", T::DTYPE, a_base, a_row, step.a),
            b: rank.gpu.bind("B", &self.b),
            c: rows_binding("C", DType::Bf16, c_base, c_row, step.out),
            scales: match (&self.scales, sa) {
                (Some(s), Some((sa_base, sa_row))) => {
                    Some((rows_binding("SA", DType::F32, sa_base, sa_row, step.a), rank.gpu.bind("SB", &s.sb)))
                }
                _ => None,
            },
            vectors: Vec::new(),
            matrices: Vec::new(),
            group_stores: Vec::new(),
        };
        gemm.bind_raw_on(GemmSize::new(step.a.rows, l.n, l.k), buffers, sms)
    }
}

/// Why a kernel that computes `spec` cannot serve a tensor-parallel GEMM,
/// if it cannot: one with per-tensor scales, with A's block scales
/// M-major (the ranks split and gather SA by rows with A), whose
/// epilogue reads vectors or matrices, or whose output is not a bf16 C
/// alone (an FP8 C, group stores).
pub fn unsupported(spec: &GemmSpec) -> Option<String> {
    if !spec.vectors.is_empty() {
        let names: Vec<&str> = spec.vectors.iter().map(|v| v.name.as_str()).collect();
        return Some(format!("the kernel's epilogue reads vectors {names:?}; tensor-parallel GEMMs do not split or bind them"));
    }
    if !spec.matrices.is_empty() {
        let names: Vec<&str> = spec.matrices.iter().map(|x| x.name.as_str()).collect();
        return Some(format!("the kernel's epilogue reads matrices {names:?}; tensor-parallel GEMMs do not split or bind them"));
    }
    if let Some(g) = &spec.gated {
        return Some(format!(
            "the kernel's epilogue reads {} interleaved parts of the product (C[M,{}]); tensor-parallel GEMMs split and gather C[M,N]",
            g.parts, g.cols
        ));
    }
    if spec.output.dtype != DType::Bf16 || !spec.output.group_stores.is_empty() {
        let stores: Vec<&str> = spec.output.group_stores.iter().map(|s| s.name.as_str()).collect();
        return Some(format!(
            "the kernel writes {} {} and group stores {stores:?}; tensor-parallel GEMMs split and gather a bf16 C alone",
            spec.output.dtype, spec.output.name
        ));
    }
    match (spec.scales, spec.sa_layout) {
        (Scales::PerTensor, _) => Some("per-tensor FP8 scales are not supported; use a bf16 or block-scaled kernel".into()),
        (Scales::Block, SaLayout::MMajor) => Some(
            "A's block scales are M-major (SA[KB,M]); the ranks split and gather SA by rows with A, so it must be SA[M,KB] \
             (examples/gemm_fp8_blockscaled_sa_k_major.tile)"
                .into(),
        ),
        (Scales::None | Scales::Block, _) => None,
    }
}

/// A rank's part of a tensor-parallel GEMM, ready to run.
pub struct TpRank<'r, T: TpElement> {
    rank: &'r Rank,
    tp: TpGemm,
    bufs: Buffers<T>,
    fused: Vec<(GemmStep, BoundGemm)>,
    whole: BoundGemm,
    chunk_ready: Vec<CudaEvent>,
    forked: CudaEvent,
    joined: CudaEvent,
}

impl<'r, T: TpElement> TpRank<'r, T> {
    /// Uploads rank `rank`'s `inputs` (its shard), allocates the gathered or
    /// partial buffer and C, and binds `gemm` to every launch of `tp`'s
    /// schedule. `gemm` must take A and B of type `T`, and block scales
    /// exactly when `inputs` has them.
    ///
    /// `comm_sms`: SMs the overlapped GEMMs leave to the collectives. A
    /// persistent kernel's CTAs each own a fixed share of the tiles, so a
    /// CTA that waits for an SM the collective holds finishes its share
    /// that much later; a grid over the other SMs does not wait. (A tiles
    /// grid is unaffected: its CTAs take free SMs as they come.)
    pub fn new(rank: &'r Rank, gemm: &Gemm, tp: TpGemm, inputs: &Inputs<T>, comm_sms: u32) -> Result<Self> {
        tp.validate().map_err(RuntimeError::TpArgs)?;
        if let Some(why) = unsupported(gemm.spec()) {
            return Err(RuntimeError::TpArgs(why));
        }
        let scales = gemm.spec().scales;
        if (scales == Scales::Block) != inputs.scales.is_some() {
            return Err(RuntimeError::TpArgs(format!(
                "the kernel takes {scales:?} scales and the inputs {} block scales: a tensor-parallel GEMM is bf16, or FP8 with block scales on both sides",
                if inputs.scales.is_some() { "have" } else { "have no" }
            )));
        }
        let bufs = Buffers::new(rank, &tp, inputs)?;
        let all = rank.gpu.num_sms;
        if comm_sms >= all {
            return Err(RuntimeError::TpArgs(format!("{comm_sms} SMs left to communication, the GPU has {all}")));
        }
        let fused = tp
            .gemm_steps(rank.rank)
            .into_iter()
            .map(|g| Ok((g, bufs.bind(rank, &tp, gemm, &g, all - comm_sms)?)))
            .collect::<Result<_>>()?;
        let whole = bufs.bind(rank, &tp, gemm, &tp.whole_gemm(), all)?;
        let event = || rank.gpu.ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING)).ctx("cuEventCreate");
        Ok(TpRank {
            rank,
            tp,
            bufs,
            fused,
            whole,
            chunk_ready: (0..tp.chunks).map(|_| event()).collect::<Result<_>>()?,
            forked: event()?,
            joined: event()?,
        })
    }

    fn fork(&self) -> Result<()> {
        self.forked.record(&self.rank.gpu.stream).ctx("cuEventRecord(fork)")?;
        self.rank.comm_stream.wait(&self.forked).ctx("cuStreamWaitEvent(fork)")
    }

    fn join(&self) -> Result<()> {
        self.joined.record(&self.rank.comm_stream).ctx("cuEventRecord(join)")?;
        self.rank.gpu.stream.wait(&self.joined).ctx("cuStreamWaitEvent(join)")
    }

    /// One collective on the communication stream.
    fn collective(&mut self, step: &CommStep) -> Result<()> {
        let rank = self.rank;
        let range = |r: Rows, row_len: u64| (r.row * row_len) as usize..((r.row + r.rows) * row_len) as usize;
        let l = self.tp.local();
        let b = &mut self.bufs;
        match self.tp.mode {
            Mode::AllGatherGemm => {
                let gathered = b.gathered.as_mut().expect("an all-gather GEMM has a gathered buffer");
                let send = b.a.slice(range(step.send, l.k));
                let mut recv = gathered.slice_mut(range(step.recv, l.k));
                rank.nccl("ncclGroupStart", cudarc::nccl::group_start())?;
                let a = rank.nccl("ncclAllGather(A)", rank.comm.all_gather(&send, &mut recv));
                let sa = match &mut b.scales {
                    Some(DeviceScales { sa, sa_gathered: Some(sa_gathered), .. }) => {
                        let kb = l.k.div_ceil(SCALE_BLOCK as u64);
                        let send = sa.slice(range(step.send, kb));
                        let mut recv = sa_gathered.slice_mut(range(step.recv, kb));
                        rank.nccl("ncclAllGather(SA)", rank.comm.all_gather(&send, &mut recv)).map(drop)
                    }
                    _ => Ok(()),
                };
                rank.nccl("ncclGroupEnd", cudarc::nccl::group_end())?;
                a?;
                sa
            }
            Mode::GemmReduceScatter => {
                let partial = b.partial.as_ref().expect("a reduce-scatter GEMM has a partial buffer");
                let send = partial.slice(range(step.send, l.n));
                let mut recv = b.c.slice_mut(range(step.recv, l.n));
                rank.nccl("ncclReduceScatter", rank.comm.reduce_scatter(&send, &mut recv, &ReduceOp::Sum)).map(drop)
            }
        }
    }

    /// The collectives of `steps`; with `ordered`, each waits for or
    /// signals its chunk's event.
    fn collectives(&mut self, steps: &[CommStep], ordered: bool) -> Result<()> {
        for step in steps {
            if ordered && self.tp.mode == Mode::GemmReduceScatter {
                self.rank.comm_stream.wait(&self.chunk_ready[step.chunk]).ctx("cuStreamWaitEvent(chunk computed)")?;
            }
            self.collective(step)?;
            if ordered && self.tp.mode == Mode::AllGatherGemm {
                self.chunk_ready[step.chunk].record(&self.rank.comm_stream).ctx("cuEventRecord(chunk gathered)")?;
            }
        }
        Ok(())
    }

    fn gemms(&mut self) -> Result<()> {
        let stream = self.rank.gpu.stream.clone();
        for (step, bound) in &mut self.fused {
            if let Some(s) = step.wait {
                stream.wait(&self.chunk_ready[s]).ctx("cuStreamWaitEvent(chunk gathered)")?;
            }
            bound.launch(&stream)?;
            if let Some(s) = step.signal {
                self.chunk_ready[s].record(&stream).ctx("cuEventRecord(chunk computed)")?;
            }
        }
        Ok(())
    }

    /// The overlapped operation: chunked collectives and GEMMs on two
    /// streams (asynchronous; it ends on the GPU stream).
    pub fn fused(&mut self) -> Result<()> {
        self.fork()?;
        let steps = self.tp.comm_steps();
        match self.tp.mode {
            Mode::AllGatherGemm => {
                self.collectives(&steps, true)?;
                self.gemms()?;
            }
            Mode::GemmReduceScatter => {
                self.gemms()?;
                self.collectives(&steps, true)?;
            }
        }
        self.join()
    }

    /// The communication alone, unchunked (asynchronous).
    pub fn comm_alone(&mut self) -> Result<()> {
        self.fork()?;
        self.collectives(&self.tp.unchunked().comm_steps(), false)?;
        self.join()
    }

    /// The rank's whole GEMM alone, one launch (asynchronous).
    pub fn gemm_alone(&mut self) -> Result<()> {
        let stream = self.rank.gpu.stream.clone();
        self.whole.launch(&stream)
    }

    /// Communication then GEMM (or GEMM then communication), unchunked and
    /// not overlapped: what the operation costs without this module.
    pub fn sequential(&mut self) -> Result<()> {
        match self.tp.mode {
            Mode::AllGatherGemm => {
                self.comm_alone()?;
                self.gemm_alone()
            }
            Mode::GemmReduceScatter => {
                self.gemm_alone()?;
                self.comm_alone()
            }
        }
    }

    /// Poisons every buffer the operation writes (NaN), runs it once and
    /// returns this rank's C.
    pub fn run_checked(&mut self) -> Result<Matrix<bf16>> {
        let gpu = &self.rank.gpu;
        let b = &mut self.bufs;
        gpu.poison16(&mut b.c, POISON_BF16)?;
        if let Some(p) = &mut b.partial {
            gpu.poison16(p, POISON_BF16)?;
        }
        if let Some(g) = &mut b.gathered {
            gpu.poison8(g, 0xFF)?;
        }
        if let Some(DeviceScales { sa_gathered: Some(g), .. }) = &mut b.scales {
            gpu.poison8(g, 0xFF)?;
        }
        self.fused()?;
        gpu.sync("tensor-parallel GEMM")?;
        let l = self.tp.local();
        let data = gpu.stream.clone_dtoh(&self.bufs.c).ctx("cuMemcpyDtoH(C)")?;
        Ok(Matrix::new(data, l.c_rows as usize, l.n as usize))
    }
}
