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

/// Rows of a 128-byte swizzle atom: each CTA's share of a multicast tile
/// starts on one, or the swizzle pattern would not line up in its buffer
/// window.
const SWIZZLE_ATOM_ROWS: i64 = 8;

/// Whether the `ctas` CTAs of a cluster can each load an equal share of a
/// shared operand tile of `rows` rows, in whole swizzle atoms.
pub fn shares_whole_atoms(rows: i64, ctas: i64) -> bool {
    rows % (SWIZZLE_ATOM_ROWS * ctas) == 0
}

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
    /// The rows of the operand tile a cluster along this dimension shares
    /// for tiles of `block_m x block_n`: B's (`block_n`) along M, A's
    /// (`block_m`) along N.
    pub fn shared_rows(self, block_m: i64, block_n: i64) -> i64 {
        if self == Along::M { block_n } else { block_m }
    }

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
        assert!(shares_whole_atoms(Along::M.shared_rows(128, 160), 4) && !shares_whole_atoms(Along::M.shared_rows(128, 176), 4));
    }
}
