//! The command-line contract of `tile-opt` and `tilec`: exit status 0 on
//! success, 1 on a compile error, 2 on a usage error; `--version`; input from
//! stdin when no file or `-` is given; completions. (In the back-end test
//! binary, so no further binary links MLIR.)

use std::io::Write;
use std::process::{Command, Output, Stdio};

const TILE_OPT: &str = env!("CARGO_BIN_EXE_tile-opt");
const TILEC: &str = env!("CARGO_BIN_EXE_tilec");

const VALID: &str = "tile.func @f() {\n  %c = tile.constant 1 : index\n  tile.return\n}\n";
const INVALID: &str = "tile.func @f() {\n  %x = tile.frobnicate : index\n  tile.return\n}\n";

/// Runs `tool` with `args` and `stdin` as its standard input.
fn run(tool: &str, args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(tool)
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the tool starts");
    // A tool that rejects its command line exits without reading stdin: a
    // broken pipe here is that, not a failure; the exit status is checked.
    let _ = child.stdin.take().expect("piped").write_all(stdin.as_bytes());
    child.wait_with_output().expect("the tool runs")
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn version_exits_0() {
    for (tool, name) in [(TILE_OPT, "tile-opt"), (TILEC, "tilec")] {
        let o = run(tool, &["--version"], "");
        assert_eq!(o.status.code(), Some(0), "{name}");
        assert_eq!(out(&o).trim(), format!("{name} {}", env!("CARGO_PKG_VERSION")));
    }
}

#[test]
fn stdin_is_read_without_a_file_or_with_dash() {
    for args in [&[][..], &["-"]] {
        let o = run(TILE_OPT, args, VALID);
        assert_eq!(o.status.code(), Some(0), "tile-opt {args:?}: {}", err(&o));
        assert!(out(&o).contains("tile.func @f()"), "{}", out(&o));
    }
    for args in [&["compile", "--emit=nv"][..], &["compile", "-", "--emit=nv"]] {
        let o = run(TILEC, args, VALID);
        assert_eq!(o.status.code(), Some(0), "tilec {args:?}: {}", err(&o));
        assert!(out(&o).contains("tile.func @f()"), "{}", out(&o));
    }
}

#[test]
fn compile_errors_exit_1_located_with_the_source_line() {
    for (tool, args) in [(TILE_OPT, &["-"][..]), (TILEC, &["compile", "--emit=nv"])] {
        let o = run(tool, args, INVALID);
        assert_eq!(o.status.code(), Some(1), "{tool}");
        assert_eq!(
            err(&o).trim_end(),
            "<stdin>:2:8: error: unknown operation 'tile.frobnicate'\n  %x = tile.frobnicate : index\n       ^"
        );
    }
    let o = run(TILEC, &["compile", "no-such-file.tile", "--emit=nv"], "");
    assert_eq!(o.status.code(), Some(1));
    assert!(err(&o).contains("cannot read 'no-such-file.tile'"), "{}", err(&o));
}

#[test]
fn usage_errors_exit_2() {
    let cases: [(&str, &[&str], &str); 6] = [
        (TILEC, &[], "a command is required"),
        (TILEC, &["--bogus", "x"], "'--bogus'"),
        (TILEC, &["compile", "--emit=nv", "--emit-typo"], "'--emit-typo'"),
        (TILEC, &["compile", "-"], "nothing to do"),
        (TILEC, &["bench-compile"], "<FILE>"),
        (TILE_OPT, &["--verify-each=maybe"], "maybe"),
    ];
    for (tool, args, message) in cases {
        let o = run(tool, args, VALID);
        assert_eq!(o.status.code(), Some(2), "{tool} {args:?}: {}", err(&o));
        assert!(err(&o).contains(message), "{tool} {args:?}: {}", err(&o));
    }
}

#[test]
fn completions_are_generated() {
    let o = run(TILEC, &["--completions", "bash"], "");
    assert_eq!(o.status.code(), Some(0));
    assert!(out(&o).contains("bench-compile"), "{}", out(&o));
    let o = run(TILE_OPT, &["--completions", "zsh"], "");
    assert_eq!(o.status.code(), Some(0));
    assert!(out(&o).contains("--tile-canonicalize"), "the per-pass flags are completed too");
}
