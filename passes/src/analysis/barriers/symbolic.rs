//! Symbolic evaluation of the index arithmetic that picks an mbarrier's
//! stage and phase parity.
//!
//! The pipelining passes write `stage = it mod S` and
//! `phase = (it / S + c) mod 2` with `c` 0 or 1, where `it` is an iteration
//! number: a loop induction variable (or a loop-invariant value such as the
//! trip count) plus a constant, possibly counted on from the iterations of
//! earlier tiles (`done + kt` inside a persistent loop). Evaluating `tile.addi/subi/muli/divsi/remsi`
//! into that one shape is enough to check both; anything else is reported
//! as underivable rather than guessed at.

use tilec_dialects::ir::{Body, Op, Value, ValueDef};
use tilec_dialects::registry::Opcode;
use tilec_dialects::{nv, tile};

/// An iteration number: `base + offset`, then each `(div, add)` step in
/// turn as `x / div + add` (a loop of step 2 counts `(k - 1) / 2`). With
/// `earlier = (count, i)`, the opaque `count` of iterations done before the
/// loop started (earlier tiles of a persistent kernel) is added to the
/// running value before step `i` (after all of them when `i` is their
/// number). No base and no steps: the constant `offset`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Iteration {
    pub base: Option<Value>,
    pub offset: i64,
    pub steps: Vec<(i64, i64)>,
    pub earlier: Option<(Value, usize)>,
}

impl Iteration {
    pub fn constant(c: i64) -> Self {
        Iteration { base: None, offset: c, steps: Vec::new(), earlier: None }
    }

    fn of(v: Value) -> Self {
        Iteration { base: Some(v), offset: 0, steps: Vec::new(), earlier: None }
    }

    fn is_plain(&self) -> bool {
        self.base.is_some() && self.steps.is_empty() && self.earlier.is_none()
    }
}

/// An iteration, reduced `mod modulus` where there is one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexExpr {
    pub iteration: Iteration,
    pub modulus: Option<i64>,
}

impl IndexExpr {
    fn of(iteration: Iteration) -> Self {
        IndexExpr { iteration, modulus: None }
    }

    pub fn as_constant(&self) -> Option<i64> {
        let it = &self.iteration;
        (it.base.is_none() && it.steps.is_empty() && self.modulus.is_none()).then_some(it.offset)
    }

    fn plus(mut self, c: i64) -> Option<Self> {
        if self.modulus.is_some() {
            return None;
        }
        // Offsets past i64 are no form a schedule writes: not understood.
        match self.iteration.steps.last_mut() {
            Some((_, add)) => *add = add.checked_add(c)?,
            None => self.iteration.offset = self.iteration.offset.checked_add(c)?,
        }
        Some(self)
    }

    fn divided(mut self, d: i64) -> Option<Self> {
        if let Some(c) = self.as_constant() {
            return c.checked_div(d).map(|q| Self::of(Iteration::constant(q)));
        }
        if d == 1 {
            return Some(self);
        }
        if d <= 0 || self.modulus.is_some() {
            return None;
        }
        self.iteration.steps.push((d, 0));
        Some(self)
    }

    fn reduced(mut self, m: i64) -> Option<Self> {
        if let Some(c) = self.as_constant() {
            return c.checked_rem(m).map(|r| Self::of(Iteration::constant(r)));
        }
        if m <= 0 || self.modulus.is_some() {
            return None;
        }
        self.modulus = Some(m);
        Some(self)
    }
}

/// The form of `v`, or `None` where its arithmetic does not fit the shape.
/// Values not made by integer arithmetic (block arguments, `tile.dim`,
/// `tile.ceildivsi`, ...) are opaque iteration bases.
pub fn evaluate(body: &Body, v: Value) -> Option<IndexExpr> {
    let Some(op) = body.defining_op(v) else { return Some(IndexExpr::of(Iteration::of(v))) };
    let opcode = body.opcode(op);
    if opcode == Opcode::TileConstant {
        return body.ops[op].attrs.get_int("value").map(|c| IndexExpr::of(Iteration::constant(c)));
    }
    let Some(binary) = tile::IntBinary::of(body, op) else { return Some(IndexExpr::of(Iteration::of(v))) };
    let (lhs, rhs) = (|| evaluate(body, binary.lhs(body)), || evaluate(body, binary.rhs(body)));
    match opcode {
        Opcode::TileAddi => {
            let (a, b) = (lhs()?, rhs()?);
            match (a.as_constant(), b.as_constant()) {
                (_, Some(c)) => a.plus(c),
                (Some(c), _) => b.plus(c),
                _ => counted_on(body, a, b),
            }
        }
        Opcode::TileSubi => lhs()?.plus(rhs()?.as_constant()?.checked_neg()?),
        // A product of two run-time values (tiles done times the trip count)
        // is an opaque count; scaling an iteration by a constant is not a
        // form the schedules use.
        Opcode::TileMuli => match (lhs().and_then(|e| e.as_constant()), rhs().and_then(|e| e.as_constant())) {
            (Some(a), Some(b)) => Some(IndexExpr::of(Iteration::constant(a.checked_mul(b)?))),
            (None, None) => Some(IndexExpr::of(Iteration::of(v))),
            _ => None,
        },
        Opcode::TileDivsi => lhs()?.divided(rhs()?.as_constant()?),
        Opcode::TileRemsi => lhs()?.reduced(rhs()?.as_constant()?),
        _ => Some(IndexExpr::of(Iteration::of(v))),
    }
}

/// `done + it`: an iteration of a loop counted on from `done` iterations
/// before it. Exactly one side must be an induction variable (plus a
/// constant); the other is taken as the opaque count.
fn counted_on(body: &Body, a: IndexExpr, b: IndexExpr) -> Option<IndexExpr> {
    let is_iv = |e: &IndexExpr| {
        e.modulus.is_none() && e.iteration.earlier.is_none() && e.iteration.base.and_then(|v| induction_loop(body, v)).is_some()
    };
    let is_count = |e: &IndexExpr| e.modulus.is_none() && e.iteration.is_plain() && !is_iv(e);
    // The passes write `count + iteration`; where neither side is an
    // induction variable (the last iteration, `count + trip - 1`), the first
    // operand is the count.
    let (count, it) = if is_iv(&b) && is_count(&a) {
        (a, b)
    } else if is_iv(&a) && is_count(&b) {
        (b, a)
    } else if is_count(&a) && b.modulus.is_none() && b.iteration.earlier.is_none() && b.iteration.base.is_some() {
        (a, b)
    } else {
        return None;
    };
    let mut sum = it.plus(count.iteration.offset)?;
    let position = sum.iteration.steps.len();
    sum.iteration.earlier = Some((count.iteration.base.expect("plain"), position));
    Some(sum)
}

/// `v` picks a stage by consumer: the consumer index of an
/// `nv.warp_specialize` whose consumers take turns at tiles (`alternate`),
/// or a constant plus or minus it. Such a stage (a consumer's turn) serves
/// no iteration; its rounds are left to the trace check.
pub fn is_consumer_index(body: &Body, v: Value) -> bool {
    let constant = |x: Value| evaluate(body, x).and_then(|e| e.as_constant()).is_some();
    match body.values[v].def {
        ValueDef::BlockArg(block, 0) => {
            let region = body.blocks[block].parent;
            let owner = region.and_then(|r| body.regions[r].parent);
            owner.and_then(|op| nv::WarpSpecialize::of(body, op)).is_some_and(|ws| ws.alternate(body) && region == Some(ws.consumer(body)))
        }
        _ => {
            let Some(binary) = body.defining_op(v).and_then(|op| tile::IntBinary::of(body, op)) else { return false };
            let (lhs, rhs) = (binary.lhs(body), binary.rhs(body));
            matches!(body.opcode(binary.op()), Opcode::TileAddi | Opcode::TileSubi)
                && ((constant(lhs) && is_consumer_index(body, rhs)) || (is_consumer_index(body, lhs) && constant(rhs)))
        }
    }
}

/// The loop whose induction variable `v` is.
fn induction_loop(body: &Body, v: Value) -> Option<Op> {
    let ValueDef::BlockArg(block, 0) = body.values[v].def else { return None };
    let region = body.blocks[block].parent?;
    body.regions[region].parent.filter(|&op| body.opcode(op) == Opcode::TileFor)
}

/// An upper bound of `v` known from constants and `tile.minsi`.
fn upper_bound(body: &Body, v: Value) -> Option<i64> {
    if let Some(c) = evaluate(body, v).and_then(|e| e.as_constant()) {
        return Some(c);
    }
    let min = body.defining_op(v).and_then(|op| tile::Minsi::of(body, op))?;
    [min.lhs(body), min.rhs(body)].into_iter().filter_map(|x| upper_bound(body, x)).min()
}

/// The values `it` takes, `[lo, hi)`, where known: constants, and loop
/// induction variables with constant bounds (every step keeps the order).
///
/// An `earlier` count is taken as 0: the ranges describe the first tile,
/// which is what the first-round checks reason about.
pub fn iteration_range(body: &Body, it: &Iteration) -> (Option<i64>, Option<i64>) {
    let (lo, hi) = match it.base {
        None => (Some(0), Some(1)),
        Some(base) => match induction_loop(body, base) {
            Some(for_op) => {
                let bounds = &body.ops[for_op].operands;
                (evaluate(body, bounds[0]).and_then(|e| e.as_constant()), upper_bound(body, bounds[1]))
            }
            None => (None, None),
        },
    };
    let apply = |x: i64| it.steps.iter().fold(x + it.offset, |x, &(d, a)| x.div_euclid(d) + a);
    (lo.map(apply), hi.map(|h| apply(h - 1) + 1))
}

/// The least value `it` takes where [`iteration_range`] does not know it
/// and `it` is computed from a loop's induction variable alone (plus a
/// constant, then divided and added to): its value where the variable is
/// 0, since an iteration that picks a stage is never negative (`it mod S`
/// of a negative `it` is no stage) and each step only grows with it. A
/// loop that starts where an earlier one stopped (the odd K block after
/// `tile-pair-promotions`' pairs) has a lower bound no constant gives.
pub fn least_iteration(body: &Body, it: &Iteration) -> Option<i64> {
    let from_loop_variable = it.earlier.is_none() && it.base.and_then(|v| induction_loop(body, v)).is_some() && it.steps.iter().all(|&(d, _)| d > 0);
    iteration_range(body, it).0.or_else(|| from_loop_variable.then(|| it.steps.iter().fold(it.offset, |x, &(d, a)| x.div_euclid(d) + a)))
}

/// Whether every value `later` takes in a pass of its loop is past the
/// first value `it` takes: both computed from the same loop's induction
/// variable by the same divisions, `later` never below `it` after each
/// step and above it after the last (a refill `S` iterations ahead of the
/// wait of the same pass, `it + S` against `it`; the next chunk of resident
/// scales against this one, `it / C + 1` against `it / C`). Each step only
/// grows with the running value, so `later` stays past `it` at every
/// value of the variable.
pub fn always_after_first(body: &Body, later: &Iteration, it: &Iteration) -> bool {
    let from_loop_variable = |i: &Iteration| i.earlier.is_none() && i.base.and_then(|v| induction_loop(body, v)).is_some();
    let same_steps = later.steps.len() == it.steps.len() && later.steps.iter().zip(&it.steps).all(|(&(dl, al), &(di, ai))| dl == di && dl > 0 && al >= ai);
    let past = match (later.steps.last(), it.steps.last()) {
        (Some(&(_, al)), Some(&(_, ai))) => later.offset >= it.offset && al > ai,
        _ => later.offset > it.offset,
    };
    from_loop_variable(later) && from_loop_variable(it) && later.base == it.base && same_steps && past
}

/// The iteration a stage index selects on a barrier of `stages` stages:
/// `it mod S`, or `it` itself where `it` lies in `[0, S)` (a prologue loop
/// filling the first stages). `None` for a constant stage of a one-stage
/// barrier, which serves every iteration.
pub fn stage_iteration(body: &Body, stage: &IndexExpr, stages: i64) -> Result<Option<Iteration>, String> {
    let fits = match stage.modulus {
        Some(m) => m == stages,
        None => matches!(iteration_range(body, &stage.iteration), (Some(lo), Some(hi)) if lo >= 0 && hi <= stages),
    };
    if !fits {
        return Err(format!("stage index is not (iteration mod {stages}) for a barrier of {stages} stage(s)"));
    }
    Ok((stages > 1 || stage.as_constant().is_none()).then(|| stage.iteration.clone()))
}

/// A wait's phase: it waits for the phase of parity
/// `(iteration / S + add) mod 2` to complete.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Phase {
    pub iteration: Iteration,
    pub add: i64,
}

impl Phase {
    /// A fresh barrier counts as having completed a phase of parity 1, so a
    /// wait whose first round asks for parity 1 passes at once: the
    /// initial credit of an "empty" barrier. Loops are taken to start at 0
    /// where their bound is not a constant.
    pub fn starts_with_credit(&self, body: &Body, stages: i64) -> bool {
        let first = iteration_range(body, &self.iteration).0.unwrap_or(0);
        (first.div_euclid(stages) + self.add).rem_euclid(2) == 1
    }
}

/// Checks a wait's phase against its stage (`stage_it`, as
/// [`stage_iteration`] gives it): `(it / S) mod 2`, or `(it / S + 1) mod 2`
/// for a wait that starts with credit, on the stage's own iteration. With
/// one stage the phase is `it mod 2` and the stage tells nothing. A
/// constant phase is a single wait's, so only outside loops.
pub fn phase_of(phase: &IndexExpr, stages: i64, stage_it: Option<&Iteration>, in_loop: bool) -> Result<Phase, String> {
    if let Some(p) = phase.as_constant() {
        let c = match stage_it {
            _ if in_loop => return Err(format!("phase is the constant {p} inside a loop; it must flip each round, as (iteration / {stages}) mod 2")),
            None => 0,
            Some(Iteration { base: None, offset, .. }) => *offset,
            Some(_) => return Err(format!("phase is the constant {p} but the stage index varies")),
        };
        if !(0..=1).contains(&p) {
            return Err(format!("phase parity {p} is not 0 or 1"));
        }
        return Ok(Phase { iteration: Iteration::constant(c), add: (p - c / stages).rem_euclid(2) });
    }
    let wrong = || format!("phase is not (iteration / {stages}) mod 2 (or (iteration / {stages} + 1) mod 2 for a wait that starts with credit)");
    if phase.modulus != Some(2) {
        return Err(wrong());
    }
    let mut iteration = phase.iteration.clone();
    if stages == 1 {
        return Ok(Phase { iteration, add: 0 });
    }
    let popped = iteration.steps.pop();
    if iteration.earlier.is_some_and(|(_, at)| at > iteration.steps.len()) {
        return Err(wrong());
    }
    match popped {
        Some((d, add)) if d == stages && (0..=1).contains(&add) => match stage_it {
            Some(it) if *it != iteration => Err("phase follows a different iteration than the stage index".into()),
            _ => Ok(Phase { iteration, add }),
        },
        _ => Err(wrong()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tilec_dialects::parse_module;

    const LOOP: &str = "tile.func @f(%n: index) {
  %c0 = tile.constant 0 : index
  %c1 = tile.constant 1 : index
  %c2 = tile.constant 2 : index
  %c3 = tile.constant 3 : index
  %c4 = tile.constant 4 : index
  %ub = UB
  tile.for %kt = LB to %ub step %c1 {
DEFS
    tile.yield
  }
  tile.return
}
";

    /// Parses a loop over `%kt` (bounds `[%lb, %ub)`) whose body defines
    /// the given index values, and returns them by name, with the body.
    fn values(lb: &str, ub: &str, defs: &str) -> (Body, impl Fn(&str) -> Value) {
        let src = LOOP.replace("LB", lb).replace("UB", ub).replace("DEFS", defs);
        let func = parse_module(&src, "t.tile").expect("parses").functions.remove(0);
        let body = func.body;
        let names: Vec<(String, Value)> =
            body.values.keys().filter_map(|v| body.values[v].name_hint.clone().map(|n| (n, v))).collect();
        (body, move |name: &str| names.iter().find(|(n, _)| n == name).map(|&(_, v)| v).expect("defined"))
    }

    fn stage_phase(body: &Body, stage: Value, phase: Value, stages: i64) -> Result<Phase, String> {
        let it = stage_iteration(body, &evaluate(body, stage).expect("derivable"), stages)?;
        phase_of(&evaluate(body, phase).ok_or("underivable")?, stages, it.as_ref(), true)
    }

    const WS: &str = "    %stage = tile.remsi %kt, %c4 : index
    %round = tile.divsi %kt, %c4 : index
    %full_phase = tile.remsi %round, %c2 : index
    %next_round = tile.addi %round, %c1 : index
    %empty_phase = tile.remsi %next_round, %c2 : index
    %flat_phase = tile.remsi %kt, %c2 : index
    %stage3 = tile.remsi %kt, %c3 : index
    %next = tile.addi %kt, %c2 : index
    %next_stage = tile.remsi %next, %c4 : index
    %scaled = tile.muli %kt, %c2 : index
    %odd_phase = tile.remsi %scaled, %c2 : index";

    #[test]
    fn warp_specialised_forms_derive() {
        let (body, v) = values("%c0", "tile.ceildivsi %n, %c4 : index", WS);
        let kt = Iteration::of(v("kt"));
        let full = stage_phase(&body, v("stage"), v("full_phase"), 4).expect("derives");
        assert_eq!(full, Phase { iteration: kt.clone(), add: 0 });
        assert!(!full.starts_with_credit(&body, 4));
        let empty = stage_phase(&body, v("stage"), v("empty_phase"), 4).expect("derives");
        assert_eq!(empty, Phase { iteration: kt, add: 1 });
        assert!(empty.starts_with_credit(&body, 4));
        let next = stage_iteration(&body, &evaluate(&body, v("next_stage")).unwrap(), 4);
        assert_eq!(next, Ok(Some(Iteration { base: Some(v("kt")), offset: 2, steps: vec![], earlier: None })));
    }

    #[test]
    fn wrong_forms_are_rejected() {
        let (body, v) = values("%c0", "tile.ceildivsi %n, %c4 : index", WS);
        let phase_err = stage_phase(&body, v("stage"), v("flat_phase"), 4).unwrap_err();
        assert!(phase_err.contains("(iteration / 4) mod 2"), "{phase_err}");
        let stage_err = stage_phase(&body, v("stage3"), v("full_phase"), 4).unwrap_err();
        assert!(stage_err.contains("(iteration mod 4)"), "{stage_err}");
        assert!(stage_phase(&body, v("next_stage"), v("full_phase"), 4).unwrap_err().contains("different iteration"));
        assert_eq!(evaluate(&body, v("odd_phase")), None);
    }

    #[test]
    fn one_stage_and_bounded_prologue() {
        let (body, v) = values("%c0", "tile.minsi %n, %c2 : index", WS);
        // One stage: the stage is always 0 and the phase is it mod 2.
        let c0 = evaluate(&body, v("c0")).unwrap();
        assert_eq!(stage_iteration(&body, &c0, 1), Ok(None));
        assert_eq!(phase_of(&evaluate(&body, v("flat_phase")).unwrap(), 1, None, true).map(|p| p.add), Ok(0));
        assert!(phase_of(&c0, 1, None, true).is_err());
        assert_eq!(phase_of(&c0, 1, None, false), Ok(Phase { iteration: Iteration::constant(0), add: 0 }));
        // %kt < min(%n, 2) < 3 selects its stage directly.
        let kt = evaluate(&body, v("kt")).unwrap();
        assert_eq!(stage_iteration(&body, &kt, 3), Ok(Some(kt.iteration.clone())));
        assert!(stage_iteration(&body, &kt, 2).is_ok());
        let (unbounded, v) = values("%c0", "tile.ceildivsi %n, %c4 : index", WS);
        assert!(stage_iteration(&unbounded, &evaluate(&unbounded, v("kt")).unwrap(), 3).is_err());
    }

    /// A loop that starts where an earlier one stopped (no constant lower
    /// bound) still counts iterations from 0 up; a refill S iterations
    /// ahead of its loop's wait is always past the wait's first iteration,
    /// and so is the next chunk (`kt / C + 1`) past this one (`kt / C`).
    #[test]
    fn a_loop_of_unknown_start_counts_from_zero() {
        let defs = "    %ahead = tile.addi %kt, %c4 : index
    %behind = tile.subi %kt, %c1 : index
    %half = tile.divsi %kt, %c2 : index
    %next_half = tile.addi %half, %c1 : index
    %half_ahead = tile.divsi %ahead, %c2 : index";
        let (body, v) = values("%n", "tile.ceildivsi %n, %c4 : index", defs);
        let it = |name: &str| evaluate(&body, v(name)).expect("derivable").iteration;
        assert_eq!(iteration_range(&body, &it("ahead")).0, None);
        assert_eq!(least_iteration(&body, &it("ahead")), Some(4));
        assert_eq!(least_iteration(&body, &it("half")), Some(0));
        assert_eq!(least_iteration(&body, &it("next_half")), Some(1));
        assert!(always_after_first(&body, &it("ahead"), &it("kt")));
        assert!(!always_after_first(&body, &it("kt"), &it("ahead")));
        assert!(!always_after_first(&body, &it("behind"), &it("kt")));
        assert!(!always_after_first(&body, &it("half"), &it("kt")));
        assert!(always_after_first(&body, &it("next_half"), &it("half")));
        assert!(!always_after_first(&body, &it("half"), &it("next_half")));
        // (kt + 4) / 2 is past kt / 2 too, by its offset, which the rule does not weigh through a division: it stays conservative.
        assert!(!always_after_first(&body, &it("half_ahead"), &it("half")));
        let (bounded, v) = values("%c2", "tile.ceildivsi %n, %c4 : index", defs);
        assert_eq!(least_iteration(&bounded, &evaluate(&bounded, v("ahead")).unwrap().iteration), Some(6));
    }

    #[test]
    fn strided_loop_counts_iterations() {
        // tile-pipeline numbers a loop of step 2 from 1 as (k - 1) / 2.
        let defs = "    %shifted = tile.subi %kt, %c1 : index
    %it = tile.divsi %shifted, %c2 : index
    %stage = tile.remsi %it, %c4 : index
    %round = tile.divsi %it, %c4 : index
    %phase = tile.remsi %round, %c2 : index";
        let (body, v) = values("%c1", "tile.ceildivsi %n, %c4 : index", defs);
        let phase = stage_phase(&body, v("stage"), v("phase"), 4).expect("derives");
        assert_eq!(phase.iteration, Iteration { base: Some(v("kt")), offset: -1, steps: vec![(2, 0)], earlier: None });
        assert_eq!(iteration_range(&body, &phase.iteration), (Some(0), None));
    }
}
