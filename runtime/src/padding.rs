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
//! B stored `K x N` (whose rows are N) gets padded K - K zero rows instead;
//! where its N, or a TMA-stored C's, is what is unaligned, nothing is padded
//! and the launch is refused with the descriptor's error
//! ([`crate::gemm::GemmSpec::padded_k`] decides).

use crate::error::{DriverCtx, Result};
use crate::plan::TensorBinding;
use cudarc::driver::sys;
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr};
use std::sync::Arc;
use tilec_target::TMA_STRIDE_ALIGN_BYTES;

/// Whether a row of `elements` elements of `elem_bytes` bytes is one TMA
/// can address.
pub fn aligned(elements: u64, elem_bytes: u64) -> bool {
    (elements * elem_bytes).is_multiple_of(TMA_STRIDE_ALIGN_BYTES)
}

/// `k` rounded up to the next K whose rows of `elem_bytes`-byte elements
/// TMA can address.
pub fn padded(k: u64, elem_bytes: u64) -> u64 {
    let grain = TMA_STRIDE_ALIGN_BYTES / elem_bytes;
    k.div_ceil(grain) * grain
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

/// A row-major matrix as bound and as its padded copy holds it (zeros past
/// the copied bytes of each row and past the copied rows).
pub struct Padding {
    /// Rows of the caller's matrix, all copied.
    pub rows: u64,
    /// Bytes of one of them.
    pub row_bytes: u64,
    /// Rows of the copy.
    pub padded_rows: u64,
    /// Bytes of one row of the copy.
    pub padded_row_bytes: u64,
}

impl Repack {
    /// A zeroed buffer of `t`'s padded shape (allocated on `stream`, which
    /// the caller synchronises before any stream copies into it), bound
    /// under `t`'s name, and the copy that fills it from `t`.
    pub fn new(stream: &Arc<CudaStream>, t: &TensorBinding, shape: Padding) -> Result<(TensorBinding, Repack)> {
        let bytes = shape.padded_rows * shape.padded_row_bytes;
        let padded = stream.alloc_zeros::<u8>(bytes as usize).ctx("cuMemAlloc (padded operand)")?;
        let addr = padded.device_ptr(stream).0;
        let binding = TensorBinding { name: t.name.clone(), dtype: t.dtype, addr, bytes };
        let repack = Repack { padded, src: t.addr, src_pitch: shape.row_bytes, dst_pitch: shape.padded_row_bytes, width: shape.row_bytes, rows: shape.rows };
        Ok((binding, repack))
    }

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
