//! The input file named on a tool's command line, as source text (shared by
//! `tilec` and `tile-opt`).

use tilec_cli::{read_input, Failure};

/// The input named on the command line as source text: a byte that is not
/// UTF-8 is a located error.
pub fn read_source(path: Option<&str>) -> Result<(String, String), Failure> {
    let (bytes, name) = read_input(path)?;
    let text = tilec::dialects::syntax::decode_source(&bytes, &name).map_err(|d| Failure::Error(d.to_string()))?;
    Ok((text, name))
}
