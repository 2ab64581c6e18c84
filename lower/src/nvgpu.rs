//! The typed values `nvgpu` ops take, made from the raw pointers the kernel
//! works with: an mbarrier group (`!nvgpu.mbarrier.group`) over a barrier
//! group's bytes in the dynamic shared memory, a TMA descriptor
//! (`!nvgpu.tensormap.descriptor`) over a `!llvm.ptr` kernel parameter, and
//! a shared-memory box (`memref<..., 3>`) over a `!llvm.ptr<3>`. Each is an
//! LLVM memref descriptor (or the pointer) put behind
//! `builtin.unrealized_conversion_cast`; `convert-nvgpu-to-nvvm` casts back
//! to the same LLVM values and `reconcile-unrealized-casts` drops the pair.

use super::emitter::{mlir_type, Emitter};
use super::plan::Barriers;
use tilec_artifact::Swizzle;
use tilec_dialects::ElemType;

/// `!nvgpu.mbarrier.group` of `count` barriers in shared memory.
pub(crate) fn group_type(count: i64) -> String {
    format!("!nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = {count}>")
}

/// The `!nvgpu.tensormap.descriptor` of a TMA box (outer to inner extents)
/// of `elem` with `swizzle`, promoting 128-byte lines to L2 and filling zeros
/// outside the tensor, as the manifest encodes every descriptor.
pub(crate) fn descriptor_type(box_dims: &[i64], elem: ElemType, swizzle: Swizzle) -> String {
    let swizzle = match swizzle {
        Swizzle::B128 => "swizzle_128b",
        Swizzle::B64 => "swizzle_64b",
        Swizzle::B32 => "swizzle_32b",
        Swizzle::None => "none",
    };
    format!(
        "!nvgpu.tensormap.descriptor<tensor = {}, swizzle = {swizzle}, l2promo = l2promo_128b, oob = zero, interleave = none>",
        memref_type(box_dims, elem)
    )
}

/// `memref<D0xD1x...xT, 3>`: a row-major box in shared memory.
pub(crate) fn memref_type(shape: &[i64], elem: ElemType) -> String {
    let dims: Vec<String> = shape.iter().map(i64::to_string).collect();
    format!("memref<{}x{}, 3>", dims.join("x"), mlir_type(elem))
}

/// The kernel parameter `param` (`!llvm.ptr`) as a descriptor of type `ty`,
/// named `hint`.
pub(crate) fn typed_descriptor(em: &mut Emitter, param: &str, ty: &str, hint: &str) -> String {
    em.assign(hint, format!("builtin.unrealized_conversion_cast {param} : !llvm.ptr to {ty}"))
}

/// The barrier group `bars` of the dynamic shared memory at `smem`, as an
/// `!nvgpu.mbarrier.group` (a `memref<count x i64, 3>` underneath) named
/// `hint`.
pub(crate) fn barrier_group(em: &mut Emitter, smem: &str, bars: &Barriers, hint: &str) -> String {
    let base = em.assign("bars", format!("llvm.getelementptr {smem}[{}] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8", bars.offset));
    let desc = memref_descriptor(em, &base, &[bars.count]);
    em.assign(hint, format!("builtin.unrealized_conversion_cast {desc} : {} to {}", descriptor_struct(1), group_type(bars.count)))
}

/// The box of `shape` (row-major) at `ptr` in shared memory, as a memref.
pub(crate) fn shared_memref(em: &mut Emitter, ptr: &str, shape: &[i64], elem: ElemType) -> String {
    let desc = memref_descriptor(em, ptr, shape);
    em.assign("box", format!("builtin.unrealized_conversion_cast {desc} : {} to {}", descriptor_struct(shape.len()), memref_type(shape, elem)))
}

/// An `i32` as an `index`, which `nvgpu` ops take for indices and counts.
pub(crate) fn index(em: &mut Emitter, value: &str) -> String {
    em.assign("idx", format!("arith.index_cast {value} : i32 to index"))
}

/// The LLVM struct of a rank-`rank` memref descriptor.
fn descriptor_struct(rank: usize) -> String {
    format!("!llvm.struct<(ptr<3>, ptr<3>, i64, array<{rank} x i64>, array<{rank} x i64>)>")
}

/// A memref descriptor of a contiguous row-major `shape` at `ptr`: both
/// pointers `ptr`, offset 0, the sizes and their suffix products as strides.
fn memref_descriptor(em: &mut Emitter, ptr: &str, shape: &[i64]) -> String {
    let ty = descriptor_struct(shape.len());
    let mut d = em.assign("memref", format!("llvm.mlir.undef : {ty}"));
    d = em.assign("memref", format!("llvm.insertvalue {ptr}, {d}[0] : {ty}"));
    d = em.assign("memref", format!("llvm.insertvalue {ptr}, {d}[1] : {ty}"));
    let zero = em.i64(0);
    d = em.assign("memref", format!("llvm.insertvalue {zero}, {d}[2] : {ty}"));
    let mut stride = 1;
    for i in (0..shape.len()).rev() {
        let size = em.i64(shape[i]);
        d = em.assign("memref", format!("llvm.insertvalue {size}, {d}[3, {i}] : {ty}"));
        let s = em.i64(stride);
        d = em.assign("memref", format!("llvm.insertvalue {s}, {d}[4, {i}] : {ty}"));
        stride *= shape[i];
    }
    d
}
