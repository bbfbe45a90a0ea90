//! Items: the chat messages the cache layout renders, derived from the
//! stored turns (never persisted), with the call ↔ item links.

use std::collections::HashMap;

use crate::context::aliases::Aliases;
use crate::context::chat::Turn;

/// Roles rendered as they came (pi's `convertToLlm` turns them into user text).
pub const PASSTHROUGH_ROLES: [&str; 3] = ["bashExecution", "custom", "branchSummary"];

impl AsRef<Turn> for Turn {
    fn as_ref(&self) -> &Turn {
        self
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemKind {
    User,
    Assistant,
    ToolResult,
    Passthrough,
}

/// One rendered chat message, derived from the turns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Item {
    pub kind: ItemKind,
    pub turn: u32,
    /// Index in the turn's messages (unused for users).
    pub msg: u32,
    /// Assistant: its first call; tool result: its call.
    pub call: u32,
    /// Assistant: number of calls.
    pub calls: u32,
}

/// Items and the call ↔ item links (derived, never persisted).
#[derive(Debug, Clone, Default)]
pub struct Items {
    pub list: Vec<Item>,
    /// Call → its result item.
    pub result_item: Vec<Option<u32>>,
    /// Call → its assistant item.
    pub assistant_item: Vec<u32>,
    /// (turn, msg) of an assistant → its first call.
    first_call: HashMap<(u32, u32), u32>,
}

impl Items {
    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    pub fn push_user(&mut self, turn: usize) {
        self.list.push(Item {
            kind: ItemKind::User,
            turn: turn as u32,
            msg: u32::MAX,
            call: 0,
            calls: 0,
        });
    }

    pub fn push_passthrough(&mut self, turn: usize, msg: usize) {
        self.list.push(Item {
            kind: ItemKind::Passthrough,
            turn: turn as u32,
            msg: msg as u32,
            call: 0,
            calls: 0,
        });
    }

    /// An assistant message whose calls are `first..first + calls`.
    pub fn push_assistant(&mut self, turn: usize, msg: usize, first: u32, calls: u32) {
        let at = self.list.len() as u32;
        self.list.push(Item {
            kind: ItemKind::Assistant,
            turn: turn as u32,
            msg: msg as u32,
            call: first,
            calls,
        });
        for c in first..first + calls {
            let c = c as usize;
            if self.assistant_item.len() <= c {
                self.assistant_item.resize(c + 1, 0);
                self.result_item.resize(c + 1, None);
            }
            self.assistant_item[c] = at;
        }
        self.first_call.insert((turn as u32, msg as u32), first);
    }

    pub fn push_result(&mut self, turn: usize, msg: usize, call: u32) {
        let at = self.list.len() as u32;
        self.list.push(Item {
            kind: ItemKind::ToolResult,
            turn: turn as u32,
            msg: msg as u32,
            call,
            calls: 0,
        });
        if let Some(slot) = self.result_item.get_mut(call as usize) {
            *slot = Some(at);
        }
    }

    /// The call index of the `k`-th call of the assistant at (turn, msg).
    pub fn call_of(&self, turn: usize, msg: usize, k: usize) -> Option<u32> {
        self.first_call
            .get(&(turn as u32, msg as u32))
            .map(|f| f + k as u32)
    }

    /// Derives the items from stored turns (resume, reconstruction).
    pub fn from_turns<T: AsRef<Turn>>(turns: &[T], aliases: &Aliases) -> Items {
        let mut items = Items::default();
        let mut next_call = 0u32;
        for (t, turn) in turns.iter().enumerate() {
            let turn = turn.as_ref();
            if turn.user.is_some() {
                items.push_user(t);
            }
            for (m, e) in turn.messages.iter().enumerate() {
                match e.role.as_str() {
                    "assistant" if e.skipped.is_none() => {
                        let n = e.tool_calls.as_ref().map_or(0, Vec::len) as u32;
                        items.push_assistant(t, m, next_call, n);
                        next_call += n;
                    }
                    "toolResult" if e.unmatched.is_none() => {
                        if let Some(c) = e.toolcall_id.as_deref().and_then(|id| aliases.call_of(id))
                        {
                            items.push_result(t, m, c);
                        }
                    }
                    r if e.raw.is_some() && PASSTHROUGH_ROLES.contains(&r) => {
                        items.push_passthrough(t, m)
                    }
                    _ => {}
                }
            }
        }
        items
    }
}
