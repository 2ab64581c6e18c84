//! Types: scalars, tiles (register/shared values with an optional layout) and
//! references to global tensors.

use super::layout::Layout;

/// The element type of a scalar, a tile or a tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ElemType {
    /// A 1-bit boolean (`i1`), as comparisons give.
    I1,
    /// A 32-bit signless integer.
    I32,
    /// A 64-bit signless integer.
    I64,
    /// An index: a 32-bit signed integer in the kernel.
    Index,
    /// IEEE single precision.
    F32,
    /// IEEE half precision.
    F16,
    /// bfloat16: 8 exponent and 7 mantissa bits.
    BF16,
    /// FP8 E4M3 with no infinities (OCP `E4M3FN`, MLIR `f8E4M3FN`).
    F8E4M3FN,
}

impl ElemType {
    /// Every element type, in declaration order.
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

    /// The element type MLIR spells `s` (`bf16`, `index`, ...), if any.
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

    /// Whether this is a floating-point type.
    pub fn is_float(self) -> bool {
        matches!(self, ElemType::F32 | ElemType::F16 | ElemType::BF16 | ElemType::F8E4M3FN)
    }

    /// Whether this is an integer type (`index` included).
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
    /// `BLOCK_M`: rows of the output tile.
    BlockM,
    /// `BLOCK_N`: columns of the output tile.
    BlockN,
    /// `BLOCK_K`: the K step of one loop iteration.
    BlockK,
}

impl Param {
    /// Every parameter.
    pub const ALL: [Param; 3] = [Param::BlockM, Param::BlockN, Param::BlockK];

    /// The parameter's name as the IR spells it (`BLOCK_M`).
    pub fn name(self) -> &'static str {
        match self {
            Param::BlockM => "BLOCK_M",
            Param::BlockN => "BLOCK_N",
            Param::BlockK => "BLOCK_K",
        }
    }

    /// The parameter named `name`, if any.
    pub fn from_name(name: &str) -> Option<Param> {
        Param::ALL.into_iter().find(|p| p.name() == name)
    }

    /// The extent that stands for the parameter in a tile shape until it is
    /// bound: negative, so no concrete tile has it and shape equality still
    /// compares symbols.
    pub fn extent(self) -> i64 {
        -1 - self as i64
    }

    /// The parameter whose placeholder extent (see [`Param::extent`]) is `extent`, if any.
    pub fn from_extent(extent: i64) -> Option<Param> {
        Param::ALL.into_iter().find(|p| p.extent() == extent)
    }
}

/// A tile: a statically shaped block of elements that lives in registers or
/// shared memory. The layout says how it is spread over threads or swizzled
/// in shared memory; the tile dialect leaves it open.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TileType {
    /// The extent of each dimension (a negative extent is a [`Param`] not yet bound).
    pub shape: Vec<i64>,
    /// The element type.
    pub elem: ElemType,
    /// Where the elements live; `None` until `tile-assign-layouts` chooses.
    pub layout: Option<Layout>,
}

impl TileType {
    /// A tile with no layout.
    pub fn new(shape: Vec<i64>, elem: ElemType) -> Self {
        TileType { shape, elem, layout: None }
    }

    /// Elements in the tile (the product of its extents).
    pub fn num_elements(&self) -> i64 {
        self.shape.iter().product()
    }

    /// The same tile with `layout`.
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
    /// The extent of each dimension, `None` where known only at run time.
    pub shape: Vec<Dim>,
    /// The element type.
    pub elem: ElemType,
}

/// A shared-memory buffer of the nv dialect: `stages` copies of a tile, laid
/// out by an NVMMA shared layout. The first dimension is the stage.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SmemType {
    /// How many copies of the tile the buffer holds (the pipeline's stages).
    pub stages: i64,
    /// One stage's tile, with its shared layout.
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

/// The type of a value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Type {
    /// A scalar.
    Scalar(ElemType),
    /// A tile in registers or shared memory.
    Tile(TileType),
    /// A global tensor (a kernel argument).
    Ref(RefType),
    /// `!nv.smem<2x128x64xbf16, #tile.nvmma_shared<...>>`
    Smem(SmemType),
    /// `!nv.mbarrier<N>`: N mbarriers, one per pipeline stage.
    MBarrier(i64),
}

impl Type {
    /// The `index` scalar type.
    pub const INDEX: Type = Type::Scalar(ElemType::Index);

    /// The tile type, if this is one.
    pub fn as_tile(&self) -> Option<&TileType> {
        match self {
            Type::Tile(t) => Some(t),
            _ => None,
        }
    }

    /// The tensor reference, if this is one.
    pub fn as_ref_type(&self) -> Option<&RefType> {
        match self {
            Type::Ref(r) => Some(r),
            _ => None,
        }
    }

    /// The shared buffer, if this is one.
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

    /// Whether this is the `index` scalar type.
    pub fn is_index(&self) -> bool {
        *self == Type::INDEX
    }

    /// Whether a tile dimension still names a [`Param`].
    pub fn is_parametric(&self) -> bool {
        self.as_tile().is_some_and(TileType::is_parametric)
    }
}
