//! Types: scalars, tiles (register/shared values with an optional layout) and
//! references to global tensors.

use super::layout::Layout;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ElemType {
    I1,
    I32,
    I64,
    Index,
    F32,
    F16,
    BF16,
    F8E4M3FN,
}

impl ElemType {
    pub const ALL: [ElemType; 8] = [
        ElemType::I1,
        ElemType::I32,
        ElemType::I64,
        ElemType::Index,
        ElemType::F32,
        ElemType::F16,
        ElemType::BF16,
        ElemType::F8E4M3FN,
    ];

    /// The spelling MLIR uses for the builtin type.
    pub fn mnemonic(self) -> &'static str {
        match self {
            ElemType::I1 => "i1",
            ElemType::I32 => "i32",
            ElemType::I64 => "i64",
            ElemType::Index => "index",
            ElemType::F32 => "f32",
            ElemType::F16 => "f16",
            ElemType::BF16 => "bf16",
            ElemType::F8E4M3FN => "f8E4M3FN",
        }
    }

    pub fn from_mnemonic(s: &str) -> Option<ElemType> {
        ElemType::ALL.into_iter().find(|e| e.mnemonic() == s)
    }

    /// Storage width in bits; `index` is 64-bit on every target we lower to.
    pub fn bits(self) -> u32 {
        match self {
            ElemType::I1 => 1,
            ElemType::F8E4M3FN => 8,
            ElemType::F16 | ElemType::BF16 => 16,
            ElemType::I32 | ElemType::F32 => 32,
            ElemType::I64 | ElemType::Index => 64,
        }
    }

    pub fn is_float(self) -> bool {
        matches!(self, ElemType::F32 | ElemType::F16 | ElemType::BF16 | ElemType::F8E4M3FN)
    }

    pub fn is_integer(self) -> bool {
        !self.is_float()
    }
}

/// A tile: a statically shaped block of elements that lives in registers or
/// shared memory. The layout says how it is spread over threads or swizzled
/// in shared memory; the tile dialect leaves it open.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TileType {
    pub shape: Vec<i64>,
    pub elem: ElemType,
    pub layout: Option<Layout>,
}

impl TileType {
    pub fn new(shape: Vec<i64>, elem: ElemType) -> Self {
        TileType { shape, elem, layout: None }
    }

    pub fn num_elements(&self) -> i64 {
        self.shape.iter().product()
    }

    pub fn with_layout(&self, layout: Option<Layout>) -> TileType {
        TileType { layout, ..self.clone() }
    }
}

/// One dimension of a global tensor: known, or `?` until run time.
pub type Dim = Option<i64>;

/// A reference to a row-major global tensor (the last dimension is
/// contiguous), as a kernel argument.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RefType {
    pub shape: Vec<Dim>,
    pub elem: ElemType,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Type {
    Scalar(ElemType),
    Tile(TileType),
    Ref(RefType),
}

impl Type {
    pub const INDEX: Type = Type::Scalar(ElemType::Index);

    pub fn as_tile(&self) -> Option<&TileType> {
        match self {
            Type::Tile(t) => Some(t),
            _ => None,
        }
    }

    pub fn as_ref_type(&self) -> Option<&RefType> {
        match self {
            Type::Ref(r) => Some(r),
            _ => None,
        }
    }

    /// The element type of a scalar, tile or reference.
    pub fn elem(&self) -> ElemType {
        match self {
            Type::Scalar(e) => *e,
            Type::Tile(t) => t.elem,
            Type::Ref(r) => r.elem,
        }
    }

    pub fn is_index(&self) -> bool {
        *self == Type::INDEX
    }
}
