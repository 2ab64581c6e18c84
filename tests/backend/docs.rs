//! The README's and the tutorial's commands run as written, and what the tutorial pastes after
//! a command is in what the command prints: the documents cannot drift from the tools.
//!
//! A fenced `sh` block is a list of commands (`#` comments dropped, `\` continuations joined).
//! A command of `tile-opt` or `tilec` (also as `cargo run --bin NAME --`) runs from a scratch
//! folder holding the repository's `examples/`, and must succeed. The fenced block right after
//! an `sh` block, unless it is `sh` or `rust`, is an excerpt of what the block's commands print:
//! each of its lines must be one of the output's lines, in order, with `...` standing for any
//! text; a line starting with `// ...` marks lines left out. Blank space at either end of a
//! line does not count.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Commands the check does not run, and why.
const NOT_RUN: [(&str, &str); 3] = [
    ("bash scripts/run-example.sh", "the README's set-up command for the main job, which CI does not run"),
    ("bash scripts/test.sh", "the README's set-up command for the tests, which runs this check"),
    ("cargo run -p tilec-runtime --example launch", "it launches the kernel on a GPU"),
];

/// A fenced block: its language word and its text, and the line it starts on.
struct Block {
    lang: String,
    text: String,
    line: usize,
}

fn blocks(doc: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut open: Option<Block> = None;
    for (n, line) in doc.lines().enumerate() {
        match (open.take(), line.strip_prefix("```")) {
            (None, Some(lang)) => open = Some(Block { lang: lang.trim().to_string(), text: String::new(), line: n + 1 }),
            (Some(block), Some(_)) => blocks.push(block),
            (Some(mut block), None) => {
                block.text.push_str(line);
                block.text.push('\n');
                open = Some(block);
            }
            (None, None) => {}
        }
    }
    assert!(open.is_none(), "a fenced block is not closed");
    blocks
}

/// The commands of an `sh` block.
fn commands(text: &str) -> Vec<String> {
    let joined = text.replace("\\\n", " ");
    joined.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).map(str::to_string).collect()
}

/// The binary a command runs and the rest of its command line, `None` for a command of
/// another program.
fn tool(command: &str) -> Option<(&'static str, &str)> {
    let tools = [("tile-opt", env!("CARGO_BIN_EXE_tile-opt")), ("tilec", env!("CARGO_BIN_EXE_tilec"))];
    tools.into_iter().find_map(|(name, exe)| {
        let rest = command.strip_prefix(&format!("cargo run --bin {name} -- ")).or_else(|| command.strip_prefix(&format!("{name} ")))?;
        Some((exe, rest))
    })
}

/// Whether `line` (an output line) is what the excerpt line `want` says, `...` standing for
/// any text.
fn matches(want: &str, line: &str) -> bool {
    let mut parts = want.split("...");
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = line.strip_prefix(first) else { return false };
    let parts: Vec<&str> = parts.collect();
    for (i, part) in parts.iter().enumerate() {
        if i + 1 == parts.len() {
            return rest.ends_with(part);
        }
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.is_empty()
}

/// The first excerpt line that is not in `output` in order, if any.
fn missing_line<'a>(excerpt: &'a str, output: &str) -> Option<&'a str> {
    let mut lines = output.lines().map(str::trim);
    excerpt.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with("// ...")).find(|want| !lines.any(|line| matches(want, line)))
}

/// A scratch folder holding a link to the repository's examples.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tilec-docs-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch folder");
    std::os::unix::fs::symlink(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples"), dir.join("examples")).expect("a link to the examples");
    dir
}

/// Runs every command of `doc` and checks every excerpt; the problems found, one a line.
fn check(doc: &str) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(doc);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {doc}: {e}"));
    let dir = scratch(&doc.replace('/', "-"));
    let blocks = blocks(&text);
    let mut problems = Vec::new();
    let mut ran = 0;
    for (i, block) in blocks.iter().enumerate().filter(|(_, b)| b.lang == "sh") {
        let mut output = String::new();
        let mut all_ran = true;
        for command in commands(&block.text) {
            let Some((exe, rest)) = tool(&command) else {
                match NOT_RUN.iter().find(|(prefix, _)| command.starts_with(prefix)) {
                    Some((_, why)) if why.contains("GPU") => tilec_cli::report_skip(&format!("{doc}:{} `{command}`", block.line), why),
                    Some(_) => {}
                    None => problems.push(format!("{doc}:{}: `{command}` runs a program the check cannot run: add it to NOT_RUN, with why", block.line)),
                }
                all_ran = false;
                continue;
            };
            let out = Command::new("sh").arg("-c").arg(format!("{exe} {rest}")).current_dir(&dir).output().expect("sh runs");
            ran += 1;
            output.push_str(&String::from_utf8_lossy(&out.stdout));
            output.push_str(&String::from_utf8_lossy(&out.stderr));
            if !out.status.success() {
                problems.push(format!("{doc}:{}: `{command}` failed ({}):\n{}", block.line, out.status, String::from_utf8_lossy(&out.stderr)));
            }
        }
        let excerpt = blocks.get(i + 1).filter(|b| b.lang != "sh" && b.lang != "rust");
        if let (Some(excerpt), true) = (excerpt, all_ran) {
            if let Some(line) = missing_line(&excerpt.text, &output) {
                problems.push(format!("{doc}:{}: the excerpt's line `{line}` is not in what the commands above it print, in order", excerpt.line));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(ran > 0, "{doc} has no command the check runs");
    problems
}

#[test]
fn the_tutorial_runs_and_prints_its_excerpts() {
    let problems = check("docs/tutorial.md");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_readmes_commands_run() {
    let problems = check("README.md");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn excerpt_lines_match_in_order_with_gaps() {
    assert!(matches("a ... c", "a b c") && matches("%... = nv.wgmma ...", "%7 = nv.wgmma x y") && matches("x", "x"));
    assert!(!matches("a ... c", "a b d") && !matches("x", "xy") && !matches("b", "ab"));
    assert_eq!(missing_line("one\n// ... left out\nthree\n", "one\ntwo\nthree\n"), None);
    assert_eq!(missing_line("three\none\n", "one\ntwo\nthree\n"), Some("one"));
}
