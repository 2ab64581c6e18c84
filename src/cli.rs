//! Command-line pieces shared by `tile-opt` and `tilec`.

/// Splits `--flag=value` into the flag and its value; any other argument
/// (`-o`, `--flag`, a file name) comes back whole with no value.
pub fn split_flag(arg: &str) -> (&str, Option<&str>) {
    match arg.split_once('=') {
        Some((flag, value)) if flag.starts_with("--") => (flag, Some(value)),
        _ => (arg, None),
    }
}

#[cfg(test)]
mod tests {
    use super::split_flag;

    #[test]
    fn only_long_flags_take_inline_values() {
        assert_eq!(split_flag("--pass-pipeline=a,b{x=1}"), ("--pass-pipeline", Some("a,b{x=1}")));
        assert_eq!(split_flag("--list-passes"), ("--list-passes", None));
        assert_eq!(split_flag("dir/a=b.tile"), ("dir/a=b.tile", None));
    }
}
