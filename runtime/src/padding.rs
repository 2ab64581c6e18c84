//! The fallback for a K whose rows TMA cannot address: TMA needs every row
//! of a tensor to start a multiple of 16 bytes after the one before, so A
//! (`M x K`) and B (`N x K`) need K a multiple of 8 BF16 or 16 FP8
//! elements. Where it is not, the bound call copies A and B into buffers
//! whose rows are K rounded up to that multiple, zero past K, before each
//! launch, and the kernel runs at the padded K: the zero columns add
//! nothing to the sums, and a block-scaled kernel's scales keep their
//! count, since 128-element scale blocks end on the same 16-byte rows. The
//! copies cost a read and a write of A and B a launch; `tilec compile
//! --shape` warns where a shape takes this path.
//!
//! B stored `K x N` (whose rows are N) gets K - padded K zero rows instead;
//! where its N, or a TMA-stored C's, is what is unaligned, nothing is padded
//! and the launch is refused with the descriptor's error.

use crate::error::{DriverCtx, Result};
use crate::gemm::{BLayout, GemmBuffers, GemmSize, GemmSpec};
use crate::plan::TensorBinding;
use cudarc::driver::sys;
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr};
use std::sync::Arc;

/// TMA's unit for a row's stride in global memory.
const ROW_ALIGN_BYTES: u64 = 16;

/// The K the kernel runs at for `size`: `None` where A's and B's rows are
/// aligned as they are, or where padding K would not make them so.
pub fn padded_k(spec: &GemmSpec, size: GemmSize) -> Option<u64> {
    let elem = spec.input.size_bytes() as u64;
    let aligned = |elements: u64| (elements * elem) % ROW_ALIGN_BYTES == 0;
    if aligned(size.k) || (spec.b_layout == BLayout::Kn && !aligned(size.n)) {
        return None;
    }
    let grain = ROW_ALIGN_BYTES / elem;
    Some(size.k.div_ceil(grain) * grain)
}

/// One operand's copy into its padded buffer: `rows` rows of `width` bytes,
/// `src_pitch` apart in the caller's buffer and `dst_pitch` apart in the
/// padded one.
pub struct Repack {
    padded: CudaSlice<u8>,
    src: u64,
    src_pitch: u64,
    dst_pitch: u64,
    width: u64,
    rows: u64,
}

impl Repack {
    /// Issues the copy on `stream` (asynchronous).
    pub fn issue(&self, stream: &Arc<CudaStream>) -> Result<()> {
        let (dst, _sync) = self.padded.device_ptr(stream);
        let copy = sys::CUDA_MEMCPY2D {
            srcXInBytes: 0,
            srcY: 0,
            srcMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
            srcHost: std::ptr::null(),
            srcDevice: self.src,
            srcArray: std::ptr::null_mut(),
            srcPitch: self.src_pitch as usize,
            dstXInBytes: 0,
            dstY: 0,
            dstMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
            dstHost: std::ptr::null_mut(),
            dstDevice: dst,
            dstArray: std::ptr::null_mut(),
            dstPitch: self.dst_pitch as usize,
            WidthInBytes: self.width as usize,
            Height: self.rows as usize,
        };
        unsafe { sys::cuMemcpy2DAsync_v2(&copy, stream.cu_stream()) }.result().ctx("cuMemcpy2DAsync")
    }
}

/// `buffers` with A and B replaced by zeroed buffers of K = `k` (allocated
/// on `stream`, which is synchronised so that their zeros are in place
/// before any stream copies into them), and the copies that fill them.
/// `size` is the caller's, its buffers already checked at it.
pub fn repack(stream: &Arc<CudaStream>, spec: &GemmSpec, size: GemmSize, k: u64, buffers: GemmBuffers) -> Result<(GemmBuffers, Vec<Repack>)> {
    let elem = spec.input.size_bytes() as u64;
    let (row, padded_row) = (size.k * elem, k * elem);
    // A's rows, and B's (N x K) rows or (K x N) its K - k zero rows after its own.
    let b = match spec.b_layout {
        BLayout::Nk => (size.n, row, padded_row, size.n, row),
        BLayout::Kn => (k, size.n * elem, size.n * elem, size.k, size.n * elem),
    };
    let mut repacks = Vec::with_capacity(2);
    let mut padded = |t: &TensorBinding, (rows, pitch, padded_pitch, copied_rows, width): (u64, u64, u64, u64, u64)| -> Result<TensorBinding> {
        let bytes = rows * padded_pitch;
        let buffer = stream.alloc_zeros::<u8>(bytes as usize).ctx("cuMemAlloc (padded operand)")?;
        let addr = buffer.device_ptr(stream).0;
        let binding = TensorBinding { name: t.name.clone(), dtype: t.dtype, addr, bytes };
        repacks.push(Repack { padded: buffer, src: t.addr, src_pitch: pitch, dst_pitch: padded_pitch, width, rows: copied_rows });
        Ok(binding)
    };
    let a = padded(&buffers.a, (size.m, row, padded_row, size.m, row))?;
    let b = padded(&buffers.b, b)?;
    stream.synchronize().ctx("cuStreamSynchronize")?;
    Ok((GemmBuffers { a, b, ..buffers }, repacks))
}
