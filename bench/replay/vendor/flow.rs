//! Which calls of a vendor trajectory are value-flow predictable: the
//! definitions of tests/replay/vendor/analyze.py, ported as they are, so
//! that the bench's counts are the script's (`python3
//! tests/replay/vendor/analyze.py` prints them).
//!
//! A call is predictable when one of its argument leaves (a string of 3+
//! characters, or an integer other than 0 and 1) is found in the result of
//! one of the [`WINDOW`] calls before it that did not fail: as a leaf of
//! its structuredContent, of JSON parsed from one of its text items, or
//! (strings of 6+ characters) as a substring of a text item or an embedded
//! resource's text. Strings compare with dashes dropped and case folded
//! (Notion's ids are written both ways). It is *novel* when such a value is
//! in neither the task text nor any earlier call's arguments: one the agent
//! can only have learnt from a result.
//!
//! One difference: Python's `casefold` folds a few characters further than
//! Rust's `to_lowercase` (`ß` is `ss`); no argument of the committed traces
//! turns on it.

use std::collections::HashSet;

use serde_json::Value;

/// A result may feed any of the next `WINDOW` calls.
pub const WINDOW: usize = 3;

/// A value as compared: a folded string or a number.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Norm {
    Str(String),
    Int(i128),
    /// A number with a fraction, by its bits.
    Float(u64),
}

impl Norm {
    /// As Python's `str()` writes it, for the search of the task text.
    fn text(&self) -> String {
        match self {
            Norm::Str(s) => s.clone(),
            Norm::Int(i) => i.to_string(),
            Norm::Float(bits) => f64::from_bits(*bits).to_string(),
        }
    }
}

/// The folded form of a string: dashes dropped, lower case.
fn fold(s: &str) -> String {
    s.replace('-', "").to_lowercase()
}

/// `norm` of analyze.py: `None` for values too common to mean anything.
pub fn norm(v: &Value) -> Option<Norm> {
    match v {
        Value::Number(n) => {
            let i = if let Some(i) = n.as_i64() {
                i128::from(i)
            } else if let Some(u) = n.as_u64() {
                i128::from(u)
            } else {
                let f = n.as_f64()?;
                if f.fract() != 0.0 || !f.is_finite() {
                    return Some(Norm::Float(f.to_bits()));
                }
                f as i128
            };
            (i != 0 && i != 1).then_some(Norm::Int(i))
        }
        Value::String(s) => {
            let s = s.trim();
            (s.chars().count() >= 3).then(|| Norm::Str(fold(s)))
        }
        _ => None,
    }
}

/// Every scalar leaf of `v`.
fn leaves<'a>(v: &'a Value, out: &mut Vec<&'a Value>) {
    match v {
        Value::Object(m) => m.values().for_each(|x| leaves(x, out)),
        Value::Array(a) => a.iter().for_each(|x| leaves(x, out)),
        _ => out.push(v),
    }
}

/// The compared values of a call's argument leaves.
pub fn arg_values(args: &Value) -> Vec<Norm> {
    if !(args.is_object() || args.is_array()) {
        return Vec::new();
    }
    let mut all = Vec::new();
    leaves(args, &mut all);
    let mut seen = HashSet::new();
    all.into_iter()
        .filter_map(norm)
        .filter(|n| seen.insert(n.clone()))
        .collect()
}

/// JSON text that parses to an object or a list.
pub fn parse_json_text(text: &str) -> Option<Value> {
    serde_json::from_str::<Value>(text)
        .ok()
        .filter(|j| j.is_object() || j.is_array())
}

/// Where values occur in one call's result (`ResultIndex` of analyze.py).
#[derive(Default)]
pub struct ResultIndex {
    exact: HashSet<Norm>,
    /// Folded texts, for the substring search.
    texts: Vec<String>,
}

impl ResultIndex {
    /// `result` as recorded: `{"content": [...], "structuredContent": ...}`.
    pub fn new(result: Option<&Value>) -> Self {
        let mut index = Self::default();
        let Some(result) = result else {
            return index;
        };
        if let Some(sc) = result.get("structuredContent").filter(|v| !v.is_null()) {
            index.add(sc);
        }
        for item in result["content"].as_array().into_iter().flatten() {
            match item["type"].as_str() {
                Some("text") => {
                    let t = item["text"].as_str().unwrap_or_default();
                    if let Some(j) = parse_json_text(t) {
                        index.add(&j);
                    }
                    index.texts.push(fold(t));
                }
                Some("resource") => {
                    let t = item["resource"]["text"].as_str().unwrap_or_default();
                    index.texts.push(fold(t));
                }
                _ => {}
            }
        }
        index
    }

    fn add(&mut self, v: &Value) {
        let mut all = Vec::new();
        leaves(v, &mut all);
        self.exact.extend(all.into_iter().filter_map(norm));
    }

    /// Whether the value `n` is in this result.
    pub fn find(&self, n: &Norm) -> bool {
        if self.exact.contains(n) {
            return true;
        }
        // Substrings: numbers and short strings match by chance too easily.
        let Norm::Str(needle) = n else {
            return false;
        };
        needle.chars().count() >= 6 && self.texts.iter().any(|t| t.contains(needle.as_str()))
    }
}

/// One call as the analysis needs it.
pub struct Step<'a> {
    pub args: &'a Value,
    pub result: Option<&'a Value>,
    pub is_error: bool,
}

/// Per call: (predictable, novel).
pub fn predictable(prompt: &str, steps: &[Step]) -> Vec<(bool, bool)> {
    let prompt = fold(prompt);
    let index: Vec<ResultIndex> = steps.iter().map(|s| ResultIndex::new(s.result)).collect();
    let mut seen_args: HashSet<Norm> = HashSet::new();
    let mut out = Vec::with_capacity(steps.len());
    for (i, step) in steps.iter().enumerate() {
        let values = arg_values(step.args);
        let found = |n: &Norm| {
            (i.saturating_sub(WINDOW)..i)
                .rev()
                .any(|j| !steps[j].is_error && index[j].find(n))
        };
        let mut flow = false;
        let mut novel = false;
        for n in &values {
            if found(n) {
                flow = true;
                if !seen_args.contains(n) && !prompt.contains(&n.text()) {
                    novel = true;
                    break;
                }
            }
        }
        out.push((flow, novel));
        seen_args.extend(values);
    }
    out
}
