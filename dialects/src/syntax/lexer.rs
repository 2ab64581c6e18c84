//! Tokens of MLIR's textual syntax, produced on demand so that the parser can
//! switch to shape lexing (`128x64xbf16`) inside a type.
//!
//! The lexer also bounds nesting: the parser and the passes recurse once per
//! nested region or bracket, so brackets (`{`, `(`, `[`, `<`) open more than
//! [`MAX_NESTING`] deep are a located error rather than a stack overflow.

use crate::diagnostic::{Diagnostic, Location};
use std::sync::Arc;

/// A token of the textual IR.
#[derive(Clone, Debug, PartialEq)]
pub enum Token {
    /// A bare identifier or keyword, dots allowed: `tile.load`, `to`, `bf16`.
    Ident(String),
    /// `%name`
    ValueId(String),
    /// `^bb0`
    BlockId(String),
    /// `@name`
    Symbol(String),
    /// `#tile.mma`
    HashIdent(String),
    /// `!tile.ref`
    BangIdent(String),
    /// An integer literal.
    Int(i64),
    /// A float literal.
    Float(f64),
    /// A string literal, unescaped.
    Str(String),
    /// Punctuation (`(`, `->`, `:`, ...).
    Punct(&'static str),
    /// The end of the input.
    Eof,
}

impl Token {
    /// How the token reads in an error message.
    pub fn describe(&self) -> String {
        match self {
            Token::Ident(s) => format!("'{s}'"),
            Token::ValueId(s) => format!("'%{s}'"),
            Token::BlockId(s) => format!("'^{s}'"),
            Token::Symbol(s) => format!("'@{s}'"),
            Token::HashIdent(s) => format!("'#{s}'"),
            Token::BangIdent(s) => format!("'!{s}'"),
            Token::Int(v) => format!("'{v}'"),
            Token::Float(v) => format!("'{v}'"),
            Token::Str(s) => format!("{s:?}"),
            Token::Punct(p) => format!("'{p}'"),
            Token::Eof => "end of file".to_string(),
        }
    }
}

/// How deep brackets may nest: far beyond any kernel (a warp-specialised
/// persistent GEMM nests regions 5 deep), and shallow enough that parsing,
/// verifying and transforming the deepest input fits the 2 MiB stack of a
/// spawned thread.
pub const MAX_NESTING: u32 = 128;

/// The source text of `bytes`, or an error at the line and column of the
/// first byte that is not UTF-8.
pub fn decode_source(bytes: &[u8], file: &str) -> Result<String, Diagnostic> {
    match std::str::from_utf8(bytes) {
        Ok(text) => Ok(text.to_string()),
        Err(e) => {
            let mut lexer = Lexer::new(std::str::from_utf8(&bytes[..e.valid_up_to()]).expect("valid prefix"), Arc::from(file));
            while lexer.peek_byte().is_some() {
                lexer.bump();
            }
            let bad = bytes[e.valid_up_to()];
            Err(Diagnostic::error(lexer.loc(), format!("the file is not UTF-8: byte 0x{bad:02x} here starts no valid character")))
        }
    }
}

const PUNCTS: [&str; 14] = ["->", "(", ")", "{", "}", "[", "]", "<", ">", ",", ":", "=", "?", "*"];

#[derive(Clone)]
pub struct Lexer<'a> {
    src: &'a str,
    pos: usize,
    line: u32,
    col: u32,
    file: Arc<str>,
    /// Brackets open at this point.
    depth: u32,
}

fn is_id_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

fn is_id_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'.' || c == b'$'
}

impl<'a> Lexer<'a> {
    pub fn new(src: &'a str, file: Arc<str>) -> Self {
        Lexer { src, pos: 0, line: 1, col: 1, file, depth: 0 }
    }

    pub fn loc(&self) -> Location {
        Location::new(self.file.clone(), self.line, self.col)
    }

    fn peek_byte(&self) -> Option<u8> {
        self.src.as_bytes().get(self.pos).copied()
    }

    fn byte_at(&self, offset: usize) -> Option<u8> {
        self.src.as_bytes().get(self.pos + offset).copied()
    }

    fn bump(&mut self) {
        if let Some(c) = self.peek_byte() {
            self.pos += 1;
            if c == b'\n' {
                self.line += 1;
                self.col = 1;
            } else if c & 0xC0 != 0x80 {
                self.col += 1;
            }
        }
    }

    fn skip_trivia(&mut self) {
        loop {
            match self.peek_byte() {
                Some(c) if c.is_ascii_whitespace() => self.bump(),
                Some(b'/') if self.byte_at(1) == Some(b'/') => {
                    while !matches!(self.peek_byte(), None | Some(b'\n')) {
                        self.bump();
                    }
                }
                _ => return,
            }
        }
    }

    fn take_while(&mut self, pred: impl Fn(u8) -> bool) -> &'a str {
        let start = self.pos;
        while self.peek_byte().is_some_and(&pred) {
            self.bump();
        }
        &self.src[start..self.pos]
    }

    /// The next token and the location where it starts.
    pub fn next_token(&mut self) -> Result<(Token, Location), Diagnostic> {
        self.skip_trivia();
        let loc = self.loc();
        let Some(c) = self.peek_byte() else {
            return Ok((Token::Eof, loc));
        };
        let tok = match c {
            b'%' | b'^' | b'@' | b'#' | b'!' => {
                self.bump();
                let name = self.take_while(is_id_char);
                if name.is_empty() {
                    return Err(Diagnostic::error(loc, format!("expected an identifier after '{}'", c as char)));
                }
                let name = name.to_string();
                match c {
                    b'%' => Token::ValueId(name),
                    b'^' => Token::BlockId(name),
                    b'@' => Token::Symbol(name),
                    b'#' => Token::HashIdent(name),
                    _ => Token::BangIdent(name),
                }
            }
            b'"' => self.lex_string(&loc)?,
            b'-' if self.byte_at(1) == Some(b'>') => {
                self.bump();
                self.bump();
                Token::Punct("->")
            }
            b'-' | b'0'..=b'9' => self.lex_number(&loc)?,
            c if is_id_start(c) => Token::Ident(self.take_while(is_id_char).to_string()),
            _ => {
                let rest = &self.src[self.pos..];
                match PUNCTS.iter().find(|p| rest.starts_with(**p)) {
                    Some(p) => {
                        for _ in 0..p.len() {
                            self.bump();
                        }
                        match *p {
                            "{" | "(" | "[" | "<" => {
                                self.depth += 1;
                                if self.depth > MAX_NESTING {
                                    let msg = format!("brackets and regions nest more than {MAX_NESTING} deep here, the limit");
                                    return Err(Diagnostic::error(loc, msg));
                                }
                            }
                            "}" | ")" | "]" | ">" => self.depth = self.depth.saturating_sub(1),
                            _ => {}
                        }
                        Token::Punct(p)
                    }
                    None => {
                        let ch = rest.chars().next().unwrap_or('?');
                        return Err(Diagnostic::error(loc, format!("unexpected character '{ch}'")));
                    }
                }
            }
        };
        Ok((tok, loc))
    }

    fn lex_number(&mut self, loc: &Location) -> Result<Token, Diagnostic> {
        let start = self.pos;
        if self.peek_byte() == Some(b'-') {
            self.bump();
        }
        self.take_while(|c| c.is_ascii_digit());
        let mut is_float = false;
        if self.peek_byte() == Some(b'.') && self.byte_at(1).is_some_and(|c| c.is_ascii_digit()) {
            is_float = true;
            self.bump();
            self.take_while(|c| c.is_ascii_digit());
        }
        if matches!(self.peek_byte(), Some(b'e' | b'E'))
            && (self.byte_at(1).is_some_and(|c| c.is_ascii_digit())
                || (matches!(self.byte_at(1), Some(b'+' | b'-')) && self.byte_at(2).is_some_and(|c| c.is_ascii_digit())))
        {
            is_float = true;
            self.bump();
            self.bump();
            self.take_while(|c| c.is_ascii_digit());
        }
        let text = &self.src[start..self.pos];
        if text == "-" {
            return Err(Diagnostic::error(loc.clone(), "expected a digit after '-'"));
        }
        if is_float {
            // A literal's digits never spell an infinity: one that parses to
            // one overflowed f64, which would otherwise become inf unseen.
            match text.parse::<f64>() {
                Ok(v) if v.is_finite() => Ok(Token::Float(v)),
                Ok(_) => Err(Diagnostic::error(loc.clone(), format!("float literal '{text}' does not fit in 64 bits"))),
                Err(_) => Err(Diagnostic::error(loc.clone(), format!("invalid float literal '{text}'"))),
            }
        } else {
            text.parse().map(Token::Int).map_err(|_| Diagnostic::error(loc.clone(), format!("integer literal '{text}' does not fit in 64 bits")))
        }
    }

    fn lex_string(&mut self, loc: &Location) -> Result<Token, Diagnostic> {
        self.bump();
        let mut out = String::new();
        loop {
            match self.peek_byte() {
                None | Some(b'\n') => return Err(Diagnostic::error(loc.clone(), "unterminated string literal")),
                Some(b'"') => {
                    self.bump();
                    return Ok(Token::Str(out));
                }
                Some(b'\\') => {
                    self.bump();
                    match self.peek_byte() {
                        Some(b'"') => out.push('"'),
                        Some(b'\\') => out.push('\\'),
                        Some(b'n') => out.push('\n'),
                        Some(b't') => out.push('\t'),
                        _ => return Err(Diagnostic::error(self.loc(), "unknown escape in string literal")),
                    }
                    self.bump();
                }
                Some(_) => {
                    let ch = self.src[self.pos..].chars().next().expect("not at end");
                    out.push(ch);
                    for _ in 0..ch.len_utf8() {
                        self.bump();
                    }
                }
            }
        }
    }

    /// Lexes the dimension list of a shaped type, `128x64x` or `?x?x`, up to
    /// and excluding the element type. `None` stands for `?`.
    pub fn lex_dims(&mut self) -> Result<Vec<Option<i64>>, Diagnostic> {
        self.skip_trivia();
        let mut dims = Vec::new();
        loop {
            let loc = self.loc();
            let dim = match self.peek_byte() {
                Some(b'?') => {
                    self.bump();
                    None
                }
                Some(c) if c.is_ascii_digit() => {
                    let text = self.take_while(|c| c.is_ascii_digit());
                    let v: i64 = text.parse().map_err(|_| Diagnostic::error(loc.clone(), format!("dimension '{text}' is too large")))?;
                    Some(v)
                }
                // A parameter: upper case and '_', so the 'x' after it ends it.
                Some(c) if c.is_ascii_uppercase() => {
                    let text = self.take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == b'_');
                    let Some(param) = crate::ir::Param::from_name(text) else {
                        let known: Vec<&str> = crate::ir::Param::ALL.iter().map(|p| p.name()).collect();
                        return Err(Diagnostic::error(loc, format!("unknown parameter '{text}' in a shape (parameters: {})", known.join(", "))));
                    };
                    Some(param.extent())
                }
                _ => return Ok(dims),
            };
            if self.peek_byte() != Some(b'x') {
                return Err(Diagnostic::error(self.loc(), "expected 'x' after a dimension"));
            }
            self.bump();
            dims.push(dim);
        }
    }
}
