//! Short ids the model sees (docs/notes/layout-experiments.md §6.1): `t<n>`
//! for every tool-call block, `f<n>` for every file, numbered from 1 in order
//! of first sight and never reused. A 64-hex id costs ~40 tokens and a
//! provider call id ~12, twice per call; `t12` costs 2.
//!
//! Session state: persisted in the chat object, so aliases survive resume.
//! The agent operations accept them in both layouts.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

/// A parsed alias: zero-based index into the call or file list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Alias {
    Call(u32),
    File(u32),
}

impl Alias {
    /// `t3` / `f12` → the alias; anything else → None.
    pub fn parse(s: &str) -> Option<Alias> {
        let (kind, digits) = s.split_at_checked(1)?;
        if digits.is_empty()
            || digits.starts_with('0')
            || !digits.bytes().all(|b| b.is_ascii_digit())
        {
            return None;
        }
        let n: u32 = digits.parse().ok()?;
        match kind {
            "t" => Some(Alias::Call(n - 1)),
            "f" => Some(Alias::File(n - 1)),
            _ => None,
        }
    }

    pub fn text(self) -> String {
        match self {
            Alias::Call(i) => call_alias(i),
            Alias::File(i) => file_alias(i),
        }
    }
}

/// `t<i+1>`
pub fn call_alias(index: u32) -> String {
    format!("t{}", index + 1)
}

/// `f<i+1>`
pub fn file_alias(index: u32) -> String {
    format!("f{}", index + 1)
}

/// The alias registry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Aliases {
    /// `t<n>` → the toolcall object holding the call's result (None until
    /// the result arrives, and forever for a call that never got one).
    #[serde(default)]
    pub t: Vec<Option<String>>,
    /// `f<n>` → file object id.
    #[serde(default)]
    pub f: Vec<String>,
    /// Object id → alias (rebuilt after deserialising).
    #[serde(skip)]
    index: HashMap<String, Alias>,
}

/// Why an alias does not name an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AliasMiss {
    /// Not assigned yet.
    Unknown,
    /// A tool call whose result never arrived: nothing to show.
    NoResult,
}

impl Aliases {
    /// Rebuilds the reverse index (after deserialising).
    pub fn reindex(&mut self) {
        self.index.clear();
        for (i, id) in self.t.iter().enumerate() {
            if let Some(id) = id {
                self.index.insert(id.clone(), Alias::Call(i as u32));
            }
        }
        for (i, id) in self.f.iter().enumerate() {
            self.index.insert(id.clone(), Alias::File(i as u32));
        }
    }

    /// A new tool-call block: its index.
    pub fn push_call(&mut self) -> u32 {
        self.t.push(None);
        (self.t.len() - 1) as u32
    }

    /// The call's result arrived as toolcall object `object_id`.
    pub fn bind_call(&mut self, index: u32, object_id: &str) {
        if let Some(slot) = self.t.get_mut(index as usize) {
            *slot = Some(object_id.to_string());
            self.index.insert(object_id.to_string(), Alias::Call(index));
        }
    }

    /// The file's index, assigning the next one on first sight (true = new).
    pub fn file(&mut self, object_id: &str) -> (u32, bool) {
        if let Some(Alias::File(i)) = self.index.get(object_id) {
            return (*i, false);
        }
        let i = self.f.len() as u32;
        self.f.push(object_id.to_string());
        self.index.insert(object_id.to_string(), Alias::File(i));
        (i, true)
    }

    pub fn calls(&self) -> usize {
        self.t.len()
    }

    pub fn files(&self) -> usize {
        self.f.len()
    }

    /// The alias of an object, if it has one.
    pub fn of_object(&self, object_id: &str) -> Option<Alias> {
        self.index.get(object_id).copied()
    }

    /// The call index of a toolcall object.
    pub fn call_of(&self, object_id: &str) -> Option<u32> {
        match self.index.get(object_id) {
            Some(Alias::Call(i)) => Some(*i),
            _ => None,
        }
    }

    /// The object an alias names.
    pub fn resolve(&self, alias: Alias) -> Result<&str, AliasMiss> {
        match alias {
            Alias::Call(i) => match self.t.get(i as usize) {
                Some(Some(id)) => Ok(id),
                Some(None) => Err(AliasMiss::NoResult),
                None => Err(AliasMiss::Unknown),
            },
            Alias::File(i) => self
                .f
                .get(i as usize)
                .map(String::as_str)
                .ok_or(AliasMiss::Unknown),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_print() {
        assert_eq!(Alias::parse("t1"), Some(Alias::Call(0)));
        assert_eq!(Alias::parse("f12"), Some(Alias::File(11)));
        for bad in ["t", "t0", "t01", "x3", "t3a", "", "T3", "t-1"] {
            assert_eq!(Alias::parse(bad), None, "{bad}");
        }
        assert_eq!(Alias::Call(4).text(), "t5");
    }

    #[test]
    fn assign_bind_resolve_survive_serde() {
        let mut a = Aliases::default();
        let c0 = a.push_call();
        let c1 = a.push_call();
        a.bind_call(c1, "toolcall:s:x");
        assert_eq!(a.file("file-a"), (0, true));
        assert_eq!(a.file("file-b"), (1, true));
        assert_eq!(a.file("file-a"), (0, false));
        assert_eq!(a.resolve(Alias::Call(c0)), Err(AliasMiss::NoResult));
        assert_eq!(a.resolve(Alias::Call(9)), Err(AliasMiss::Unknown));
        let mut back: Aliases = serde_json::from_value(serde_json::to_value(&a).unwrap()).unwrap();
        back.reindex();
        assert_eq!(back.resolve(Alias::Call(1)), Ok("toolcall:s:x"));
        assert_eq!(back.of_object("file-b"), Some(Alias::File(1)));
        assert_eq!(back.file("file-c"), (2, true));
    }
}
