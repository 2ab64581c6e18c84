//! The IR core: entity arenas, types, attributes, layouts and functions.

mod attributes;
mod body;
mod builder;
mod entity;
mod layout;
mod module;
mod types;

pub use attributes::{Attribute, Attributes};
pub use builder::{Builder, InsertPoint};
pub use body::{Block, BlockData, Body, Op, OpData, Region, RegionData, Value, ValueData, ValueDef};
pub use entity::{Arena, EntityRef};
pub use layout::Layout;
pub use module::{Function, Module};
pub use types::{Dim, ElemType, Param, RefType, SmemType, TileType, Type};
