//! Moves every `extractvalue` of a struct defined in another block into the block that
//! defines the struct, right after it, before the NVPTX back end selects instructions.
//!
//! Why: the wgmma inline assembly returns its accumulator as one struct of up to 128 floats,
//! and the kernel pipeline sinks the `extractvalue`s of it into the blocks that use the fields
//! (past a loop's exit or a cluster's conditional arrive). Instruction selection builds each
//! block apart: there, every `extractvalue` of a struct from another block copies all of the
//! struct's registers in before it picks its field, so taking 88 fields apart costs 88 x 88
//! copies, all but 88 of them thrown away. Next to its struct, each field is a value of its
//! own and crosses blocks as one register. The machine code is the same: the fields live in
//! the same registers either way.
//!
//! An `extractvalue` reads nothing but its operand and cannot trap, so it may run as soon as
//! the operand exists; the operand's block dominates the block the `extractvalue` was in, and
//! so every user of it.

use inkwell::module::Module;
use inkwell::values::{BasicValue, InstructionOpcode, InstructionValue, Operand};
use std::collections::HashMap;

/// Moves the cross-block `extractvalue`s of every function of `module` (see the module doc).
/// The moved ones keep their order, after the struct (after the block's phis where the struct
/// is a phi).
pub fn hoist_struct_extracts(module: &Module) {
    let builder = module.get_context().create_builder();
    for function in module.get_functions() {
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
    use super::hoist_struct_extracts;
    use inkwell::context::Context;
    use inkwell::memory_buffer::MemoryBuffer;
    use inkwell::values::InstructionOpcode::{self, *};

    const IR: &str = r#"
declare { float, float } @pair()

define float @across_a_branch(i1 %c) {
entry:
  %s = call { float, float } @pair()
  br i1 %c, label %use, label %other
other:
  br label %use
use:
  %a = extractvalue { float, float } %s, 0
  %b = extractvalue { float, float } %s, 1
  %r = fadd float %a, %b
  ret float %r
}

define float @past_a_loop(i32 %n) {
entry:
  %init = call { float, float } @pair()
  br label %loop
loop:
  %acc = phi { float, float } [ %init, %entry ], [ %next, %loop ]
  %i = phi i32 [ 0, %entry ], [ %i1, %loop ]
  %next = call { float, float } @pair()
  %i1 = add i32 %i, 1
  %done = icmp eq i32 %i1, %n
  br i1 %done, label %exit, label %loop
exit:
  %x = extractvalue { float, float } %acc, 1
  %y = extractvalue { float, float } %acc, 0
  %r = fsub float %x, %y
  ret float %r
}
"#;

    /// The opcodes of each block of `function`, in order.
    fn blocks(module: &inkwell::module::Module, function: &str) -> Vec<Vec<InstructionOpcode>> {
        let f = module.get_function(function).expect("defined");
        f.get_basic_blocks()
            .into_iter()
            .map(|b| std::iter::successors(b.get_first_instruction(), |i| i.get_next_instruction()).map(|i| i.get_opcode()).collect())
            .collect()
    }

    /// Extracts of a struct from another block move right after it, in
    /// their order (after the phis for a phi), and the module stays valid.
    #[test]
    fn extracts_move_next_to_their_struct() {
        let context = Context::create();
        let buffer = MemoryBuffer::create_from_memory_range_copy(IR.as_bytes(), "extracts.ll");
        let module = context.create_module_from_ir(buffer).expect("the test IR parses");
        hoist_struct_extracts(&module);
        module.verify().expect("still valid");
        assert_eq!(blocks(&module, "across_a_branch"), [vec![Call, ExtractValue, ExtractValue, Br], vec![Br], vec![FAdd, Return]]);
        assert_eq!(blocks(&module, "past_a_loop"), [vec![Call, Br], vec![Phi, Phi, ExtractValue, ExtractValue, Call, Add, ICmp, Br], vec![FSub, Return]]);
        let text = module.print_to_string().to_string();
        assert!(text.find("%x = extractvalue").expect("kept") < text.find("%y = extractvalue").expect("kept"), "{text}");
    }
}
