//! Dense arenas indexed by small typed handles, as in Cranelift's
//! `PrimaryMap`: handles are `Copy`, compare cheaply, and cannot be confused
//! across entity kinds.

use std::marker::PhantomData;
use std::ops::{Index, IndexMut};

/// A typed index into an [`Arena`].
pub trait EntityRef: Copy + Eq {
    /// The reference to entry `index`.
    fn new(index: usize) -> Self;
    /// The entry's index.
    fn index(self) -> usize;
}

macro_rules! entity {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
        pub struct $name(u32);

        impl $crate::ir::EntityRef for $name {
            fn new(index: usize) -> Self {
                $name(u32::try_from(index).expect("arena holds more than u32::MAX entities"))
            }
            fn index(self) -> usize {
                self.0 as usize
            }
        }
    };
}
pub(crate) use entity;

/// A vector indexed by a typed reference: entries are never removed, so references stay valid.
#[derive(Clone, Debug)]
pub struct Arena<K, V> {
    items: Vec<V>,
    key: PhantomData<K>,
}

impl<K: EntityRef, V> Default for Arena<K, V> {
    fn default() -> Self {
        Arena { items: Vec::new(), key: PhantomData }
    }
}

impl<K: EntityRef, V> Arena<K, V> {
    /// Adds `value` and returns its reference.
    pub fn push(&mut self, value: V) -> K {
        self.items.push(value);
        K::new(self.items.len() - 1)
    }

    /// Entries in the arena.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether the arena is empty.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Every reference, in creation order.
    pub fn keys(&self) -> impl Iterator<Item = K> {
        (0..self.items.len()).map(K::new)
    }
}

impl<K: EntityRef, V> Index<K> for Arena<K, V> {
    type Output = V;
    fn index(&self, key: K) -> &V {
        &self.items[key.index()]
    }
}

impl<K: EntityRef, V> IndexMut<K> for Arena<K, V> {
    fn index_mut(&mut self, key: K) -> &mut V {
        &mut self.items[key.index()]
    }
}
