//! A session with every session related to it by forks, as `/tree` draws them: each
//! one's requests and compaction stages in order, and where each fork branched off.

use std::path::Path;

use super::{Origin, SessionError, list, restore};
use crate::compact::Stage;
use crate::compact::markers::{MessageKind, classify};
use crate::record::Past;

/// One session of the family.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Branch {
    pub id: String,
    pub parent: Option<Origin>,
    pub nodes: Vec<Node>,
    /// The pid of the scratchpad that has it open now.
    pub open_in: Option<String>,
}

/// A point of a session that a fork can start before.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Node {
    /// A request, the `position`-th message the session showed.
    Request { position: usize, text: String },
    /// A compaction stage that changed the history, after `shown` messages.
    Stage {
        id: String,
        shown: usize,
        stage: Stage,
        chars_before: usize,
        chars_after: usize,
        undone: bool,
    },
}

/// The sessions forks relate to session `id` in `dir`: its oldest ancestor first, then
/// every descendant, each after its parent.
pub fn family(dir: &Path, id: &str) -> Result<Vec<Branch>, SessionError> {
    let sessions = list(dir);
    let parent_of = |id: &str| {
        sessions
            .iter()
            .find(|s| s.id == id)
            .and_then(|s| s.parent.as_ref().map(|p| p.session.clone()))
    };
    let mut root = id.to_string();
    // A chain of parents is finite unless journals were edited into a loop.
    for _ in 0..sessions.len() {
        match parent_of(&root) {
            Some(parent) if sessions.iter().any(|s| s.id == parent) => root = parent,
            _ => break,
        }
    }
    let mut order = vec![root];
    let mut next = 0;
    while next < order.len() {
        let current = order[next].clone();
        if let Some(summary) = sessions.iter().find(|s| s.id == current) {
            for child in &summary.branches {
                if !order.contains(child) {
                    order.push(child.clone());
                }
            }
        }
        next += 1;
    }
    order
        .into_iter()
        .filter_map(|id| sessions.iter().find(|s| s.id == id))
        .map(|summary| {
            let restored = restore(&summary.path)?;
            Ok(Branch {
                id: summary.id.clone(),
                parent: summary.parent.clone(),
                nodes: nodes_of(&restored.past),
                open_in: summary.open_in.clone(),
            })
        })
        .collect()
}

/// The requests and the stages that changed the history, in the order they happened.
pub fn nodes_of(past: &[Past]) -> Vec<Node> {
    let mut nodes = Vec::new();
    let mut position = 0;
    for item in past {
        match item {
            Past::Message { message } => {
                position += 1;
                if let MessageKind::UserPrompt(text) = classify(message) {
                    nodes.push(Node::Request { position, text });
                }
            }
            Past::Stage { event } if event.can_be_undone() => nodes.push(Node::Stage {
                id: event.id.clone(),
                shown: position,
                stage: event.stage,
                chars_before: event.chars_before,
                chars_after: event.chars_after,
                undone: false,
            }),
            Past::Undo { undid, .. } => {
                let newest = nodes.iter_mut().rev().find_map(|node| match node {
                    Node::Stage { id, undone, .. } if !*undone && (undid.is_empty() || id == undid) => Some(undone),
                    _ => None,
                });
                if let Some(undone) = newest {
                    *undone = true;
                }
            }
            _ => {}
        }
    }
    nodes
}
