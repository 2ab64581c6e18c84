//! The generator: real kernels (the examples, their variants, the nv-level
//! specs) with one to three structure-aware mutations each, and a pipeline:
//! one the repository uses, or a shuffled, shortened or repeated order of
//! the passes with varied options.

use std::path::Path;

/// xorshift64*: a fixed seed gives the same inputs on every machine.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.max(1))
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

const INTERESTING: [&str; 16] = [
    "0", "1", "-1", "2", "3", "7", "8", "13", "64", "255", "256", "2147483647", "2147483648", "4294967296", "9223372036854775807", "-9223372036854775808",
];
const ELEMENTS: [&str; 7] = ["bf16", "f16", "f32", "f8E4M3FN", "i32", "index", "i1"];
const DIMS: [&str; 10] = ["0", "1", "8", "16", "48", "64", "100", "128", "256", "512"];
/// Passes and option variants a shuffled pipeline draws from.
const PASS_CHOICES: [&str; 18] = [
    "tile-select-config",
    "tile-select-config{m=64 n=2112 k=7168}",
    "tile-canonicalize",
    "tile-assign-layouts",
    "tile-pipeline{stages=2}",
    "tile-pipeline{stages=4}",
    "tile-pipeline{stages=7 wait-depth=0}",
    "tile-warp-specialize{consumers=1 stages=3}",
    "tile-warp-specialize{consumers=2 stages=4}",
    "tile-persistent",
    "tile-licm",
    "tile-lower-to-nv",
    "tile-lower-to-nv{epilogue=tma}",
    "tile-canonicalize",
    "tile-lower-to-nv",
    "tile-assign-layouts",
    "tile-licm",
    "nv-verify-barriers",
];

pub struct Mutator {
    seeds: Vec<(String, String)>,
    pipelines: Vec<String>,
}

impl Mutator {
    pub fn new(root: &Path) -> Self {
        let mut seeds = Vec::new();
        for dir in ["examples", "tests/lit/nv"] {
            let mut files: Vec<_> = std::fs::read_dir(root.join(dir)).expect("read the seed folder").flatten().map(|e| e.path()).collect();
            files.sort();
            for path in files.into_iter().filter(|p| p.extension().is_some_and(|e| e == "tile")) {
                let text = std::fs::read_to_string(&path).expect("read a seed");
                seeds.push((path.file_name().expect("a file").to_string_lossy().into_owned(), text));
            }
        }
        let variants = std::fs::read_to_string(root.join("scripts/gpu-variants.txt")).expect("read the variants list");
        // `NAME FILE PIPELINE|- [--param ..]`: the pipelines, behind the config
        // selection that binds the examples' block sizes (as tilec puts it there).
        let mut pipelines: Vec<String> = variants
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| l.split_whitespace().nth(2))
            .filter(|p| *p != "-")
            .map(|p| format!("tile-select-config,{p}"))
            .collect();
        pipelines.sort();
        pipelines.dedup();
        Mutator { seeds, pipelines }
    }

    /// A name for the input, its bytes and its pipeline.
    pub fn generate(&self, rng: &mut Rng) -> (String, Vec<u8>, String) {
        let (name, bytes) = self.mutated(rng);
        (name, bytes, self.pipeline(rng))
    }

    /// A seed as it is: its name and bytes.
    pub fn original(&self, rng: &mut Rng) -> (String, Vec<u8>) {
        let (name, text) = rng.pick(&self.seeds);
        (format!("{name}: as written"), text.clone().into_bytes())
    }

    /// A seed with one to three mutations: a name saying which, and its bytes.
    pub fn mutated(&self, rng: &mut Rng) -> (String, Vec<u8>) {
        let (name, text) = rng.pick(&self.seeds);
        let mut text = text.clone();
        let mut applied = Vec::new();
        for _ in 0..1 + rng.below(3) {
            let (what, mutated) = mutate(&text, rng);
            applied.push(what);
            text = mutated;
        }
        let mut bytes = text.into_bytes();
        if rng.below(40) == 0 {
            // Not UTF-8, or cut short.
            let at = rng.below(bytes.len());
            if rng.below(2) == 0 {
                bytes[at] = 0xC3 ^ (rng.next() as u8 & 0x3F) | 0x80;
            } else {
                bytes.truncate(at);
            }
            applied.push("bytes");
        }
        (format!("{name}: {}", applied.join(", ")), bytes)
    }

    fn pipeline(&self, rng: &mut Rng) -> String {
        if rng.below(3) > 0 {
            return rng.pick(&self.pipelines).clone();
        }
        // A pass order nobody wrote: any passes, any order, repeats allowed.
        let n = 1 + rng.below(7);
        (0..n).map(|_| *rng.pick(&PASS_CHOICES)).collect::<Vec<_>>().join(",")
    }
}

/// Token boundaries of interest: integer literals, `NxMx` shapes, element
/// types, SSA names.
fn spans(text: &str, pred: impl Fn(&str, usize, usize) -> bool) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let start = i;
        if bytes[i] == b'%' || bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_' {
            i += 1;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            if pred(text, start, i) {
                out.push((start, i));
            }
        } else {
            i += 1;
        }
    }
    out
}

fn replace_one(text: &str, rng: &mut Rng, candidates: &[(usize, usize)], with: &str) -> String {
    let (a, b) = candidates[rng.below(candidates.len())];
    format!("{}{with}{}", &text[..a], &text[b..])
}

/// One mutation of `text`, and its name.
fn mutate(text: &str, rng: &mut Rng) -> (&'static str, String) {
    let lines: Vec<&str> = text.lines().collect();
    match rng.below(10) {
        0 => {
            let ints = spans(text, |t, a, b| t[a..b].bytes().all(|c| c.is_ascii_digit()) && !t[b..].starts_with('x'));
            if ints.is_empty() {
                return ("nothing", text.to_string());
            }
            ("integer literal", {
                let with = rng_pick_str(rng, &INTERESTING);
                replace_one(text, rng, &ints, with)
            })
        }
        1 => {
            let dims = spans(text, |t, a, b| t[a..b].bytes().all(|c| c.is_ascii_digit()) && t[b..].starts_with('x'));
            if dims.is_empty() {
                return ("nothing", text.to_string());
            }
            ("shape", {
                let with = rng_pick_str(rng, &DIMS);
                replace_one(text, rng, &dims, with)
            })
        }
        2 => {
            let elems = spans(text, |t, a, b| ELEMENTS.contains(&&t[a..b]));
            if elems.is_empty() {
                return ("nothing", text.to_string());
            }
            ("element type", {
                let with = rng_pick_str(rng, &ELEMENTS);
                replace_one(text, rng, &elems, with)
            })
        }
        3 => {
            let names = spans(text, |t, a, _| t.as_bytes()[a] == b'%');
            if names.len() < 2 {
                return ("nothing", text.to_string());
            }
            let (a, b) = names[rng.below(names.len())];
            let other = text[a..b].to_string();
            ("operand", replace_one(text, rng, &names, &other))
        }
        4 => {
            // An attribute dropped or changed: transpose_b, swizzle, counts.
            let keys = ["{transpose_b}", "transpose_b, ", "swizzle = 128", "arrivals = 1", "arrivals = 256", "consumers = 2", "num_warps = 4", "num_warps = 12", "producer_regs = 40", "consumer_regs = 232"];
            let present: Vec<&str> = keys.iter().copied().filter(|k| text.contains(k)).collect();
            if present.is_empty() {
                return ("nothing", text.to_string());
            }
            let key = present[rng.below(present.len())];
            let value = rng_pick_str(rng, &INTERESTING);
            let replacement = match key.split_once(" = ") {
                Some((name, _)) => format!("{name} = {value}"),
                None => String::new(),
            };
            ("attribute", text.replacen(key, &replacement, 1))
        }
        5 => {
            let i = rng.below(lines.len());
            let mut out = lines.clone();
            out.remove(i);
            ("line removed", out.join("\n"))
        }
        6 => {
            let (i, j) = (rng.below(lines.len()), rng.below(lines.len()));
            let mut out = lines.clone();
            out.insert(j, lines[i]);
            ("line duplicated", out.join("\n"))
        }
        7 => {
            let (i, j) = (rng.below(lines.len()), rng.below(lines.len()));
            let mut out = lines.clone();
            out.swap(i, j);
            ("lines swapped", out.join("\n"))
        }
        8 => {
            // An op wrapped in a condition or a loop.
            let i = rng.below(lines.len());
            let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
            let wrap = ["%fuzz_c = tile.constant 1 : i1\ntile.if %fuzz_c {", "%fuzz_n = tile.constant 3 : index\n%fuzz_0 = tile.constant 0 : index\ntile.for %fuzz_i = %fuzz_0 to %fuzz_n step %fuzz_n {"];
            out[i] = format!("{}\n{}\ntile.yield\n}}", wrap[rng.below(2)], lines[i]);
            ("wrapped", out.join("\n"))
        }
        _ => {
            // Layout parameters: warps, instruction shapes, versions.
            let keys = ["warps_per_cta = [4, 1]", "instr_shape = [16, 128, 16]", "version = 3", "k_width = 2", "stages=4"];
            let present: Vec<&str> = keys.iter().copied().filter(|k| text.contains(k)).collect();
            if present.is_empty() {
                return ("nothing", text.to_string());
            }
            let key = present[rng.below(present.len())];
            let v = rng_pick_str(rng, &DIMS);
            let replacement = match key {
                "warps_per_cta = [4, 1]" => format!("warps_per_cta = [{v}, 1]"),
                "instr_shape = [16, 128, 16]" => format!("instr_shape = [16, {v}, 16]"),
                "version = 3" => format!("version = {v}"),
                "k_width = 2" => format!("k_width = {v}"),
                _ => format!("stages={v}"),
            };
            ("layout", text.replacen(key, &replacement, 1))
        }
    }
}

fn rng_pick_str<'a>(rng: &mut Rng, items: &[&'a str]) -> &'a str {
    items[rng.below(items.len())]
}
