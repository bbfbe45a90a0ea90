//! Insertion-ordered id sets: `session_index`, `metadata_pool`, `active_set`,
//! `pinned_set`. Order matters: the pool renders in insertion order (a stable,
//! append-only prefix) and active content renders in activation order.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

/// Versions come from one counter: a set replaced by another never shows a
/// version a derived value was cached under.
static VERSIONS: AtomicU64 = AtomicU64::new(1);

fn next_version() -> u64 {
    VERSIONS.fetch_add(1, Ordering::Relaxed)
}

/// An insertion-ordered set of object ids with O(1) membership and position.
/// Removal is O(n); it only happens on the small active and pinned sets.
#[derive(Debug, Clone, Default)]
pub struct OrderedSet {
    items: Vec<String>,
    pos: HashMap<String, usize>,
    /// Lowest position a removal shifted since [`OrderedSet::take_changed_from`].
    changed_from: Option<usize>,
    /// Changes with every insert and removal (0: never changed).
    version: u64,
}

impl PartialEq for OrderedSet {
    fn eq(&self, other: &Self) -> bool {
        self.items == other.items
    }
}
impl Eq for OrderedSet {}

impl OrderedSet {
    pub fn new() -> Self {
        Self::default()
    }

    /// Builds a set from a stored list, dropping repeats (first occurrence wins).
    pub fn from_ids<I, S>(ids: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut set = Self::new();
        for id in ids {
            set.insert(id.into());
        }
        set
    }

    /// Appends `id`; false if it was already present (order unchanged).
    pub fn insert(&mut self, id: impl Into<String>) -> bool {
        let id = id.into();
        if self.pos.contains_key(&id) {
            return false;
        }
        self.pos.insert(id.clone(), self.items.len());
        self.items.push(id);
        self.version = next_version();
        true
    }

    /// Removes `id`; false if it was absent.
    pub fn remove(&mut self, id: &str) -> bool {
        let Some(at) = self.pos.remove(id) else {
            return false;
        };
        self.items.remove(at);
        self.changed_from = Some(self.changed_from.map_or(at, |c| c.min(at)));
        for (i, item) in self.items.iter().enumerate().skip(at) {
            self.pos.insert(item.clone(), i);
        }
        self.version = next_version();
        true
    }

    /// A key for values derived from the set: it changes whenever the set
    /// does, and no two different sets share one.
    pub fn version(&self) -> u64 {
        self.version
    }

    pub fn contains(&self, id: &str) -> bool {
        self.pos.contains_key(id)
    }

    /// Insertion position of `id`.
    pub fn position(&self, id: &str) -> Option<usize> {
        self.pos.get(id).copied()
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn iter(&self) -> std::slice::Iter<'_, String> {
        self.items.iter()
    }

    pub fn as_slice(&self) -> &[String] {
        &self.items
    }

    pub fn to_vec(&self) -> Vec<String> {
        self.items.clone()
    }

    /// The lowest position whose item changed by a removal since the last
    /// call (appends are not reported: they only add positions).
    pub fn take_changed_from(&mut self) -> Option<usize> {
        self.changed_from.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_insertion_order_and_positions_after_removal() {
        let mut s = OrderedSet::from_ids(["a", "b", "c", "b"]);
        assert_eq!(s.as_slice(), ["a", "b", "c"]);
        assert!(!s.insert("a"));
        assert!(s.remove("a"));
        assert_eq!(s.position("c"), Some(1));
        assert!(s.insert("a"));
        assert_eq!(s.as_slice(), ["b", "c", "a"]);
        assert!(!s.remove("zz"));
    }

    #[test]
    fn the_version_changes_with_every_change_only() {
        let mut s = OrderedSet::from_ids(["a"]);
        let v = s.version();
        assert!(!s.insert("a"));
        assert!(!s.remove("zz"));
        assert_eq!(s.version(), v);
        assert!(s.insert("b"));
        let w = s.version();
        assert_ne!(w, v);
        assert!(s.remove("a"));
        assert_ne!(s.version(), w);
        assert_ne!(
            OrderedSet::from_ids(["a"]).version(),
            v,
            "another set, another version"
        );
    }
}
