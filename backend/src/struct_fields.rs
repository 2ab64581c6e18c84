//! Takes struct values apart before the NVPTX back end selects instructions: a phi of an
//! accumulator struct whose users only take fields out becomes one phi per field, and every
//! `extractvalue` of a struct defined in another block moves into that block, right after it.
//!
//! Why: the wgmma inline assembly returns its accumulator as one struct of up to 128 floats.
//! The loops carry it as a phi of that struct, and the kernel pipeline sinks the
//! `extractvalue`s of it into the blocks that use the fields (past a loop's exit or a
//! cluster's conditional arrive). Instruction selection builds each block apart and brings a
//! value from another block (a phi's result is one) in by copying its registers: for a struct
//! it copies all of them for every `extractvalue` before picking one field, so taking 88
//! fields apart costs 88 x 88 copies, all but 88 of them thrown away. A phi per field, and
//! each field taken out where its struct is made, cross blocks as one register each. The
//! machine code is the same: the fields live in the same registers either way.
//!
//! An `extractvalue` reads nothing but its operand and cannot trap, so it may run as soon as
//! the operand exists; the operand's block dominates the block the `extractvalue` was in, and
//! so every user of it. A phi's field is the same field of the struct each predecessor
//! brings, taken out in that predecessor's dominance: right after the struct where it is an
//! instruction.

use inkwell::builder::Builder;
use inkwell::module::Module;
use inkwell::types::BasicType;
use inkwell::values::{AnyValue, BasicValue, BasicValueEnum, FunctionValue, InstructionOpcode, InstructionValue, Operand, PhiValue};
use std::collections::{HashMap, HashSet};

/// Splits the struct phis and moves the cross-block `extractvalue`s of every function of
/// `module` (see the module doc).
pub fn take_structs_apart(module: &Module) {
    let builder = module.get_context().create_builder();
    for function in module.get_functions() {
        split_struct_phis(function, &builder);
        hoist_extracts(function, &builder);
    }
}

/// The instructions of `function`, block by block.
fn instructions(function: FunctionValue) -> impl Iterator<Item = InstructionValue> {
    function.get_basic_blocks().into_iter().flat_map(|b| std::iter::successors(b.get_first_instruction(), |i| i.get_next_instruction()))
}

/// The instructions that use `inst` (once each per use).
fn users(inst: InstructionValue) -> impl Iterator<Item = Option<InstructionValue>> {
    std::iter::successors(inst.get_first_use(), |u| u.get_next_use())
        .map(|u| BasicValueEnum::try_from(u.get_user()).ok().and_then(|v| v.as_instruction_value()))
}

/// The field an `extractvalue` of one index takes; `None` for any other instruction.
fn one_field(inst: InstructionValue) -> Option<u32> {
    match inst.get_indices()[..] {
        [field] if inst.get_opcode() == InstructionOpcode::ExtractValue => Some(field),
        _ => None,
    }
}

/// Whether `inst` is a phi of a struct of `f32` fields, a wgmma accumulator's type. Other
/// structs (a deferred epilogue's `bf16` values) keep their phis: splitting those changes the
/// instructions NVPTX picks around them, not only how fast it picks them.
fn accumulator_phi(inst: InstructionValue) -> bool {
    let ty = inst.get_type();
    inst.get_opcode() == InstructionOpcode::Phi
        && ty.is_struct_type()
        && ty.into_struct_type().get_field_types().iter().all(|t| t.is_float_type() && t.into_float_type() == t.into_float_type().get_context().f32_type())
}

/// Replaces every phi of an accumulator struct whose users are `extractvalue`s of one field
/// or other such phis by one phi per field.
fn split_struct_phis<'c>(function: FunctionValue<'c>, builder: &Builder<'c>) {
    let mut phis: Vec<InstructionValue> = instructions(function).filter(|&i| accumulator_phi(i)).collect();
    // A phi used otherwise (stored, passed whole) stays, and so do the phis it takes.
    loop {
        let kept: HashSet<InstructionValue> = phis.iter().copied().collect();
        let before = phis.len();
        phis.retain(|&p| users(p).all(|u| u.is_some_and(|u| one_field(u).is_some() || kept.contains(&u))));
        if phis.len() == before {
            break;
        }
    }
    let mut fields: HashMap<InstructionValue, Vec<PhiValue>> = HashMap::new();
    for &p in &phis {
        let ty = p.get_type().into_struct_type();
        builder.position_before(&p);
        let per_field = ty.get_field_types().into_iter().map(|t| builder.build_phi(t.as_basic_type_enum(), "").expect("positioned")).collect();
        fields.insert(p, per_field);
    }
    let mut taken: HashMap<(BasicValueEnum, u32), BasicValueEnum> = HashMap::new();
    for &p in &phis {
        let phi = PhiValue::try_from(p).expect("a phi");
        for (value, block) in phi.get_incomings() {
            let from_phi = value.as_instruction_value().and_then(|v| fields.get(&v));
            for (field, split) in fields[&p].iter().enumerate() {
                let field = field as u32;
                let incoming = match from_phi {
                    Some(split_fields) => split_fields[field as usize].as_basic_value(),
                    None => *taken.entry((value, field)).or_insert_with(|| {
                        match value.as_instruction_value().filter(|def| !def.is_terminator()) {
                            Some(def) => builder.position_before(&first_after(def)),
                            // A constant folds; an argument or an invoke's result is there at
                            // the end of the predecessor.
                            None => builder.position_before(&block.get_terminator().expect("a block ends in a terminator")),
                        }
                        builder.build_extract_value(value.into_struct_value(), field, "").expect("a field of the struct")
                    }),
                };
                split.add_incoming(&[(&incoming, block)]);
            }
        }
    }
    for &p in &phis {
        for user in users(p).flatten().collect::<Vec<_>>() {
            if let Some(field) = one_field(user) {
                user.replace_all_uses_with(&fields[&p][field as usize].as_instruction());
                user.erase_from_basic_block();
            }
        }
    }
    // What uses them now is only each other.
    for &p in &phis {
        let value = p.as_any_value_enum().into_struct_value();
        value.replace_all_uses_with(value.get_type().get_poison());
    }
    for p in phis {
        p.erase_from_basic_block();
    }
}

/// Moves every `extractvalue` of a struct defined in another block of `function` right after
/// the struct (after the phis of its block where it is a phi), keeping their order.
fn hoist_extracts<'c>(function: FunctionValue<'c>, builder: &Builder<'c>) {
    // Where the extracts of each struct go: before the instruction that followed it.
    let mut insert_points: HashMap<InstructionValue, InstructionValue> = HashMap::new();
    for block in function.get_basic_blocks() {
        let mut next = block.get_first_instruction();
        while let Some(inst) = next {
            next = inst.get_next_instruction();
            if inst.get_opcode() != InstructionOpcode::ExtractValue {
                continue;
            }
            let Some(Operand::Value(aggregate)) = inst.get_operand(0) else { continue };
            let Some(def) = aggregate.as_instruction_value() else { continue };
            if def.get_parent() == Some(block) || def.is_terminator() {
                continue;
            }
            let at = *insert_points.entry(def).or_insert_with(|| first_after(def));
            // Reinserting takes the name given, so the value keeps its own.
            let name = inst.get_name().and_then(|n| n.to_str().ok()).map(str::to_owned);
            inst.remove_from_basic_block();
            builder.position_before(&at);
            builder.insert_instruction(&inst, name.as_deref());
        }
    }
}

/// The first instruction after `def` that is not a phi: every block ends in a terminator, so
/// one follows any instruction that is not a terminator.
fn first_after(def: InstructionValue) -> InstructionValue {
    let mut at = def.get_next_instruction().expect("a non-terminator is followed by an instruction");
    while at.get_opcode() == InstructionOpcode::Phi {
        at = at.get_next_instruction().expect("phis are followed by the block's other instructions");
    }
    at
}

#[cfg(test)]
mod tests {
    use super::take_structs_apart;
    use inkwell::context::Context;
    use inkwell::memory_buffer::MemoryBuffer;
    use inkwell::values::InstructionOpcode::{self, *};

    /// A function `name` returning `ret` whose loop carries a phi `%acc` of `ty` from `init`
    /// (made by the entry block's `prologue`), refreshed by `@callee` each trip, and whose exit
    /// block is `exit`.
    fn looped(name: &str, ret: &str, ty: &str, prologue: &str, init: &str, callee: &str, exit: &str) -> String {
        format!(
            "define {ret} @{name}(i32 %n) {{\nentry:\n{prologue}  br label %loop\nloop:\n  %acc = phi {ty} [ {init}, %entry ], [ %next, %loop ]\n  \
             %i = phi i32 [ 0, %entry ], [ %i1, %loop ]\n  %next = call {ty} @{callee}()\n  %i1 = add i32 %i, 1\n  %done = icmp eq i32 %i1, %n\n  \
             br i1 %done, label %exit, label %loop\nexit:\n{exit}}}\n"
        )
    }

    /// The test module: a struct used across a branch, and three loops carrying one.
    fn ir() -> String {
        let pair = "{ float, float }";
        let halves = "{ bfloat, bfloat }";
        [
            "declare { float, float } @pair()\ndeclare { bfloat, bfloat } @halves()\n".to_string(),
            "define float @across_a_branch(i1 %c) {\nentry:\n  %s = call { float, float } @pair()\n  br i1 %c, label %use, label %other\nother:\n  \
             br label %use\nuse:\n  %a = extractvalue { float, float } %s, 0\n  %b = extractvalue { float, float } %s, 1\n  %r = fadd float %a, %b\n  \
             ret float %r\n}\n"
                .to_string(),
            looped(
                "carried_by_a_loop",
                "float",
                pair,
                "  %init = call { float, float } @pair()\n",
                "%init",
                "pair",
                "  %x = extractvalue { float, float } %acc, 1\n  %y = extractvalue { float, float } %acc, 0\n  %r = fsub float %x, %y\n  ret float %r\n",
            ),
            looped("returned_whole", pair, pair, "", "zeroinitializer", "pair", "  %x = extractvalue { float, float } %acc, 1\n  %y = fadd float %x, %x\n  ret { float, float } %acc\n"),
            looped("other_fields", "bfloat", halves, "", "zeroinitializer", "halves", "  %x = extractvalue { bfloat, bfloat } %acc, 1\n  ret bfloat %x\n"),
        ]
        .concat()
    }

    /// The opcodes of each block of `function`, in order.
    fn blocks(module: &inkwell::module::Module, function: &str) -> Vec<Vec<InstructionOpcode>> {
        let f = module.get_function(function).expect("defined");
        f.get_basic_blocks()
            .into_iter()
            .map(|b| std::iter::successors(b.get_first_instruction(), |i| i.get_next_instruction()).map(|i| i.get_opcode()).collect())
            .collect()
    }

    /// Extracts of a struct from another block move right after it, in
    /// their order; a struct phi whose users take fields out becomes a phi
    /// per field, fed by the fields of what each predecessor brings; one
    /// used whole, or of fields other than f32, stays a struct. The module
    /// stays valid.
    #[test]
    fn structs_are_taken_apart_where_they_are_made() {
        let context = Context::create();
        let buffer = MemoryBuffer::create_from_memory_range_copy(ir().as_bytes(), "structs.ll");
        let module = context.create_module_from_ir(buffer).expect("the test IR parses");
        take_structs_apart(&module);
        module.verify().expect("still valid");
        assert_eq!(blocks(&module, "across_a_branch"), [vec![Call, ExtractValue, ExtractValue, Br], vec![Br], vec![FAdd, Return]]);
        let text = module.print_to_string().to_string();
        assert!(text.find("%a = extractvalue").expect("kept") < text.find("%b = extractvalue").expect("kept"), "{text}");
        assert_eq!(
            blocks(&module, "carried_by_a_loop"),
            [vec![Call, ExtractValue, ExtractValue, Br], vec![Phi, Phi, Phi, Call, ExtractValue, ExtractValue, Add, ICmp, Br], vec![FSub, Return]]
        );
        assert!(!text.contains("phi { float, float } [ %init"), "{text}");
        assert_eq!(blocks(&module, "returned_whole"), [vec![Br], vec![Phi, Phi, ExtractValue, Call, Add, ICmp, Br], vec![FAdd, Return]]);
        assert_eq!(blocks(&module, "other_fields"), [vec![Br], vec![Phi, Phi, ExtractValue, Call, Add, ICmp, Br], vec![Return]]);
    }
}
