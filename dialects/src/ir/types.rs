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

/// A config parameter a tile dimension may name instead of a number
/// (`tensor<BLOCK_MxBLOCK_Kxbf16>`), as Triton's constexpr block sizes: one
/// program serves every configuration, and config selection binds the
/// parameters before any other pass runs. The set is closed: these are the
/// block sizes config selection knows how to choose.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Param {
    BlockM,
    BlockN,
    BlockK,
}

impl Param {
    pub const ALL: [Param; 3] = [Param::BlockM, Param::BlockN, Param::BlockK];

    pub fn name(self) -> &'static str {
        match self {
            Param::BlockM => "BLOCK_M",
            Param::BlockN => "BLOCK_N",
            Param::BlockK => "BLOCK_K",
        }
    }

    pub fn from_name(name: &str) -> Option<Param> {
        Param::ALL.into_iter().find(|p| p.name() == name)
    }

    /// The extent that stands for the parameter in a tile shape until it is
    /// bound: negative, so no concrete tile has it and shape equality still
    /// compares symbols.
    pub fn extent(self) -> i64 {
        -1 - self as i64
    }

    pub fn from_extent(extent: i64) -> Option<Param> {
        Param::ALL.into_iter().find(|p| p.extent() == extent)
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

    /// Whether a dimension still names a [`Param`].
    pub fn is_parametric(&self) -> bool {
        self.shape.iter().any(|&d| Param::from_extent(d).is_some())
    }

    /// The tile with every parameter replaced by its value.
    pub fn bind(&self, value: impl Fn(Param) -> i64) -> TileType {
        let shape = self.shape.iter().map(|&d| Param::from_extent(d).map_or(d, &value)).collect();
        TileType { shape, ..self.clone() }
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

/// A shared-memory buffer of the nv dialect: `stages` copies of a tile, laid
/// out by an NVMMA shared layout. The first dimension is the stage.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SmemType {
    pub stages: i64,
    pub tile: TileType,
}

impl SmemType {
    /// Bytes of one stage, padding included.
    pub fn stage_bytes(&self) -> i64 {
        let padding = match &self.tile.layout {
            Some(Layout::NvmmaShared { padding_elems, .. }) => i64::from(*padding_elems),
            _ => 0,
        };
        let (rows, cols) = match self.tile.shape[..] {
            [r, c] => (r, c + padding),
            _ => (1, self.tile.num_elements()),
        };
        rows * cols * i64::from(self.tile.elem.bits()) / 8
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Type {
    Scalar(ElemType),
    Tile(TileType),
    Ref(RefType),
    /// `!nv.smem<2x128x64xbf16, #tile.nvmma_shared<...>>`
    Smem(SmemType),
    /// `!nv.mbarrier<N>`: N mbarriers, one per pipeline stage.
    MBarrier(i64),
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

    pub fn as_smem(&self) -> Option<&SmemType> {
        match self {
            Type::Smem(s) => Some(s),
            _ => None,
        }
    }

    /// The element type of a scalar, tile, reference or buffer; barriers have
    /// none and report `i64`, their storage type.
    pub fn elem(&self) -> ElemType {
        match self {
            Type::Scalar(e) => *e,
            Type::Tile(t) => t.elem,
            Type::Ref(r) => r.elem,
            Type::Smem(s) => s.tile.elem,
            Type::MBarrier(_) => ElemType::I64,
        }
    }

    pub fn is_index(&self) -> bool {
        *self == Type::INDEX
    }

    /// Whether a tile dimension still names a [`Param`].
    pub fn is_parametric(&self) -> bool {
        self.as_tile().is_some_and(TileType::is_parametric)
    }
}
