//! The manifest's description of a GEMM program's epilogue
//! ([`tilec_artifact::Epilogue`]): the element-wise ops from the K loop's
//! accumulator to the stored tile, read from the program as written, before
//! any pass, so that the runtime's reference checks what the program says
//! rather than what the passes made of it.

use super::plan::dtype;
use std::collections::HashMap;
use tilec_artifact::{Along, BinaryFn, Epilogue, EpilogueValue, GroupStore, ReduceFn, UnaryFn};
use tilec_dialects::ir::{Attribute, Body, Value};
use tilec_dialects::registry::Opcode;
use tilec_dialects::{tile, Function};

/// The epilogue of `f`, a tile-level GEMM: one `tile.store` whose value is
/// made by element-wise ops from the result of the loop around the one dot,
/// from constants, from broadcast vectors, from tiles loaded at the
/// stored tile's coordinates (a residual), from the runs a
/// `tile.deinterleave` of the accumulator splits (gate and up projections)
/// and from reductions over groups of columns (`tile.reduce`); and the
/// values further stores write a group of columns at a time at the same
/// coordinates (an FP8 quantisation's scales). `None` for any other program
/// (no dot, several stores, an op the description has no word for): the
/// runtime's GEMM handle then refuses a kernel with extra tensors.
pub fn describe(f: &Function) -> Option<Epilogue> {
    let body = &f.body;
    let ops = body.walk_region(f.region);
    let dots: Vec<_> = ops.iter().copied().filter(|&o| matches!(body.opcode(o), Opcode::TileDot | Opcode::TileDotScaled)).collect();
    let stores: Vec<_> = ops.iter().filter_map(|&o| tile::Store::of(body, o)).collect();
    let (grouped, whole): (Vec<_>, Vec<_>) = stores.into_iter().partition(|s| s.group(body).is_some());
    let (&[dot], &[store]) = (&dots[..], &whole[..]) else { return None };
    let k_loop = body.parent_op(dot)?;
    let acc = *body.ops[k_loop].results.first()?;
    let (stored, at) = (store.value(body), store.indices(body).to_vec());
    let output = f.args().iter().position(|&a| a == store.tensor(body))?;
    let mut reader = Reader { f, acc, at, output, values: Vec::new(), index: HashMap::new() };
    // The values stored a group at a time first: the main output's is last.
    let mut group_stores = Vec::new();
    for g in grouped {
        if g.indices(body) != reader.at.as_slice() {
            return None;
        }
        let tensor = body.values[g.tensor(body)].name_hint.clone()?;
        group_stores.push(GroupStore { tensor, x: reader.value(g.value(body))?, group: u64::try_from(g.group(body)?).ok()? });
    }
    let last = reader.value(stored)?;
    (last + 1 == reader.values.len()).then_some(Epilogue { values: reader.values, group_stores })
}

struct Reader<'a> {
    f: &'a Function,
    acc: Value,
    /// The stored tile's coordinates: a tile loaded at the same ones of a
    /// tensor of C's shape is read element for element (a residual).
    at: Vec<Value>,
    /// The argument index of the stored tensor.
    output: usize,
    values: Vec<EpilogueValue>,
    /// Each IR value already described, by its index in `values`.
    index: HashMap<Value, usize>,
}

impl Reader<'_> {
    /// The index of `v`'s description, describing it (and its operands)
    /// first if needed.
    fn value(&mut self, v: Value) -> Option<usize> {
        if let Some(&i) = self.index.get(&v) {
            return Some(i);
        }
        let described = self.describe(v)?;
        let i = match described {
            Described::New(value) => {
                self.values.push(value);
                self.values.len() - 1
            }
            Described::Same(i) => i,
        };
        self.index.insert(v, i);
        Some(i)
    }

    fn describe(&mut self, v: Value) -> Option<Described> {
        if v == self.acc {
            return Some(Described::New(EpilogueValue::Acc));
        }
        let body: &Body = &self.f.body;
        let op = body.defining_op(v)?;
        let operands = body.ops[op].operands.clone();
        let described = match body.opcode(op) {
            Opcode::TileConstant => match body.ops[op].attrs.get("value")? {
                Attribute::Float(value, _) => Described::New(EpilogueValue::Splat { value: *value }),
                _ => return None,
            },
            Opcode::TileLoadBroadcast => {
                let load = tile::LoadBroadcast::of(body, op)?;
                let tensor = self.f.args().iter().position(|&a| a == load.tensor(body))?;
                let name = body.values[self.f.args()[tensor]].name_hint.clone()?;
                let along = if load.along(body) == "rows" { Along::Rows } else { Along::Cols };
                Described::New(EpilogueValue::Vector { tensor: name, along })
            }
            Opcode::TileLoad => {
                let load = tile::Load::of(body, op)?;
                let tensor = self.f.args().iter().position(|&a| a == load.tensor(body))?;
                let same_tile = load.indices(body) == self.at.as_slice() && !body.ops[op].attrs.has("elements");
                let dims = |arg: usize| self.f.arg_attrs.get(arg).and_then(|a| a.get("tile.dims"));
                let shaped_like_c = dims(tensor).is_some() && dims(tensor) == dims(self.output);
                if !(same_tile && shaped_like_c) {
                    return None;
                }
                Described::New(EpilogueValue::Matrix { tensor: body.values[self.f.args()[tensor]].name_hint.clone()? })
            }
            Opcode::TileDeinterleave if operands[0] == self.acc => {
                let d = tile::Deinterleave::of(body, op)?;
                let part = if v == d.first(body) { 0 } else { 1 };
                Described::New(EpilogueValue::AccPart { block: u64::try_from(d.block(body)).ok()?, part, parts: 2 })
            }
            Opcode::TileExtf => Described::Same(self.value(operands[0])?),
            Opcode::TileTruncf => {
                let to = dtype(body.value_type(v).elem())?;
                Described::New(EpilogueValue::Convert { to, x: self.value(operands[0])? })
            }
            Opcode::TileReduce => {
                let r = tile::Reduce::of(body, op)?;
                let f = match r.kind(body) {
                    "max" => ReduceFn::Max,
                    "min" => ReduceFn::Min,
                    _ => ReduceFn::Add,
                };
                let group = u64::try_from(r.group(body)).ok()?;
                Described::New(EpilogueValue::GroupReduce { f, x: self.value(operands[0])?, group })
            }
            Opcode::TileNegf => return self.unary(UnaryFn::Neg, operands[0]),
            Opcode::TileAbsf => return self.unary(UnaryFn::Abs, operands[0]),
            Opcode::TileExp => return self.unary(UnaryFn::Exp, operands[0]),
            Opcode::TileTanh => return self.unary(UnaryFn::Tanh, operands[0]),
            Opcode::TileErf => return self.unary(UnaryFn::Erf, operands[0]),
            Opcode::TileRsqrt => return self.unary(UnaryFn::Rsqrt, operands[0]),
            Opcode::TileAddf => return self.binary(BinaryFn::Add, &operands),
            Opcode::TileSubf => return self.binary(BinaryFn::Sub, &operands),
            Opcode::TileMulf => return self.binary(BinaryFn::Mul, &operands),
            Opcode::TileDivf => return self.binary(BinaryFn::Div, &operands),
            Opcode::TileMaxf => return self.binary(BinaryFn::Max, &operands),
            Opcode::TileMinf => return self.binary(BinaryFn::Min, &operands),
            _ => return None,
        };
        Some(described)
    }

    fn unary(&mut self, f: UnaryFn, operand: Value) -> Option<Described> {
        Some(Described::New(EpilogueValue::Unary { f, x: self.value(operand)? }))
    }

    fn binary(&mut self, f: BinaryFn, operands: &[Value]) -> Option<Described> {
        Some(Described::New(EpilogueValue::Binary { f, lhs: self.value(operands[0])?, rhs: self.value(operands[1])? }))
    }
}

/// A value's description: a new entry, or one it shares (a widening
/// conversion is exact).
enum Described {
    New(EpilogueValue),
    Same(usize),
}

#[cfg(test)]
mod tests {
    use super::*;
    use tilec_artifact::DType;

    fn describe_file(path: &str) -> Option<Epilogue> {
        let text = std::fs::read_to_string(format!("{}/../{path}", env!("CARGO_MANIFEST_DIR"))).expect("example");
        let module = tilec_dialects::parse_module(&text, path).expect("parses");
        describe(&module.functions[0])
    }

    #[test]
    fn a_plain_gemm_rounds_its_accumulator() {
        assert_eq!(describe_file("examples/gemm_bf16.tile"), Some(Epilogue::plain(DType::Bf16)));
    }

    #[test]
    fn bias_and_gelu_are_described_once_each() {
        let e = describe_file("examples/gemm_bias_gelu.tile").expect("described");
        assert_eq!(e.values[0], EpilogueValue::Acc);
        assert_eq!(e.vector_tensors(), vec![("Bias", Along::Cols)]);
        let tanh = e.values.iter().filter(|v| matches!(v, EpilogueValue::Unary { f: UnaryFn::Tanh, .. })).count();
        assert_eq!(tanh, 1);
        // The widening of the bias is exact and shares the bias's entry.
        assert!(e.values.iter().all(|v| Epilogue::operands(v).iter().all(|&i| i < e.values.len())));
        assert_eq!(e.values.last(), Some(&EpilogueValue::Convert { to: DType::Bf16, x: e.values.len() - 2 }));
    }

    #[test]
    fn a_residual_is_a_matrix_read_element_for_element() {
        let e = describe_file("examples/gemm_residual.tile").expect("described");
        assert!(e.values.contains(&EpilogueValue::Matrix { tensor: "R".into() }), "{e:?}");
    }

    #[test]
    fn gate_and_up_are_the_accumulators_two_parts() {
        let e = describe_file("examples/mlp_swiglu.tile").expect("described");
        for part in [0, 1] {
            assert!(e.values.contains(&EpilogueValue::AccPart { block: 128, part, parts: 2 }), "{e:?}");
        }
        assert!(!e.values.contains(&EpilogueValue::Acc), "the gating reads the parts, not the product's own column: {e:?}");
    }

    #[test]
    fn a_quantisation_stores_its_codes_last_and_its_scales_a_group_at_a_time() {
        let e = describe_file("examples/gemm_fp8_quantize.tile").expect("described");
        assert_eq!(e.values.last(), Some(&EpilogueValue::Convert { to: DType::F8e4m3, x: e.values.len() - 2 }), "{e:?}");
        let [scales] = &e.group_stores[..] else { panic!("one group store: {e:?}") };
        assert_eq!((scales.tensor.as_str(), scales.group), ("SQ", 128));
        assert!(matches!(e.values[scales.x], EpilogueValue::Binary { f: BinaryFn::Div, .. }), "{e:?}");
        let reductions: Vec<_> = e.values.iter().filter(|v| matches!(v, EpilogueValue::GroupReduce { f: ReduceFn::Max, group: 128, .. })).collect();
        assert_eq!(reductions.len(), 1, "{e:?}");
    }

    #[test]
    fn a_program_without_one_dot_has_no_description() {
        let text = "tile.func @copy(%X: !tile.ref<?x?xbf16> {tile.dims = [\"M\", \"N\"]}, %Y: !tile.ref<?x?xbf16> {tile.dims = [\"M\", \"N\"]}) {\n  %i = tile.block_id x : index\n  %j = tile.block_id y : index\n  %t = tile.load %X[%i, %j] : !tile.ref<?x?xbf16> -> tensor<64x64xbf16>\n  tile.store %t, %Y[%i, %j] : tensor<64x64xbf16> -> !tile.ref<?x?xbf16>\n  tile.return\n}\n";
        let module = tilec_dialects::parse_module(text, "copy.tile").expect("parses");
        assert_eq!(describe(&module.functions[0]), None);
    }
}
