//! `--split-input-file[=MARKER]`: one input file holding several test cases
//! separated by marker lines (`// -----` by default), each processed on its
//! own, as `mlir-opt` does.

/// The default marker line, as MLIR writes it.
pub const SEPARATOR: &str = "// -----";

/// Splits `text` at lines that are exactly `marker` (surrounding blanks
/// allowed). Each chunk is the whole file with every line outside the chunk
/// blanked, so a chunk's diagnostics carry the line numbers of the original file.
pub fn split(text: &str, marker: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut bounds = vec![0];
    for (i, line) in lines.iter().enumerate() {
        if line.trim() == marker.trim() {
            bounds.push(i);
            bounds.push(i + 1);
        }
    }
    bounds.push(lines.len());
    bounds
        .chunks(2)
        .map(|range| {
            let (start, end) = (range[0], range[1]);
            let mut chunk = "\n".repeat(start);
            for line in &lines[start..end] {
                chunk.push_str(line);
                chunk.push('\n');
            }
            chunk
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_keep_the_original_line_numbers() {
        let chunks = split("a\n// -----\nb\nc\n  // -----  \nd", SEPARATOR);
        assert_eq!(chunks, ["a\n", "\n\nb\nc\n", "\n\n\n\n\nd\n"]);
        assert_eq!(chunks[2].lines().nth(5), Some("d"));
    }

    #[test]
    fn no_separator_is_one_chunk() {
        assert_eq!(split("a\nb\n", SEPARATOR), ["a\nb\n"]);
        assert_eq!(split("a // ----- b\n", SEPARATOR), ["a // ----- b\n"]);
    }

    #[test]
    fn a_marker_of_ones_own_splits_instead() {
        assert_eq!(split("a\n// -----\nb\n#### \nc\n", "####"), ["a\n// -----\nb\n", "\n\n\n\nc\n"]);
    }
}
