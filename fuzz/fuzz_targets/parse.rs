//! Any text: parsing and verifying never panic, and whatever parses and
//! verifies prints to text that parses back to the same printed form.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tilec_dialects::{parse_module, print_module, verify_module, PrintOptions};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(module) = parse_module(text, "fuzz.tile") else { return };
    if verify_module(&module).is_err() {
        return;
    }
    for generic in [false, true] {
        let printed = print_module(&module, PrintOptions { generic });
        let reparsed = parse_module(&printed, "printed.tile").expect("printed IR parses");
        assert_eq!(print_module(&reparsed, PrintOptions { generic }), printed, "printing is not stable");
    }
});
