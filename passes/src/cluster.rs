//! Clusters of CTAs: their size and the tile dimension along which the CTAs
//! of one cluster neighbour each other, shared by `tile-persistent` (which
//! hands out tile pairs) and `tile-cluster-split` (which multicasts the
//! operand the pair shares) and written as `tile.config`'s `cluster`.

use crate::words::named_by_words;

/// CTAs per cluster. The passes after config selection do not know the
/// target, so they take the default's: every target clusters alike (a test
/// checks).
pub const CLUSTER_SIZE: i64 = tilec_target::Target::DEFAULT.cluster_size as i64;

/// The tile dimension along which the CTAs of a cluster neighbour each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Along {
    /// Neighbouring M tiles, one N tile: B is shared.
    M,
    /// Neighbouring N tiles, one M tile: A is shared.
    N,
    /// No cluster.
    None,
}

named_by_words!(Along { M => "m", N => "n", None => "none" } default None);

impl Along {
    /// The tiles along M and along N a cluster takes each turn of the loop
    /// over tiles: a pair along the clustered dimension, one tile without.
    pub fn tiles(self) -> [i64; 2] {
        match self {
            Along::M => [CLUSTER_SIZE, 1],
            Along::N => [1, CLUSTER_SIZE],
            Along::None => [1, 1],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::CLUSTER_SIZE;
    use tilec_target::Target;

    #[test]
    fn every_target_clusters_alike() {
        assert!(Target::ALL.iter().all(|t| i64::from(t.cluster_size) == CLUSTER_SIZE));
    }
}
