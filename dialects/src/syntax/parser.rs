//! A recursive-descent parser for MLIR's textual syntax, in both the custom
//! form each op defines and the generic `"dialect.op"(...)` form.
//!
//! Dialect parse functions drive the [`Parser`] through its `parse_*`,
//! `expect*` and `resolve*` methods, as MLIR's `OpAsmParser` does.

use super::lexer::{Lexer, Token};
use crate::diagnostic::{Diagnostic, Location};
use crate::ir::{Attribute, Attributes, Body, Function, Layout, Module, RefType, Region, TileType, Type, Value};
use crate::ir::ElemType;
use crate::registry::{self, OpDef, ParsedOp};
use std::collections::HashMap;
use std::sync::Arc;

/// The op name functions are spelled with.
pub const FUNC_OP: &str = "tile.func";

/// A `%name` read from the text, to be resolved against its definition once
/// the op's syntax has said which type it must have.
#[derive(Clone, Debug)]
pub struct UnresolvedOperand {
    /// The SSA name without `%`.
    pub name: String,
    /// Where it was written.
    pub loc: Location,
}

/// Parses a whole file of functions, optionally wrapped in `module { ... }`.
pub fn parse_module(src: &str, file_name: &str) -> Result<Module, Diagnostic> {
    let mut parser = Parser::new(src, Arc::from(file_name));
    parser.parse_module()
}

/// The textual IR's recursive-descent parser; custom op syntax calls its methods.
pub struct Parser<'a> {
    lexer: Lexer<'a>,
    body: Body,
    /// Values visible by name; a stack of scopes, one per region being parsed.
    names: HashMap<String, Value>,
    scopes: Vec<Vec<String>>,
}

impl<'a> Parser<'a> {
    fn new(src: &'a str, file: Arc<str>) -> Self {
        Parser { lexer: Lexer::new(src, file), body: Body::default(), names: HashMap::new(), scopes: Vec::new() }
    }

    // ---- token-level helpers -------------------------------------------

    /// The next token, without consuming it.
    pub fn peek(&self) -> Result<Token, Diagnostic> {
        self.lexer.clone().next_token().map(|(t, _)| t)
    }

    /// The location of the next token.
    pub fn loc(&self) -> Location {
        let mut probe = self.lexer.clone();
        match probe.next_token() {
            Ok((_, loc)) => loc,
            Err(d) => d.loc,
        }
    }

    /// Consumes the next token and returns it with its location.
    pub fn next(&mut self) -> Result<(Token, Location), Diagnostic> {
        self.lexer.next_token()
    }

    /// An error at the current token's location.
    pub fn error<T>(&self, message: impl Into<String>) -> Result<T, Diagnostic> {
        Err(Diagnostic::error(self.loc(), message))
    }

    fn unexpected<T>(&self, wanted: &str) -> Result<T, Diagnostic> {
        let found = self.peek()?;
        self.error(format!("expected {wanted}, found {}", found.describe()))
    }

    /// Consumes `punct` if it is next; whether it did.
    pub fn consume_if(&mut self, punct: &str) -> Result<bool, Diagnostic> {
        if matches!(self.peek()?, Token::Punct(p) if p == punct) {
            self.next()?;
            return Ok(true);
        }
        Ok(false)
    }

    /// Consumes `punct` or errors naming what came instead.
    pub fn expect(&mut self, punct: &str) -> Result<(), Diagnostic> {
        if self.consume_if(punct)? {
            Ok(())
        } else {
            self.unexpected(&format!("'{punct}'"))
        }
    }

    /// Consumes the bare word `keyword` if it is next; whether it did.
    pub fn consume_keyword(&mut self, keyword: &str) -> Result<bool, Diagnostic> {
        if matches!(self.peek()?, Token::Ident(k) if k == keyword) {
            self.next()?;
            return Ok(true);
        }
        Ok(false)
    }

    /// Consumes the bare word `keyword` or errors.
    pub fn expect_keyword(&mut self, keyword: &str) -> Result<(), Diagnostic> {
        if self.consume_keyword(keyword)? {
            Ok(())
        } else {
            self.unexpected(&format!("'{keyword}'"))
        }
    }

    /// A bare word and its location.
    pub fn parse_keyword(&mut self) -> Result<(String, Location), Diagnostic> {
        match self.peek()? {
            Token::Ident(k) => {
                let (_, loc) = self.next()?;
                Ok((k, loc))
            }
            _ => self.unexpected("a keyword"),
        }
    }

    /// An integer literal (with an optional `-`).
    pub fn parse_int(&mut self) -> Result<i64, Diagnostic> {
        match self.peek()? {
            Token::Int(v) => {
                self.next()?;
                Ok(v)
            }
            _ => self.unexpected("an integer"),
        }
    }

    /// Parses `elem (, elem)*` with `f` until no comma follows.
    pub fn parse_comma_separated<T>(
        &mut self,
        mut f: impl FnMut(&mut Self) -> Result<T, Diagnostic>,
    ) -> Result<Vec<T>, Diagnostic> {
        let mut items = vec![f(self)?];
        while self.consume_if(",")? {
            items.push(f(self)?);
        }
        Ok(items)
    }

    /// Parses `open (elem (, elem)*)? close`.
    pub fn parse_delimited<T>(
        &mut self,
        open: &str,
        close: &str,
        f: impl FnMut(&mut Self) -> Result<T, Diagnostic>,
    ) -> Result<Vec<T>, Diagnostic> {
        self.expect(open)?;
        if self.consume_if(close)? {
            return Ok(Vec::new());
        }
        let items = self.parse_comma_separated(f)?;
        self.expect(close)?;
        Ok(items)
    }

    // ---- values ----------------------------------------------------------

    /// An SSA use (`%name`), resolved later against its type.
    pub fn parse_operand(&mut self) -> Result<UnresolvedOperand, Diagnostic> {
        match self.peek()? {
            Token::ValueId(name) => {
                let (_, loc) = self.next()?;
                Ok(UnresolvedOperand { name, loc })
            }
            _ => self.unexpected("an SSA value"),
        }
    }

    /// Zero or more comma-separated operands (none if the next token is not a
    /// value).
    pub fn parse_operand_list(&mut self) -> Result<Vec<UnresolvedOperand>, Diagnostic> {
        if !matches!(self.peek()?, Token::ValueId(_)) {
            return Ok(Vec::new());
        }
        self.parse_comma_separated(Self::parse_operand)
    }

    /// Looks `operand` up and checks it has type `ty`, as MLIR's parser does.
    pub fn resolve(&self, operand: &UnresolvedOperand, ty: &Type) -> Result<Value, Diagnostic> {
        let value = self.lookup(operand)?;
        let actual = self.body.value_type(value);
        if actual != ty {
            return Err(Diagnostic::error(
                operand.loc.clone(),
                format!(
                    "use of value '%{}' expects different type than prior uses: '{}' vs '{}'",
                    operand.name,
                    super::printer::type_to_string(ty),
                    super::printer::type_to_string(actual)
                ),
            ));
        }
        Ok(value)
    }

    /// Resolves `operands` against `types`, pairwise.
    pub fn resolve_all(&self, operands: &[UnresolvedOperand], types: &[Type]) -> Result<Vec<Value>, Diagnostic> {
        if operands.len() != types.len() {
            let loc = operands.first().map(|o| o.loc.clone()).unwrap_or_else(|| self.loc());
            return Err(Diagnostic::error(
                loc,
                format!("{} operands present, but expected {} types", operands.len(), types.len()),
            ));
        }
        operands.iter().zip(types).map(|(o, t)| self.resolve(o, t)).collect()
    }

    fn lookup(&self, operand: &UnresolvedOperand) -> Result<Value, Diagnostic> {
        self.names.get(&operand.name).copied().ok_or_else(|| {
            Diagnostic::error(operand.loc.clone(), format!("use of undefined value '%{}'", operand.name))
        })
    }

    fn define(&mut self, name: &str, loc: &Location, value: Value) -> Result<(), Diagnostic> {
        if self.names.contains_key(name) {
            return Err(Diagnostic::error(loc.clone(), format!("redefinition of SSA value '%{name}'")));
        }
        self.names.insert(name.to_string(), value);
        self.scopes.last_mut().expect("a scope is open").push(name.to_string());
        self.body.values[value].name_hint = Some(name.to_string());
        Ok(())
    }

    // ---- types -------------------------------------------------------------

    /// Any type.
    pub fn parse_type(&mut self) -> Result<Type, Diagnostic> {
        let (tok, loc) = self.next()?;
        match tok {
            Token::Ident(name) if name == "tensor" => self.parse_tile_type_body().map(Type::Tile),
            Token::Ident(name) => match ElemType::from_mnemonic(&name) {
                Some(e) => Ok(Type::Scalar(e)),
                None => Err(Diagnostic::error(loc, format!("unknown type '{name}'"))),
            },
            Token::BangIdent(name) if name == "tile.ref" => self.parse_ref_type_body(),
            Token::BangIdent(name) if name == "nv.smem" => self.parse_smem_type_body(&loc),
            Token::BangIdent(name) if name == "nv.mbarrier" => {
                self.expect("<")?;
                let count = self.parse_int()?;
                self.expect(">")?;
                if count <= 0 {
                    return Err(Diagnostic::error(loc, "'!nv.mbarrier' needs a positive count"));
                }
                Ok(Type::MBarrier(count))
            }
            Token::BangIdent(name) => Err(Diagnostic::error(loc, format!("unknown type '!{name}'"))),
            other => Err(Diagnostic::error(loc, format!("expected a type, found {}", other.describe()))),
        }
    }

    /// A `tensor<...>` type.
    pub fn parse_tile_type(&mut self) -> Result<TileType, Diagnostic> {
        let loc = self.loc();
        match self.parse_type()? {
            Type::Tile(t) => Ok(t),
            other => Err(Diagnostic::error(
                loc,
                format!("expected a tile type, found '{}'", super::printer::type_to_string(&other)),
            )),
        }
    }

    /// Types separated by commas.
    pub fn parse_type_list(&mut self) -> Result<Vec<Type>, Diagnostic> {
        self.parse_comma_separated(Self::parse_type)
    }

    fn parse_elem_type(&mut self) -> Result<ElemType, Diagnostic> {
        let (tok, loc) = self.next()?;
        match &tok {
            Token::Ident(name) => ElemType::from_mnemonic(name)
                .ok_or_else(|| Diagnostic::error(loc, format!("unknown element type '{name}'"))),
            _ => Err(Diagnostic::error(loc, format!("expected an element type, found {}", tok.describe()))),
        }
    }

    /// `<128x64xbf16>` or `<128x64xbf16, #tile.layout<...>>`, after `tensor`.
    fn parse_tile_type_body(&mut self) -> Result<TileType, Diagnostic> {
        self.expect("<")?;
        let loc = self.loc();
        let dims = self.lexer.lex_dims()?;
        let shape = dims
            .into_iter()
            .map(|d| d.ok_or_else(|| Diagnostic::error(loc.clone(), "tiles must have a static shape")))
            .collect::<Result<Vec<_>, _>>()?;
        let elem = self.parse_elem_type()?;
        let layout = if self.consume_if(",")? { Some(self.parse_layout()?) } else { None };
        self.expect(">")?;
        Ok(TileType { shape, elem, layout })
    }

    /// `<?x?xbf16>`, after `!tile.ref`.
    fn parse_ref_type_body(&mut self) -> Result<Type, Diagnostic> {
        self.expect("<")?;
        let loc = self.loc();
        let shape = self.lexer.lex_dims()?;
        if shape.iter().flatten().any(|&d| d < 0) {
            return Err(Diagnostic::error(loc, "a tensor reference's dimensions are numbers or '?', not parameters"));
        }
        let elem = self.parse_elem_type()?;
        self.expect(">")?;
        Ok(Type::Ref(RefType { shape, elem }))
    }

    /// `<2x128x64xbf16, #tile.nvmma_shared<...>>`, after `!nv.smem`.
    fn parse_smem_type_body(&mut self, loc: &Location) -> Result<Type, Diagnostic> {
        let tile = self.parse_tile_type_body()?;
        if tile.is_parametric() {
            return Err(Diagnostic::error(loc.clone(), "'!nv.smem' shapes are concrete: bind the parameters first (tile-select-config)"));
        }
        let Some((&stages, shape)) = tile.shape.split_first().filter(|(_, rest)| !rest.is_empty()) else {
            return Err(Diagnostic::error(loc.clone(), "'!nv.smem' needs a stage dimension and a tile shape"));
        };
        let tile = TileType { shape: shape.to_vec(), ..tile };
        Ok(Type::Smem(crate::ir::SmemType { stages, tile }))
    }

    // ---- layouts -------------------------------------------------------------

    /// A `#tile.<kind><...>` layout attribute.
    pub fn parse_layout(&mut self) -> Result<Layout, Diagnostic> {
        let (tok, loc) = self.next()?;
        let Token::HashIdent(name) = tok else {
            return Err(Diagnostic::error(loc, format!("expected a layout attribute, found {}", tok.describe())));
        };
        let params = self.parse_layout_params()?;
        let mut fields = LayoutFields { params, loc: loc.clone(), layout: name.clone() };
        let layout = match name.as_str() {
            "tile.nvmma_shared" => Layout::NvmmaShared {
                swizzle_bytes: fields.int("swizzle")?,
                transposed: fields.bool_or("transposed", false)?,
                padding_elems: fields.int_or("padding", 0)?,
            },
            "tile.mma" => Layout::Mma {
                version: fields.int("version")?,
                warps_per_cta: fields.ints("warps_per_cta")?,
                instr_shape: fields.ints("instr_shape")?,
            },
            "tile.dot_operand" => Layout::DotOperand {
                op_idx: fields.int("op_idx")?,
                k_width: fields.int("k_width")?,
                parent: Box::new(fields.layout("parent")?),
            },
            "tile.blocked" => Layout::Blocked {
                size_per_thread: fields.ints("size_per_thread")?,
                threads_per_warp: fields.ints("threads_per_warp")?,
                warps_per_cta: fields.ints("warps_per_cta")?,
                order: fields.ints("order")?,
            },
            "tile.slice" => Layout::Slice { dim: fields.int("dim")?, parent: Box::new(fields.layout("parent")?) },
            _ => return Err(Diagnostic::error(loc, format!("unknown layout '#{name}'"))),
        };
        fields.finish()?;
        Ok(layout)
    }

    fn parse_layout_params(&mut self) -> Result<Vec<(String, LayoutParam, Location)>, Diagnostic> {
        self.parse_delimited("<", ">", |p| {
            let (key, loc) = p.parse_keyword()?;
            p.expect("=")?;
            let value = match p.peek()? {
                Token::HashIdent(_) => LayoutParam::Layout(p.parse_layout()?),
                Token::Punct("[") => LayoutParam::Ints(p.parse_delimited("[", "]", Self::parse_int)?),
                Token::Ident(k) if k == "true" || k == "false" => {
                    p.next()?;
                    LayoutParam::Bool(k == "true")
                }
                _ => LayoutParam::Int(p.parse_int()?),
            };
            Ok((key, value, loc))
        })
    }

    // ---- attributes ----------------------------------------------------------

    /// An optional `{name = value, unit_name, ...}`.
    pub fn parse_optional_attr_dict(&mut self) -> Result<Attributes, Diagnostic> {
        let mut attrs = Attributes::new();
        if !matches!(self.peek()?, Token::Punct("{")) {
            return Ok(attrs);
        }
        let entries = self.parse_delimited("{", "}", |p| {
            let (name, loc) = match p.next()? {
                (Token::Ident(n), loc) | (Token::Str(n), loc) => (n, loc),
                (t, loc) => return Err(Diagnostic::error(loc, format!("expected an attribute name, found {}", t.describe()))),
            };
            let value = if p.consume_if("=")? { p.parse_attribute()? } else { Attribute::Unit };
            Ok((name, value, loc))
        })?;
        for (name, value, loc) in entries {
            if attrs.has(&name) {
                return Err(Diagnostic::error(loc, format!("duplicate attribute '{name}'")));
            }
            attrs.set(name, value);
        }
        Ok(attrs)
    }

    /// Any attribute value.
    pub fn parse_attribute(&mut self) -> Result<Attribute, Diagnostic> {
        let loc = self.loc();
        match self.peek()? {
            Token::Int(v) => {
                self.next()?;
                let ty = self.parse_optional_literal_type(ElemType::I64)?;
                if ty.is_float() {
                    return Ok(Attribute::Float(v as f64, ty));
                }
                Ok(Attribute::Int(v, ty))
            }
            Token::Float(v) => {
                self.next()?;
                if !matches!(self.peek()?, Token::Punct(":")) {
                    return Err(Diagnostic::error(loc, "a float literal needs a type, like '1.0 : f32'"));
                }
                let ty = self.parse_optional_literal_type(ElemType::F32)?;
                if !ty.is_float() {
                    return Err(Diagnostic::error(loc, "a float literal needs a float type"));
                }
                Ok(Attribute::Float(v, ty))
            }
            Token::Str(s) => {
                self.next()?;
                Ok(Attribute::String(s))
            }
            Token::Ident(k) if k == "true" || k == "false" => {
                self.next()?;
                Ok(Attribute::Bool(k == "true"))
            }
            Token::Ident(k) if k == "unit" => {
                self.next()?;
                Ok(Attribute::Unit)
            }
            Token::Punct("[") => Ok(Attribute::Array(self.parse_delimited("[", "]", Self::parse_attribute)?)),
            Token::Punct("{") => Ok(Attribute::Dict(self.parse_optional_attr_dict()?)),
            Token::Ident(_) | Token::BangIdent(_) => Ok(Attribute::Type(self.parse_type()?)),
            other => Err(Diagnostic::error(loc, format!("expected an attribute value, found {}", other.describe()))),
        }
    }

    /// `: type` after a literal, or `default` when absent.
    fn parse_optional_literal_type(&mut self, default: ElemType) -> Result<ElemType, Diagnostic> {
        if !self.consume_if(":")? {
            return Ok(default);
        }
        let loc = self.loc();
        match self.parse_type()? {
            Type::Scalar(e) => Ok(e),
            other => Err(Diagnostic::error(
                loc,
                format!("a literal's type must be a scalar, found '{}'", super::printer::type_to_string(&other)),
            )),
        }
    }

    // ---- regions ---------------------------------------------------------------

    /// Parses `{ ops }` as a region whose entry block has `args` (names and
    /// types, defined inside the region's scope). The region is created
    /// detached; the op parser attaches it.
    pub fn parse_region(&mut self, args: &[(UnresolvedOperand, Type)]) -> Result<Region, Diagnostic> {
        let open_loc = self.loc();
        self.expect("{")?;
        let region = self.body.new_region(None);
        let types: Vec<Type> = args.iter().map(|(_, t)| t.clone()).collect();
        let block = self.body.append_block(region, &types);
        self.scopes.push(Vec::new());
        let result = self.parse_region_contents(block, args, &open_loc);
        for name in self.scopes.pop().expect("scope pushed above") {
            self.names.remove(&name);
        }
        result?;
        Ok(region)
    }

    fn parse_region_contents(
        &mut self,
        block: crate::ir::Block,
        args: &[(UnresolvedOperand, Type)],
        open_loc: &Location,
    ) -> Result<(), Diagnostic> {
        let arg_values = self.body.blocks[block].args.clone();
        for ((name, _), value) in args.iter().zip(arg_values) {
            self.define(&name.name, &name.loc, value)?;
        }
        // The generic form spells the entry block's arguments as a label.
        if let Token::BlockId(_) = self.peek()? {
            self.parse_block_label(block)?;
        }
        loop {
            match self.peek()? {
                Token::Punct("}") => {
                    self.next()?;
                    return Ok(());
                }
                Token::Eof => {
                    return Err(Diagnostic::error(self.loc(), "unexpected end of file: unterminated region")
                        .with_note(open_loc.clone(), "the region opened here"))
                }
                _ => {
                    let op = self.parse_operation()?;
                    self.body.append_op(block, op);
                }
            }
        }
    }

    /// `^bb0(%a: T, ...):` naming the entry block's arguments.
    fn parse_block_label(&mut self, block: crate::ir::Block) -> Result<(), Diagnostic> {
        self.next()?;
        let args = if matches!(self.peek()?, Token::Punct("(")) {
            self.parse_delimited("(", ")", |p| {
                let name = p.parse_operand()?;
                p.expect(":")?;
                Ok((name, p.parse_type()?))
            })?
        } else {
            Vec::new()
        };
        self.expect(":")?;
        if !self.body.blocks[block].args.is_empty() {
            return self.error("block arguments are given twice");
        }
        for (i, (name, ty)) in args.into_iter().enumerate() {
            let value = self.body.values.push(crate::ir::ValueData {
                ty,
                def: crate::ir::ValueDef::BlockArg(block, i),
                name_hint: None,
            });
            self.body.blocks[block].args.push(value);
            self.define(&name.name, &name.loc, value)?;
        }
        Ok(())
    }

    // ---- operations ------------------------------------------------------------

    fn parse_operation(&mut self) -> Result<crate::ir::Op, Diagnostic> {
        let results = self.parse_result_names()?;
        let loc = self.loc();
        let (name_tok, _) = self.next()?;
        let (def, generic) = match name_tok {
            Token::Ident(name) => (self.lookup_op(&name, &loc)?, false),
            Token::Str(name) => (self.lookup_op(&name, &loc)?, true),
            other => return Err(Diagnostic::error(loc, format!("expected an operation name, found {}", other.describe()))),
        };
        let parsed = if generic { self.parse_generic_op()? } else { (def.parse)(self)? };
        if parsed.result_types.len() != results.len() {
            return Err(Diagnostic::error(
                loc,
                format!(
                    "'{}' op defines {} result(s) but {} name(s) are bound to it",
                    def.name,
                    parsed.result_types.len(),
                    results.len()
                ),
            ));
        }
        let op = self.body.create_op(def, parsed.operands, &parsed.result_types, parsed.attrs, loc);
        for region in parsed.regions {
            self.body.regions[region].parent = Some(op);
            self.body.ops[op].regions.push(region);
        }
        let result_values = self.body.ops[op].results.clone();
        for (name, value) in results.iter().zip(result_values) {
            self.define(&name.name, &name.loc, value)?;
        }
        Ok(op)
    }

    fn lookup_op(&self, name: &str, loc: &Location) -> Result<&'static OpDef, Diagnostic> {
        registry::lookup(name).ok_or_else(|| Diagnostic::error(loc.clone(), format!("unknown operation '{name}'")))
    }

    /// `%a, %b =`, or nothing.
    fn parse_result_names(&mut self) -> Result<Vec<UnresolvedOperand>, Diagnostic> {
        if !matches!(self.peek()?, Token::ValueId(_)) {
            return Ok(Vec::new());
        }
        let names = self.parse_comma_separated(Self::parse_operand)?;
        self.expect("=")?;
        Ok(names)
    }

    /// The generic form after the op name:
    /// `(%a, %b) ({region}) {attrs} : (T, T) -> (R)`.
    fn parse_generic_op(&mut self) -> Result<ParsedOp, Diagnostic> {
        let operands = self.parse_delimited("(", ")", Self::parse_operand)?;
        let mut regions = Vec::new();
        if self.consume_if("(")? {
            regions = self.parse_comma_separated(|p| p.parse_region(&[]))?;
            self.expect(")")?;
        }
        let attrs = self.parse_optional_attr_dict()?;
        self.expect(":")?;
        let operand_types = self.parse_delimited("(", ")", Self::parse_type)?;
        self.expect("->")?;
        let result_types = if matches!(self.peek()?, Token::Punct("(")) {
            self.parse_delimited("(", ")", Self::parse_type)?
        } else {
            vec![self.parse_type()?]
        };
        let operands = self.resolve_all(&operands, &operand_types)?;
        Ok(ParsedOp { operands, result_types, attrs, regions })
    }

    // ---- functions and modules ---------------------------------------------------

    fn parse_module(&mut self) -> Result<Module, Diagnostic> {
        let mut module = Module::default();
        let wrapped = self.consume_keyword("module")?;
        if wrapped {
            self.expect("{")?;
        }
        loop {
            match self.peek()? {
                Token::Eof if !wrapped => return Ok(module),
                Token::Punct("}") if wrapped => {
                    self.next()?;
                    if self.peek()? != Token::Eof {
                        return self.unexpected("end of file");
                    }
                    return Ok(module);
                }
                Token::Eof => return self.error("unexpected end of file: expected '}' closing the module"),
                Token::Ident(k) if k == FUNC_OP => {
                    self.next()?;
                    module.functions.push(self.parse_function()?);
                }
                Token::Str(k) if k == FUNC_OP => {
                    self.next()?;
                    module.functions.push(self.parse_generic_function()?);
                }
                Token::Ident(k) | Token::Str(k) if k.contains('.') => {
                    return self.error(format!("unknown operation '{k}' at module level: expected '{FUNC_OP}'"))
                }
                _ => return self.unexpected(&format!("'{FUNC_OP}'")),
            }
        }
    }

    /// `@name(%a: T, ...) attributes {..} { body }`, after `tile.func`.
    fn parse_function(&mut self) -> Result<Function, Diagnostic> {
        let loc = self.loc();
        let name = match self.next()? {
            (Token::Symbol(name), _) => name,
            (t, loc) => return Err(Diagnostic::error(loc, format!("expected a function name like '@gemm', found {}", t.describe()))),
        };
        let args = self.parse_delimited("(", ")", |p| {
            let arg = p.parse_operand()?;
            p.expect(":")?;
            let ty = p.parse_type()?;
            Ok((arg, ty, p.parse_optional_attr_dict()?))
        })?;
        let attrs = if self.consume_keyword("attributes")? { self.parse_optional_attr_dict()? } else { Attributes::new() };
        let arg_attrs = args.iter().map(|(_, _, a)| a.clone()).collect();
        let args = args.into_iter().map(|(arg, ty, _)| (arg, ty)).collect();
        let mut func = self.finish_function(name, args, attrs, loc)?;
        func.arg_attrs = arg_attrs;
        Ok(func)
    }

    /// `() ({ ^bb0(%a: T): ... }) {sym_name = "f", ...} : () -> ()`, after
    /// `"tile.func"`.
    fn parse_generic_function(&mut self) -> Result<Function, Diagnostic> {
        let loc = self.loc();
        self.expect("(")?;
        self.expect(")")?;
        self.expect("(")?;
        let mut func = self.finish_function(String::new(), Vec::new(), Attributes::new(), loc.clone())?;
        self.expect(")")?;
        func.attrs = self.parse_optional_attr_dict()?;
        self.expect(":")?;
        self.expect("(")?;
        self.expect(")")?;
        self.expect("->")?;
        self.expect("(")?;
        self.expect(")")?;
        match func.attrs.remove("sym_name") {
            Some(Attribute::String(name)) => func.name = name,
            _ => return Err(Diagnostic::error(loc, "generic 'tile.func' needs a string attribute 'sym_name'")),
        }
        match func.attrs.remove("arg_attrs") {
            None => {}
            Some(Attribute::Array(dicts)) if dicts.len() == func.arg_attrs.len() => {
                for (slot, dict) in func.arg_attrs.iter_mut().zip(dicts) {
                    let Attribute::Dict(d) = dict else {
                        return Err(Diagnostic::error(loc, "'arg_attrs' must hold one dictionary per argument"));
                    };
                    *slot = d;
                }
            }
            Some(_) => return Err(Diagnostic::error(loc, "'arg_attrs' must hold one dictionary per argument")),
        }
        Ok(func)
    }

    fn finish_function(
        &mut self,
        name: String,
        args: Vec<(UnresolvedOperand, Type)>,
        attrs: Attributes,
        loc: Location,
    ) -> Result<Function, Diagnostic> {
        self.body = Body::default();
        self.names.clear();
        let region = self.parse_region(&args)?;
        let body = std::mem::take(&mut self.body);
        let arg_attrs = vec![Attributes::new(); body.blocks[body.entry_block(region)].args.len()];
        Ok(Function { name, attrs, arg_attrs, loc, body, region })
    }
}

enum LayoutParam {
    Int(i64),
    Ints(Vec<i64>),
    Bool(bool),
    Layout(Layout),
}

/// The `key = value` parameters of one layout attribute, taken out one by one
/// so that a missing, mistyped or unknown key gets its own message.
struct LayoutFields {
    params: Vec<(String, LayoutParam, Location)>,
    loc: Location,
    layout: String,
}

impl LayoutFields {
    fn take(&mut self, key: &str) -> Option<(LayoutParam, Location)> {
        let pos = self.params.iter().position(|(k, _, _)| k == key)?;
        let (_, value, loc) = self.params.remove(pos);
        Some((value, loc))
    }

    fn missing(&self, key: &str) -> Diagnostic {
        Diagnostic::error(self.loc.clone(), format!("'#{}' needs the parameter '{key}'", self.layout))
    }

    fn int_or(&mut self, key: &str, default: u32) -> Result<u32, Diagnostic> {
        match self.take(key) {
            None => Ok(default),
            Some((LayoutParam::Int(v), loc)) => {
                u32::try_from(v).map_err(|_| Diagnostic::error(loc, format!("'{key}' must be a non-negative 32-bit integer")))
            }
            Some((_, loc)) => Err(Diagnostic::error(loc, format!("'{key}' must be an integer"))),
        }
    }

    fn int(&mut self, key: &str) -> Result<u32, Diagnostic> {
        if !self.params.iter().any(|(k, _, _)| k == key) {
            return Err(self.missing(key));
        }
        self.int_or(key, 0)
    }

    fn bool_or(&mut self, key: &str, default: bool) -> Result<bool, Diagnostic> {
        match self.take(key) {
            None => Ok(default),
            Some((LayoutParam::Bool(b), _)) => Ok(b),
            Some((_, loc)) => Err(Diagnostic::error(loc, format!("'{key}' must be true or false"))),
        }
    }

    fn ints(&mut self, key: &str) -> Result<Vec<u32>, Diagnostic> {
        match self.take(key) {
            None => Err(self.missing(key)),
            Some((LayoutParam::Ints(v), loc)) => v
                .into_iter()
                .map(|x| u32::try_from(x).map_err(|_| Diagnostic::error(loc.clone(), format!("'{key}' entries must be non-negative"))))
                .collect(),
            Some((_, loc)) => Err(Diagnostic::error(loc, format!("'{key}' must be a list like [4, 1]"))),
        }
    }

    fn layout(&mut self, key: &str) -> Result<Layout, Diagnostic> {
        match self.take(key) {
            None => Err(self.missing(key)),
            Some((LayoutParam::Layout(l), _)) => Ok(l),
            Some((_, loc)) => Err(Diagnostic::error(loc, format!("'{key}' must be a layout"))),
        }
    }

    fn finish(self) -> Result<(), Diagnostic> {
        match self.params.into_iter().next() {
            None => Ok(()),
            Some((key, _, loc)) => Err(Diagnostic::error(loc, format!("unknown parameter '{key}' in '#{}'", self.layout))),
        }
    }
}
