//! Auto-collapse (SSOT §4.3, memory-system-v0 §6.4).
//!
//! **Turn**: a user message and every model call until the next user message.
//! Turn numbers are the chat's turn indexes; harness messages that arrive
//! before the first user message belong to turn 0.
//!
//! An object is **used** when a tool result creates it, when it is read,
//! written or edited, or when the agent activates (or pins) it explicitly —
//! explicit activation counts as fresh use. After each ingest, an active,
//! unpinned, collapsible object (toolcalls; files too when `collapse_files`)
//! stays active only if it is among the `per_turn` most recently used
//! collapsible, unpinned objects of at least one of the last `turns_back`
//! turns (the current turn included). Everything else is deactivated: it stays
//! in the metadata pool. Results of the context-management tools
//! (`exempt_tools`) are never auto-activated and never count.

use std::collections::{HashSet, VecDeque};

use serde::{Deserialize, Serialize};

/// The sliding-window policy. A field, not a constant, so the replay benchmark
/// can choose the product default.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CollapsePolicy {
    /// Most recently used objects kept active per turn.
    pub per_turn: usize,
    /// How many turns (the current one included) the window spans.
    pub turns_back: usize,
    /// Whether files collapse too (false: only toolcalls do).
    pub collapse_files: bool,
    /// Context-management tools: their results never count and are never
    /// auto-activated.
    pub exempt_tools: Vec<String>,
}

impl Default for CollapsePolicy {
    fn default() -> Self {
        Self {
            per_turn: 5,
            turns_back: 3,
            collapse_files: false,
            exempt_tools: ["activate", "deactivate", "pin", "unpin"]
                .map(String::from)
                .to_vec(),
        }
    }
}

impl CollapsePolicy {
    pub fn is_context_tool(&self, tool: &str) -> bool {
        self.exempt_tools.iter().any(|t| t == tool)
    }
}

/// Uses of one turn, least recent first, each id once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnUses {
    pub turn: usize,
    pub ids: Vec<String>,
}

/// Recent uses per turn: only the turns the window can still reach are kept.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct UseWindow {
    pub turns: VecDeque<TurnUses>,
    /// Lowest flattened position (see [`UseWindow::flat`]) changed other
    /// than by appending, since [`UseWindow::take_changed_from`].
    #[serde(skip)]
    changed_from: Option<usize>,
}

impl PartialEq for UseWindow {
    fn eq(&self, other: &Self) -> bool {
        self.turns == other.turns
    }
}
impl Eq for UseWindow {}

impl UseWindow {
    /// Uses flattened: `(turn, id)` in order (how the window is stored).
    pub fn flat_len(&self) -> usize {
        self.turns.iter().map(|t| t.ids.len()).sum()
    }

    /// Flattened use `i`.
    pub fn flat(&self, mut i: usize) -> Option<(usize, &str)> {
        for t in &self.turns {
            if i < t.ids.len() {
                return Some((t.turn, &t.ids[i]));
            }
            i -= t.ids.len();
        }
        None
    }

    /// The window from flattened uses.
    pub fn from_flat(uses: impl IntoIterator<Item = (usize, String)>) -> UseWindow {
        let mut w = UseWindow::default();
        for (turn, id) in uses {
            if w.turns.back().is_none_or(|t| t.turn != turn) {
                w.turns.push_back(TurnUses {
                    turn,
                    ids: Vec::new(),
                });
            }
            w.turns.back_mut().expect("just pushed").ids.push(id);
        }
        w
    }

    /// See `changed_from`.
    pub fn take_changed_from(&mut self) -> Option<usize> {
        self.changed_from.take()
    }

    fn changed(&mut self, at: usize) {
        self.changed_from = Some(self.changed_from.map_or(at, |c| c.min(at)));
    }

    /// Records that `id` was used in `turn` (moves it to most recent).
    pub fn record(&mut self, turn: usize, id: &str, turns_back: usize) {
        let turn = turn.max(self.turns.back().map_or(0, |t| t.turn));
        if self.turns.back().is_none_or(|t| t.turn != turn) {
            self.turns.push_back(TurnUses {
                turn,
                ids: Vec::new(),
            });
        }
        let before = self.flat_len() - self.turns.back().map_or(0, |t| t.ids.len());
        let uses = self.turns.back_mut().expect("just pushed");
        let at = uses.ids.iter().position(|x| x == id);
        if let Some(p) = at {
            uses.ids.remove(p);
        }
        uses.ids.push(id.to_string());
        if let Some(p) = at {
            self.changed(before + p);
        }
        while self
            .turns
            .front()
            .is_some_and(|t| t.turn + turns_back.max(1) <= turn)
        {
            self.turns.pop_front();
            self.changed(0);
        }
    }

    /// Ids the window keeps at `current_turn`: for each of the last
    /// `turns_back` turns, the `per_turn` most recently used ids that satisfy
    /// `counts` (collapsible and not pinned).
    pub fn kept<'a>(
        &'a self,
        current_turn: usize,
        policy: &CollapsePolicy,
        counts: impl Fn(&str) -> bool,
    ) -> HashSet<&'a str> {
        let mut kept = HashSet::new();
        for uses in &self.turns {
            if uses.turn + policy.turns_back <= current_turn {
                continue;
            }
            kept.extend(
                uses.ids
                    .iter()
                    .rev()
                    .filter(|id| counts(id))
                    .take(policy.per_turn)
                    .map(String::as_str),
            );
        }
        kept
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_per_turn_most_recent_within_turns_back() {
        let p = CollapsePolicy {
            per_turn: 2,
            turns_back: 2,
            ..Default::default()
        };
        let mut w = UseWindow::default();
        for id in ["a", "b", "c"] {
            w.record(0, id, p.turns_back);
        }
        w.record(1, "d", p.turns_back);
        let k = w.kept(1, &p, |_| true);
        assert_eq!(k, HashSet::from(["b", "c", "d"]));
        // Turn 2 starts: turn 0 falls out of the window.
        let k = w.kept(2, &p, |_| true);
        assert_eq!(k, HashSet::from(["d"]));
        // Re-using "a" in turn 1 makes it fresh.
        w.record(1, "a", p.turns_back);
        assert!(w.kept(1, &p, |_| true).contains("a"));
    }

    #[test]
    fn ineligible_ids_do_not_take_slots() {
        let p = CollapsePolicy {
            per_turn: 1,
            ..Default::default()
        };
        let mut w = UseWindow::default();
        w.record(0, "x", 3);
        w.record(0, "pinned", 3);
        assert_eq!(w.kept(0, &p, |id| id != "pinned"), HashSet::from(["x"]));
    }
}
