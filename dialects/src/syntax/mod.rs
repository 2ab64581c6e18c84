//! The MLIR-syntax text format: lexer, parser and printer, in custom and
//! generic forms.

mod lexer;
mod parser;
mod printer;

pub use lexer::{decode_source, Token, MAX_NESTING};
pub use parser::{parse_module, Parser, UnresolvedOperand};
pub use printer::{attribute_to_string, float_to_string, layout_to_string, print_function, print_module, type_to_string, PrintOptions, Printer};
