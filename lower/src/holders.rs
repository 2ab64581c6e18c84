//! The threads that hold a register tile, as the workspace reductions
//! (split-K's `tile.reduce_splits`, stream-K's hand-over) see them: the
//! whole CTA, or the consumer warpgroups of a warp-specialised kernel that
//! share each tile's rows. Each holder group meets at its own barrier, and
//! its first thread acts for it on the workspace's counters and flags.

use super::emitter::Emitter;
use super::roles;

/// Holder groups a workspace region has counters or flags for: the
/// consumer warpgroups of a warp-specialised kernel (at most two), or the
/// one CTA-wide group.
pub(crate) const MAX_GROUPS: i64 = 2;

/// The threads that hold a tile, as one thread sees them.
pub(crate) struct Holders {
    /// This thread's index among them (i32).
    pub index: String,
    /// How many threads hold the tile.
    pub count: i64,
    /// This thread's holder group (i32): its warpgroup among the consumers, or 0.
    pub group: String,
    /// Where the group meets and who acts for it.
    pub scope: Scope,
}

/// A holder group: the whole CTA, or one consumer warpgroup.
pub(crate) enum Scope {
    /// Every thread of the CTA; `is_leader` is thread 0's condition.
    Cta { is_leader: String },
    /// The warpgroup `wg` (CTA-wide index) of thread `tid`.
    Warpgroup { wg: String, tid: String },
}

/// The group's threads meet.
pub(crate) fn meet(em: &mut Emitter, h: &Holders) {
    match &h.scope {
        Scope::Cta { .. } => em.line("gpu.barrier"),
        Scope::Warpgroup { wg, .. } => roles::warpgroup_barrier(em, Some(wg)),
    }
}

/// Whether this thread is the group's first, which acts for it (an i1).
pub(crate) fn is_first(em: &mut Emitter, h: &Holders) -> String {
    match &h.scope {
        Scope::Cta { is_leader } => is_leader.clone(),
        Scope::Warpgroup { tid, .. } => roles::warpgroup_leader(em, tid),
    }
}

/// Opens a region the group's first thread runs (closed with `em.close`).
pub(crate) fn open_first(em: &mut Emitter, h: &Holders) {
    let first = is_first(em, h);
    em.open(format!("scf.if {first} {{"));
}

/// The group's threads meet, and each learns whether `flag` (i32) is
/// non-zero in any of them (an i1, named `name`): the barrier's OR hands
/// one thread's verdict to the whole group.
pub(crate) fn meet_and_vote(em: &mut Emitter, h: &Holders, flag: &str, name: &str) -> String {
    let any = match &h.scope {
        Scope::Cta { .. } => em.assign(
            "vote",
            format!("llvm.inline_asm has_side_effects asm_dialect = att \"{{\\0A.reg .pred q, p;\\0Asetp.ne.u32 q, $1, 0;\\0Abar.red.or.pred p, 0, q;\\0Aselp.u32 $0, 1, 0, p;\\0A}}\", \"=r,r\" {flag} : (i32) -> i32"),
        ),
        Scope::Warpgroup { wg, .. } => {
            let id = roles::warpgroup_barrier_id(em, wg);
            em.assign(
                "vote",
                format!(
                    "llvm.inline_asm has_side_effects asm_dialect = att \"{{\\0A.reg .pred q, p;\\0Asetp.ne.u32 q, $1, 0;\\0Abar.red.or.pred p, $2, {}, q;\\0Aselp.u32 $0, 1, 0, p;\\0A}}\", \"=r,r,r\" {flag}, {id} : (i32, i32) -> i32",
                    roles::WARPGROUP_THREADS
                ),
            )
        }
    };
    let zero = em.i32(0);
    em.assign(name, format!("arith.cmpi ne, {any}, {zero} : i32"))
}
