//! The generated typed API: views read operands by name (through variadic
//! and optional groups), builders make ops the parser would, and the
//! generated checks catch what the definitions declare.

use tilec_dialects::ir::{Attributes, Builder, InsertPoint};
use tilec_dialects::registry::Opcode;
use tilec_dialects::{nv, parse_module, print_module, tile, verify_module, PrintOptions, Type};

const NV: &str = r#"tile.func @f(%a: !tile.ref<?x?xbf16>, %b: !tile.ref<?x?xbf16>) attributes {num_warps = 4} {
  %c0 = tile.constant 0 : index
  %c1 = tile.constant 1 : index
  %a_smem = nv.alloc_smem : !nv.smem<2x128x64xbf16, #tile.nvmma_shared<swizzle = 128>>
  %b_smem = nv.alloc_smem : !nv.smem<2x128x64xbf16, #tile.nvmma_shared<swizzle = 128>>
  %full = nv.alloc_mbarriers {arrivals = 1} : !nv.mbarrier<2>
  nv.tma_load %a[%c0, %c1] -> %a_smem[%c1], %full[%c0] : !tile.ref<?x?xbf16> -> !nv.smem<2x128x64xbf16, #tile.nvmma_shared<swizzle = 128>>, !nv.mbarrier<2>
  %z = tile.constant 0.0 : tensor<128x128xf32, #tile.mma<version = 3, warps_per_cta = [4, 1], instr_shape = [16, 128, 16]>>
  %d = nv.wgmma %a_smem[%c0], %b_smem[%c1], %z {transpose_b} : !nv.smem<2x128x64xbf16, #tile.nvmma_shared<swizzle = 128>>, !nv.smem<2x128x64xbf16, #tile.nvmma_shared<swizzle = 128>> -> tensor<128x128xf32, #tile.mma<version = 3, warps_per_cta = [4, 1], instr_shape = [16, 128, 16]>>
  tile.return
}
"#;

#[test]
fn views_name_operands_around_variadic_and_optional_groups() {
    let module = parse_module(NV, "nv.tile").unwrap_or_else(|d| panic!("{d}"));
    verify_module(&module).unwrap_or_else(|d| panic!("{d}"));
    let f = &module.functions[0];
    let body = &f.body;
    let ops = body.walk_region(f.region);
    let value_named = |v| body.values[v].name_hint.clone().unwrap_or_default();

    let load = ops.iter().find_map(|&o| nv::TmaLoad::of(body, o)).expect("a tma_load");
    assert_eq!(load.coords(body).iter().map(|&v| value_named(v)).collect::<Vec<_>>(), ["c0", "c1"]);
    assert_eq!(value_named(load.buffer(body)), "a_smem");
    assert_eq!(value_named(load.stage(body)), "c1");
    assert_eq!(value_named(load.barrier(body)), "full");
    assert_eq!(value_named(load.barrier_stage(body)), "c0");

    let mma = ops.iter().find_map(|&o| nv::Wgmma::of(body, o)).expect("a wgmma");
    assert_eq!(mma.a_stage(body).map(value_named).as_deref(), Some("c0"));
    assert_eq!(value_named(mma.b_stage(body)), "c1");
    assert_eq!(value_named(mma.acc(body)), "z");
    assert!(mma.transpose_b(body) && !mma.transpose_a(body));
    assert_eq!(body.opcode(mma.op()), Opcode::NvWgmma);
    assert!(tile::Dot::of(body, mma.op()).is_none(), "a view takes only its own op");
}

#[test]
fn builders_make_what_the_parser_makes() {
    let src = "tile.func @g() {\n  %a = tile.constant 4 : index\n  %b = tile.constant 6 : index\n  tile.return\n}\n";
    let mut module = parse_module(src, "g.tile").unwrap_or_else(|d| panic!("{d}"));
    let f = &mut module.functions[0];
    let entry = f.entry_block();
    let ops = f.body.blocks[entry].ops.clone();
    let (a, b) = (f.body.result(ops[0], 0), f.body.result(ops[1], 0));
    let mut builder = Builder::new(&mut f.body, InsertPoint::Before(ops[2]), f.loc.clone());
    let product = tile::Muli::build(&mut builder, a, b, Attributes::new());
    let p = product.result(builder.body);
    assert_eq!(*builder.body.value_type(p), Type::INDEX, "the result type comes from types-match");
    let dim = tile::BlockId::build(&mut builder, 1, Attributes::new());
    assert_eq!(dim.dim(builder.body), 1);
    builder.name(p, "p");
    let d = dim.result(builder.body);
    builder.name(d, "y");
    verify_module(&module).unwrap_or_else(|d| panic!("{d}"));
    let printed = print_module(&module, PrintOptions::default());
    assert!(printed.contains("%p = tile.muli %a, %b : index\n"), "{printed}");
    assert!(printed.contains("%y = tile.block_id y : index\n"), "{printed}");
}

#[test]
fn generated_checks_report_counts_kinds_and_attributes() {
    let cases = [
        ("%d = \"tile.dot\"(%t, %t) : (tensor<64x64xbf16>, tensor<64x64xbf16>) -> tensor<64x64xf32>", "'tile.dot' op expects 3 operand(s), found 2"),
        ("\"nv.mbarrier_arrive\"(%c0, %c0) : (index, index) -> ()", "'nv.mbarrier_arrive' op operand 'barrier' must be an '!nv.mbarrier'"),
        ("%r = \"tile.cmpi\"(%c0, %c0) : (index, index) -> i1", "'tile.cmpi' op requires a 'predicate' attribute, one of eq, ne, slt, sle, sgt, sge"),
        ("%s = \"tile.addi\"(%c0, %i) : (index, i32) -> index", "'tile.addi' op 'lhs', 'rhs' and 'result' must have one type"),
    ];
    for (op, message) in cases {
        let src = format!(
            "tile.func @h(%a: !tile.ref<?x?xbf16>) {{\n  %c0 = tile.constant 0 : index\n  %i = tile.constant 0 : i32\n  %t = tile.load %a[%c0, %c0] : !tile.ref<?x?xbf16> -> tensor<64x64xbf16>\n  {op}\n  tile.return\n}}\n"
        );
        let module = parse_module(&src, "h.tile").unwrap_or_else(|d| panic!("{d}"));
        let errors = verify_module(&module).expect_err(op).to_string();
        assert!(errors.contains(message), "{op}: {errors}");
    }
}
