//! print(parse(x)) == x for every tile file in examples/ and tests/lit/
//! (comments and blank lines aside), except the deliberately malformed ones,
//! and the generic form parses back to the same IR.

use std::path::{Path, PathBuf};
use tilec_dialects::{parse_module, print_module, verify_module, PrintOptions};

fn tile_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable test folder") {
        let path = entry.expect("readable entry").path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n == "errors") {
                continue;
            }
            tile_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "tile") {
            out.push(path);
        }
    }
}

fn without_comments(text: &str) -> String {
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//") && !l.trim().is_empty())
        .map(|l| format!("{l}\n"))
        .collect()
}

#[test]
fn every_file_prints_as_written() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    tile_files(&root.join("examples"), &mut files);
    tile_files(&root.join("tests/lit"), &mut files);
    assert!(files.len() >= 8, "expected the examples and lit tests, found {files:?}");
    for path in files {
        let text = std::fs::read_to_string(&path).expect("readable file");
        let name = path.display().to_string();
        let module = parse_module(&text, &name).unwrap_or_else(|d| panic!("{d}"));
        verify_module(&module).unwrap_or_else(|d| panic!("{d}"));
        let printed = print_module(&module, PrintOptions::default());
        assert_eq!(without_comments(&printed), without_comments(&text), "{name} does not print as written");

        let generic = print_module(&module, PrintOptions { generic: true });
        let reparsed = parse_module(&generic, &name).unwrap_or_else(|d| panic!("generic form of {name}: {d}\n{generic}"));
        assert_eq!(print_module(&reparsed, PrintOptions::default()), printed, "{name}: generic form changes the IR");
    }
}
