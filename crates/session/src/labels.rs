//! Names the user gives to sessions and to points of them in `/tree`, kept beside the
//! journals in one small file (journals are never rewritten, and a parent may be open
//! in another scratchpad).

use std::collections::BTreeMap;
use std::path::Path;

use super::SessionError;
use super::family::Node;

const LABELS_FILE: &str = "labels.json";

/// Labels by [`key`].
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Labels(BTreeMap<String, String>);

/// The key of a session (`node: None`) or of one of its points.
pub fn key(session: &str, node: Option<&Node>) -> String {
    match node {
        None => session.to_string(),
        Some(Node::Request { position, .. }) => format!("{session}#message-{position}"),
        Some(Node::Stage { id, .. }) => format!("{session}#stage-{id}"),
    }
}

impl Labels {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    /// Set a label; an empty one removes it.
    pub fn set(&mut self, key: String, label: &str) {
        let label = label.trim();
        if label.is_empty() {
            self.0.remove(&key);
        } else {
            self.0.insert(key, label.to_string());
        }
    }
}

/// The labels kept in `dir`: none when there is no file, or when it is not a regular
/// file of labels.
pub fn load(dir: &Path) -> Labels {
    crate::store::read_json_whole(&dir.join(LABELS_FILE))
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// Keep `labels` in `dir`, whole or not at all (written aside, then renamed).
pub fn save(dir: &Path, labels: &Labels) -> Result<(), SessionError> {
    let path = dir.join(LABELS_FILE);
    crate::store::write_json_whole(&path, labels).map_err(|source| SessionError::Io { path, source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_round_trip_and_a_planted_link_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(load(dir.path()), Labels::default());
        let mut labels = Labels::default();
        let node = Node::Request {
            position: 7,
            text: "x".into(),
        };
        labels.set(key("s1", Some(&node)), "  the good try ");
        labels.set(key("s1", None), "main line");
        save(dir.path(), &labels).unwrap();
        let loaded = load(dir.path());
        assert_eq!(loaded.get("s1#message-7"), Some("the good try"));
        assert_eq!(loaded.get("s1"), Some("main line"));
        labels.set(key("s1", None), "");
        assert_eq!(labels.get("s1"), None, "an empty label removes it");

        std::fs::remove_file(dir.path().join(LABELS_FILE)).unwrap();
        let secret = dir.path().join("secret.json");
        std::fs::write(&secret, r#"{"s1":"from elsewhere"}"#).unwrap();
        std::os::unix::fs::symlink(&secret, dir.path().join(LABELS_FILE)).unwrap();
        assert_eq!(load(dir.path()), Labels::default());
    }
}
