//! Attributes: the compile-time constants attached to ops.

use super::types::{ElemType, Type};

/// An attribute value, as MLIR spells them.
#[derive(Clone, Debug, PartialEq)]
pub enum Attribute {
    /// Present or absent, like MLIR's `unit`.
    Unit,
    /// `true` or `false`.
    Bool(bool),
    /// An integer of the given type (`128`, `0 : index`).
    Int(i64, ElemType),
    /// A float of the given type (`0.0 : f32`).
    Float(f64, ElemType),
    /// A string (`"grouped"`).
    String(String),
    /// An array (`[1, 2]`).
    Array(Vec<Attribute>),
    /// A type (`tensor<128x64xbf16>`).
    Type(Type),
    /// A nested dictionary (`tile.config = {...}`).
    Dict(Attributes),
}

impl Attribute {
    /// The value of an integer (or boolean, as 0 or 1) attribute.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Attribute::Int(v, _) => Some(*v),
            _ => None,
        }
    }

    /// An array attribute of i64 integers such as `[2, 1, 1]`.
    pub fn ints(values: &[i64]) -> Attribute {
        Attribute::Array(values.iter().map(|&v| Attribute::Int(v, ElemType::I64)).collect())
    }

    /// The integers of an array attribute such as `[2, 1, 1]`.
    pub fn as_ints(&self) -> Option<Vec<i64>> {
        match self {
            Attribute::Array(items) => items.iter().map(Attribute::as_int).collect(),
            _ => None,
        }
    }

    /// The strings of an array attribute such as `["M", "K"]`.
    pub fn as_strings(&self) -> Option<Vec<&str>> {
        match self {
            Attribute::Array(items) => items.iter().map(Attribute::as_str).collect(),
            _ => None,
        }
    }

    /// The value of a string attribute.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Attribute::String(s) => Some(s),
            _ => None,
        }
    }
}

/// An op's named attributes, kept in insertion order so printing is stable.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Attributes(Vec<(String, Attribute)>);

impl Attributes {
    /// An empty dictionary.
    pub fn new() -> Self {
        Attributes(Vec::new())
    }

    /// The attribute named `name`.
    pub fn get(&self, name: &str) -> Option<&Attribute> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, a)| a)
    }

    /// Whether an attribute named `name` is set.
    pub fn has(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// The integer attribute named `name`.
    pub fn get_int(&self, name: &str) -> Option<i64> {
        self.get(name).and_then(Attribute::as_int)
    }

    /// Sets `name`, replacing an existing value in place.
    pub fn set(&mut self, name: impl Into<String>, value: Attribute) {
        let name = name.into();
        match self.0.iter_mut().find(|(n, _)| *n == name) {
            Some(slot) => slot.1 = value,
            None => self.0.push((name, value)),
        }
    }

    /// Removes the attribute named `name` and returns it.
    pub fn remove(&mut self, name: &str) -> Option<Attribute> {
        let pos = self.0.iter().position(|(n, _)| n == name)?;
        Some(self.0.remove(pos).1)
    }

    /// The attributes in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Attribute)> {
        self.0.iter().map(|(n, a)| (n.as_str(), a))
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}
