//! Clusters of CTAs: how many CTAs one holds and the tile dimension along
//! which they neighbour each other, shared by `tile-persistent` (which
//! hands out a cluster's tiles together) and `tile-cluster-split` (which
//! multicasts the operand those tiles share) and written as `tile.config`'s
//! `cluster` and `cluster_ctas`.

use crate::words::named_by_words;

/// CTAs per cluster where a config names a cluster and not its size: a
/// pair, as DeepGEMM's clusters are.
pub const DEFAULT_CLUSTER_CTAS: i64 = 2;

/// The cluster sizes the passes build: powers of two, so that a shared
/// operand tile's rows (a multiple of 8 each CTA's share) divide evenly,
/// up to the portable maximum.
pub const CLUSTER_CTAS: [i64; 3] = [2, 4, 8];

/// Why `ctas` CTAs cannot form a cluster, if they cannot.
pub fn check_cluster_ctas(ctas: i64) -> Result<(), String> {
    if CLUSTER_CTAS.contains(&ctas) {
        return Ok(());
    }
    let sizes: Vec<String> = CLUSTER_CTAS.iter().map(i64::to_string).collect();
    Err(format!("a cluster holds {} CTAs, not {ctas}", sizes.join(", ")))
}

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
    /// The tiles along M and along N a cluster of `ctas` CTAs takes each
    /// turn of the loop over tiles: `ctas` along the clustered dimension,
    /// one tile without a cluster.
    pub fn tiles(self, ctas: i64) -> [i64; 2] {
        match self {
            Along::M => [ctas, 1],
            Along::N => [1, ctas],
            Along::None => [1, 1],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tilec_target::Target;

    #[test]
    fn every_cluster_size_fits_every_target() {
        assert!(Target::ALL.iter().all(|t| CLUSTER_CTAS.iter().all(|&c| c <= i64::from(t.max_cluster_size))));
        assert!(CLUSTER_CTAS.contains(&DEFAULT_CLUSTER_CTAS));
        assert!(check_cluster_ctas(3).unwrap_err().contains("2, 4, 8 CTAs, not 3"));
        assert_eq!(Along::N.tiles(4), [1, 4]);
    }
}
