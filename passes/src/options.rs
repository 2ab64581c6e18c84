//! Typed pass options, written `name{key=value key2=value2}` in pipelines as
//! MLIR writes them.

use std::collections::BTreeMap;

/// What values a pass option takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptionKind {
    /// An integer in `min..=max`.
    Int {
        /// The smallest value accepted.
        min: i64,
        /// The largest value accepted.
        max: i64,
    },
    /// `true` or `false`.
    Bool,
    /// One of a fixed set of words.
    Enum(&'static [&'static str]),
}

/// One option a pass accepts, with the default used when it is not given.
#[derive(Clone, Copy, Debug)]
pub struct OptionSpec {
    /// The option's name in a pipeline (`stages`).
    pub name: &'static str,
    /// The values it takes.
    pub kind: OptionKind,
    /// Its value when not given.
    pub default: &'static str,
    /// A line for `--help` and error messages.
    pub help: &'static str,
}

/// A resolved option value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OptionValue {
    /// An integer.
    Int(i64),
    /// A boolean.
    Bool(bool),
    /// A word of an enumeration.
    Word(String),
}

/// A pass's options after checking them against its specs; every declared
/// option has a value.
#[derive(Clone, Debug, Default)]
pub struct PassOptions {
    values: BTreeMap<&'static str, OptionValue>,
    /// The options the pipeline spelled out (the rest took their defaults).
    given: Vec<&'static str>,
}

impl PassOptions {
    /// Checks `given` (raw `key=value` pairs) against `specs` and fills in
    /// defaults. Errors name the option and say what was expected.
    pub fn resolve(pass: &str, specs: &[OptionSpec], given: &[(String, String)]) -> Result<PassOptions, String> {
        let mut values = BTreeMap::new();
        let mut spelled = Vec::new();
        for (key, raw) in given {
            let Some(spec) = specs.iter().find(|s| s.name == key) else {
                let known: Vec<&str> = specs.iter().map(|s| s.name).collect();
                return Err(if known.is_empty() {
                    format!("pass '{pass}' takes no options, but '{key}' was given")
                } else {
                    format!("pass '{pass}' has no option '{key}' (options: {})", known.join(", "))
                });
            };
            if values.insert(spec.name, parse_value(pass, spec, raw)?).is_some() {
                return Err(format!("option '{key}' of pass '{pass}' is given twice"));
            }
            spelled.push(spec.name);
        }
        for spec in specs {
            if !values.contains_key(spec.name) {
                let default = parse_value(pass, spec, spec.default).expect("a pass's default options are valid");
                values.insert(spec.name, default);
            }
        }
        Ok(PassOptions { values, given: spelled })
    }

    /// Whether the pipeline gave `name` (passes then take it over the
    /// function's `tile.config`).
    pub fn given(&self, name: &str) -> bool {
        self.given.contains(&name)
    }

    /// The integer option `name` (the pass declared it).
    pub fn int(&self, name: &str) -> i64 {
        match self.values.get(name) {
            Some(OptionValue::Int(v)) => *v,
            other => panic!("option '{name}' is not a declared integer option: {other:?}"),
        }
    }

    /// The boolean option `name` (the pass declared it).
    pub fn bool(&self, name: &str) -> bool {
        match self.values.get(name) {
            Some(OptionValue::Bool(v)) => *v,
            other => panic!("option '{name}' is not a declared boolean option: {other:?}"),
        }
    }

    /// The word option `name` (the pass declared it).
    pub fn word(&self, name: &str) -> &str {
        match self.values.get(name) {
            Some(OptionValue::Word(v)) => v,
            other => panic!("option '{name}' is not a declared enum option: {other:?}"),
        }
    }
}

fn parse_value(pass: &str, spec: &OptionSpec, raw: &str) -> Result<OptionValue, String> {
    let bad = |expected: String| format!("option '{}' of pass '{pass}' expects {expected}, found '{raw}'", spec.name);
    match spec.kind {
        OptionKind::Int { min, max } => match raw.parse::<i64>() {
            Ok(v) if (min..=max).contains(&v) => Ok(OptionValue::Int(v)),
            _ => Err(bad(format!("an integer from {min} to {max}"))),
        },
        OptionKind::Bool => match raw {
            "true" | "1" => Ok(OptionValue::Bool(true)),
            "false" | "0" => Ok(OptionValue::Bool(false)),
            _ => Err(bad("true or false".into())),
        },
        OptionKind::Enum(words) => match words.iter().find(|w| **w == raw) {
            Some(w) => Ok(OptionValue::Word(w.to_string())),
            None => Err(bad(format!("one of {}", words.join(", ")))),
        },
    }
}
