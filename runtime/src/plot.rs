//! A dependency-free PNG bar chart for `tilec-bench`: an 8-bit palette
//! canvas, a hand-drawn 3x5 font, and a PNG writer whose zlib stream uses one
//! fixed-Huffman deflate block with run (distance 1) and previous-row
//! (distance = stride) matches. Plain Rust, so the GPU machine needs no
//! Python, fonts or system libraries to draw it.

use crate::bench::{ShapeResult, BenchDtype};

// ------------------------------------------------------------------ PNG

fn crc32(data: &[u8]) -> u32 {
    let mut table = [0u32; 256];
    for (i, t) in table.iter_mut().enumerate() {
        let mut c = i as u32;
        for _ in 0..8 {
            c = if c & 1 != 0 { 0xEDB8_8320 ^ (c >> 1) } else { c >> 1 };
        }
        *t = c;
    }
    let mut c = 0xFFFF_FFFFu32;
    for &b in data {
        c = table[((c ^ b as u32) & 0xFF) as usize] ^ (c >> 8);
    }
    c ^ 0xFFFF_FFFF
}

fn adler32(data: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for chunk in data.chunks(5552) {
        for &x in chunk {
            a += x as u32;
            b += a;
        }
        a %= 65521;
        b %= 65521;
    }
    (b << 16) | a
}

struct BitWriter {
    out: Vec<u8>,
    acc: u64,
    n: u32,
}

impl BitWriter {
    /// Appends `len` bits of `v`, least significant first.
    fn bits(&mut self, v: u32, len: u32) {
        self.acc |= (v as u64) << self.n;
        self.n += len;
        while self.n >= 8 {
            self.out.push(self.acc as u8);
            self.acc >>= 8;
            self.n -= 8;
        }
    }
    /// Appends a Huffman code (written most significant bit first).
    fn code(&mut self, code: u32, len: u32) {
        let rev = code.reverse_bits() >> (32 - len);
        self.bits(rev, len);
    }
    fn finish(mut self) -> Vec<u8> {
        if self.n > 0 {
            self.out.push(self.acc as u8);
        }
        self.out
    }
}

const LEN_BASE: [u16; 29] =
    [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258];
const LEN_EXTRA: [u8; 29] = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0];
const DIST_BASE: [u16; 30] = [
    1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145,
    8193, 12289, 16385, 24577,
];
const DIST_EXTRA: [u8; 30] =
    [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13];

fn fixed_symbol(w: &mut BitWriter, sym: u32) {
    match sym {
        0..=143 => w.code(0x30 + sym, 8),
        144..=255 => w.code(0x190 + sym - 144, 9),
        256..=279 => w.code(sym - 256, 7),
        _ => w.code(0xC0 + sym - 280, 8),
    }
}

fn emit_match(w: &mut BitWriter, len: usize, dist: usize) {
    let li = LEN_BASE.iter().rposition(|&b| b as usize <= len).expect("len >= 3");
    fixed_symbol(w, 257 + li as u32);
    w.bits((len - LEN_BASE[li] as usize) as u32, LEN_EXTRA[li] as u32);
    let di = DIST_BASE.iter().rposition(|&b| b as usize <= dist).expect("dist >= 1");
    w.code(di as u32, 5);
    w.bits((dist - DIST_BASE[di] as usize) as u32, DIST_EXTRA[di] as u32);
}

fn match_len(data: &[u8], i: usize, dist: usize) -> usize {
    if dist == 0 || dist > i {
        return 0;
    }
    let max = (data.len() - i).min(258);
    (0..max).take_while(|&j| data[i + j] == data[i + j - dist]).count()
}

/// A zlib stream (one fixed-Huffman block) of `data`; matches are tried at
/// distance 1 and `stride` only, which suits rendered images.
pub fn zlib_compress(data: &[u8], stride: usize) -> Vec<u8> {
    let mut w = BitWriter { out: vec![0x78, 0x01], acc: 0, n: 0 };
    w.bits(1, 1); // BFINAL
    w.bits(1, 2); // BTYPE = 01, fixed Huffman
    let stride = if stride <= 32768 { stride } else { 0 };
    let mut i = 0;
    while i < data.len() {
        let (l1, ls) = (match_len(data, i, 1), match_len(data, i, stride));
        let (len, dist) = if ls >= l1 { (ls, stride) } else { (l1, 1) };
        if len >= 3 {
            emit_match(&mut w, len, dist);
            i += len;
        } else {
            fixed_symbol(&mut w, data[i] as u32);
            i += 1;
        }
    }
    fixed_symbol(&mut w, 256);
    let mut out = w.finish();
    out.extend_from_slice(&adler32(data).to_be_bytes());
    out
}

fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    let start = out.len();
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    let crc = crc32(&out[start..]);
    out.extend_from_slice(&crc.to_be_bytes());
}

pub const PNG_SIGNATURE: [u8; 8] = [0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A];

/// Encodes an 8-bit palette image (`pixels` row-major, `width * height`).
pub fn encode_png_indexed(width: u32, height: u32, pixels: &[u8], palette: &[[u8; 3]]) -> Vec<u8> {
    assert_eq!(pixels.len(), width as usize * height as usize, "pixel count");
    assert!(!palette.is_empty() && palette.len() <= 256, "palette size");
    let mut out = PNG_SIGNATURE.to_vec();
    let mut ihdr = Vec::with_capacity(13);
    ihdr.extend_from_slice(&width.to_be_bytes());
    ihdr.extend_from_slice(&height.to_be_bytes());
    ihdr.extend_from_slice(&[8, 3, 0, 0, 0]); // depth 8, palette, deflate, filter 0, no interlace
    chunk(&mut out, b"IHDR", &ihdr);
    let plte: Vec<u8> = palette.iter().flatten().copied().collect();
    chunk(&mut out, b"PLTE", &plte);
    let mut raw = Vec::with_capacity(pixels.len() + height as usize);
    for row in pixels.chunks(width as usize) {
        raw.push(0); // filter: none
        raw.extend_from_slice(row);
    }
    chunk(&mut out, b"IDAT", &zlib_compress(&raw, width as usize + 1));
    chunk(&mut out, b"IEND", &[]);
    out
}

// --------------------------------------------------------------- canvas

/// Palette indices.
pub mod color {
    pub const WHITE: u8 = 0;
    pub const BLACK: u8 = 1;
    pub const GRID: u8 = 2;
    pub const TEXT: u8 = 3;
    pub const OURS: u8 = 4;
    pub const CUBLAS: u8 = 5;
    pub const CUBLASLT: u8 = 6;
    pub const FAIL: u8 = 7;
}

pub const PALETTE: [[u8; 3]; 8] = [
    [255, 255, 255],
    [0, 0, 0],
    [220, 220, 220],
    [60, 60, 60],
    [31, 119, 180],
    [255, 127, 14],
    [44, 160, 44],
    [214, 39, 40],
];

pub struct Canvas {
    pub width: u32,
    pub height: u32,
    pub pixels: Vec<u8>,
}

/// 3x5 glyphs, one row per entry, bit 2 the leftmost column. Lowercase
/// letters are drawn as capitals; unknown characters as a box.
fn glyph(c: char) -> [u8; 5] {
    match c.to_ascii_uppercase() {
        '0' => [7, 5, 5, 5, 7],
        '1' => [2, 6, 2, 2, 7],
        '2' => [7, 1, 7, 4, 7],
        '3' => [7, 1, 7, 1, 7],
        '4' => [5, 5, 7, 1, 1],
        '5' => [7, 4, 7, 1, 7],
        '6' => [7, 4, 7, 5, 7],
        '7' => [7, 1, 1, 2, 2],
        '8' => [7, 5, 7, 5, 7],
        '9' => [7, 5, 7, 1, 7],
        'A' => [2, 5, 7, 5, 5],
        'B' => [6, 5, 6, 5, 6],
        'C' => [3, 4, 4, 4, 3],
        'D' => [6, 5, 5, 5, 6],
        'E' => [7, 4, 6, 4, 7],
        'F' => [7, 4, 6, 4, 4],
        'G' => [3, 4, 5, 5, 3],
        'H' => [5, 5, 7, 5, 5],
        'I' => [7, 2, 2, 2, 7],
        'J' => [1, 1, 1, 5, 2],
        'K' => [5, 5, 6, 5, 5],
        'L' => [4, 4, 4, 4, 7],
        'M' => [5, 7, 7, 5, 5],
        'N' => [6, 5, 5, 5, 5],
        'O' => [2, 5, 5, 5, 2],
        'P' => [6, 5, 6, 4, 4],
        'Q' => [2, 5, 5, 6, 3],
        'R' => [6, 5, 6, 5, 5],
        'S' => [3, 4, 2, 1, 6],
        'T' => [7, 2, 2, 2, 2],
        'U' => [5, 5, 5, 5, 7],
        'V' => [5, 5, 5, 5, 2],
        'W' => [5, 5, 7, 7, 5],
        'X' => [5, 5, 2, 5, 5],
        'Y' => [5, 5, 2, 2, 2],
        'Z' => [7, 1, 2, 4, 7],
        ' ' => [0, 0, 0, 0, 0],
        '.' => [0, 0, 0, 0, 2],
        ',' => [0, 0, 0, 2, 4],
        '-' => [0, 0, 7, 0, 0],
        '/' => [1, 1, 2, 4, 4],
        ':' => [0, 2, 0, 2, 0],
        '(' => [1, 2, 2, 2, 1],
        ')' => [4, 2, 2, 2, 4],
        '%' => [5, 1, 2, 4, 5],
        '_' => [0, 0, 0, 0, 7],
        '=' => [0, 7, 0, 7, 0],
        '+' => [0, 2, 7, 2, 0],
        '^' => [2, 5, 0, 0, 0],
        '?' => [7, 1, 2, 0, 2],
        _ => [7, 5, 5, 5, 7],
    }
}

impl Canvas {
    pub fn new(width: u32, height: u32) -> Self {
        Canvas { width, height, pixels: vec![color::WHITE; width as usize * height as usize] }
    }
    pub fn set(&mut self, x: i64, y: i64, c: u8) {
        if x >= 0 && y >= 0 && (x as u32) < self.width && (y as u32) < self.height {
            self.pixels[y as usize * self.width as usize + x as usize] = c;
        }
    }
    pub fn rect(&mut self, x: i64, y: i64, w: i64, h: i64, c: u8) {
        for yy in y..y + h {
            for xx in x..x + w {
                self.set(xx, yy, c);
            }
        }
    }
    /// Pixel width of `s` at `scale` (4 columns per character, less the last gap).
    pub fn text_width(s: &str, scale: i64) -> i64 {
        (s.chars().count() as i64 * 4 - 1).max(0) * scale
    }
    /// Horizontal text, top-left at (x, y).
    pub fn text(&mut self, x: i64, y: i64, s: &str, scale: i64, c: u8) {
        for (i, ch) in s.chars().enumerate() {
            let g = glyph(ch);
            for (r, bits) in g.iter().enumerate() {
                for col in 0..3 {
                    if bits >> (2 - col) & 1 == 1 {
                        self.rect(x + (i as i64 * 4 + col) * scale, y + r as i64 * scale, scale, scale, c);
                    }
                }
            }
        }
    }
    /// Text reading bottom to top; (x, y) is the bottom-left corner, the
    /// text grows upwards and is 5*scale wide.
    pub fn text_up(&mut self, x: i64, y: i64, s: &str, scale: i64, c: u8) {
        for (i, ch) in s.chars().enumerate() {
            let g = glyph(ch);
            for (r, bits) in g.iter().enumerate() {
                for col in 0..3 {
                    if bits >> (2 - col) & 1 == 1 {
                        // Rotate 90 degrees counter-clockwise.
                        let px = x + r as i64 * scale;
                        let py = y - (i as i64 * 4 + col + 1) * scale;
                        self.rect(px, py, scale, scale, c);
                    }
                }
            }
        }
    }
    pub fn to_png(&self) -> Vec<u8> {
        encode_png_indexed(self.width, self.height, &self.pixels, &PALETTE)
    }
}

// ---------------------------------------------------------------- chart

/// A grouped bar chart: one group per label, one bar per series.
#[derive(Debug, Clone, PartialEq)]
pub struct BarChart {
    pub title: String,
    pub y_label: String,
    /// (name, palette colour)
    pub series: Vec<(String, u8)>,
    /// (label, one value per series; None: no bar; failed: a red mark)
    pub groups: Vec<(String, Vec<Option<f64>>, bool)>,
}

/// The smallest 1/2/5 x 10^k step giving at most `ticks` steps up to `max`.
pub fn nice_step(max: f64, ticks: usize) -> f64 {
    if max.is_nan() || max <= 0.0 || !max.is_finite() {
        return 1.0;
    }
    let raw = max / ticks.max(1) as f64;
    let p = 10f64.powf(raw.log10().floor());
    for m in [1.0, 2.0, 5.0, 10.0] {
        if m * p >= raw {
            return m * p;
        }
    }
    10.0 * p
}

fn fmt_tick(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

impl BarChart {
    /// TFLOP/s per (shape, dtype): our best candidate, cuBLAS, cuBLASLt (the
    /// FP8 cuBLASLt run in the FP8 groups).
    pub fn from_results(results: &[ShapeResult], title: &str) -> Self {
        let groups = results
            .iter()
            .map(|r| {
                let tf = |n: &str| r.run(n).filter(|x| x.usable()).and_then(|x| x.tflops);
                let ours = r.best_ours.as_deref().and_then(tf);
                let lt = match r.dtype {
                    BenchDtype::Bf16 => tf("cublaslt"),
                    BenchDtype::Fp8 => tf("cublaslt-fp8"),
                };
                let label = format!("{} {}", r.shape(), r.dtype.name());
                (label, vec![ours, tf("cublas"), lt], r.any_check_failed() || r.error.is_some())
            })
            .collect();
        BarChart {
            title: title.to_string(),
            y_label: "TFLOP/s".into(),
            series: vec![
                ("ours (best)".into(), color::OURS),
                ("cuBLAS".into(), color::CUBLAS),
                ("cuBLASLt".into(), color::CUBLASLT),
            ],
            groups,
        }
    }

    pub fn render(&self) -> Canvas {
        let scale = 2;
        let bar_w: i64 = 7;
        let nser = self.series.len().max(1) as i64;
        let group_w = bar_w * nser + 10;
        let max_label = self.groups.iter().map(|g| g.0.chars().count()).max().unwrap_or(1) as i64;
        let (left, right, top) = (70i64, 20i64, 70i64);
        let bottom = Canvas::text_width(&"0".repeat(max_label as usize), scale) + 20;
        let plot_h: i64 = 480;
        let plot_w = (group_w * self.groups.len().max(1) as i64).max(300);
        let width = left + plot_w + right;
        let height = top + plot_h + bottom;
        let mut cv = Canvas::new(width as u32, height as u32);
        cv.text(left, 10, &self.title, scale, color::BLACK);
        // Legend.
        let mut lx = left;
        for (name, c) in &self.series {
            cv.rect(lx, 36, 14, 10, *c);
            cv.text(lx + 20, 36, name, scale, color::TEXT);
            lx += 20 + Canvas::text_width(name, scale) + 24;
        }
        if self.groups.iter().any(|g| g.2) {
            cv.rect(lx, 36, 14, 10, color::FAIL);
            cv.text(lx + 20, 36, "check failed", scale, color::TEXT);
        }
        let vmax = self.groups.iter().flat_map(|g| g.1.iter().flatten()).fold(0.0f64, |a, &b| a.max(b));
        let step = nice_step(vmax, 8);
        let ymax = if vmax > 0.0 { (vmax / step).ceil() * step } else { step };
        let y_of = |v: f64| top + plot_h - ((v / ymax) * plot_h as f64).round() as i64;
        // Grid and ticks.
        let mut t = 0.0;
        while t <= ymax + step * 1e-9 {
            let y = y_of(t);
            cv.rect(left, y, plot_w, 1, color::GRID);
            let s = fmt_tick(t);
            cv.text(left - 6 - Canvas::text_width(&s, scale), y - 5, &s, scale, color::TEXT);
            t += step;
        }
        cv.text_up(8, top + plot_h / 2 + Canvas::text_width(&self.y_label, scale) / 2, &self.y_label, scale, color::TEXT);
        // Bars and labels.
        for (gi, (label, vals, failed)) in self.groups.iter().enumerate() {
            let gx = left + gi as i64 * group_w + 5;
            for (si, v) in vals.iter().enumerate() {
                if let Some(v) = v.filter(|v| v.is_finite() && *v > 0.0) {
                    let y = y_of(v.min(ymax));
                    let c = self.series.get(si).map(|s| s.1).unwrap_or(color::BLACK);
                    cv.rect(gx + si as i64 * bar_w, y, bar_w - 1, top + plot_h - y, c);
                }
            }
            if *failed {
                cv.rect(gx, top + plot_h + 2, bar_w * nser - 1, 4, color::FAIL);
            }
            let lx = gx + (bar_w * nser - 10) / 2;
            cv.text_up(lx, top + plot_h + 10 + Canvas::text_width(label, scale), label, scale, color::TEXT);
        }
        // Axes.
        cv.rect(left, top, 1, plot_h + 1, color::BLACK);
        cv.rect(left, top + plot_h, plot_w, 1, color::BLACK);
        cv
    }

    pub fn to_png(&self) -> Vec<u8> {
        self.render().to_png()
    }
}
