//! The chain of a session's model calls for the server's cache diagnostics: each call
//! names the previous response, and scratchpad keeps a fingerprint of what it sent,
//! so a miss the server reports can be told apart as ours (a compaction, a changed
//! instruction file or tool list) or not.

use std::hash::{Hash, Hasher};

use crate::message::Message;
use crate::protocol::{CacheReport, PrefixChange};
use crate::provider::{CacheCheck, CacheDiagnosis, ModelRequest};

/// Hashes of a request's parts, in the order the prompt cache reads them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct PrefixPrint {
    model: u64,
    system: u64,
    tools: u64,
    messages: Vec<u64>,
}

impl PrefixPrint {
    pub(super) fn of(model: &str, request: &ModelRequest<'_>) -> Self {
        PrefixPrint {
            model: hash_of(model.as_bytes()),
            system: hash_of(request.system.as_bytes()),
            tools: hash_of(&serde_json::to_vec(&request.tools).unwrap_or_default()),
            messages: request.messages.iter().map(message_hash).collect(),
        }
    }

    /// What changed from `previous` to `self`, in prefix order; a message counts only
    /// where the previous request had one (what follows it is new, not changed).
    fn changes_since(&self, previous: &PrefixPrint) -> Vec<PrefixChange> {
        let mut changes = Vec::new();
        if self.model != previous.model {
            changes.push(PrefixChange::Model);
        }
        if self.system != previous.system {
            changes.push(PrefixChange::System);
        }
        if self.tools != previous.tools {
            changes.push(PrefixChange::Tools);
        }
        let first_changed = previous
            .messages
            .iter()
            .enumerate()
            .find(|&(at, hash)| self.messages.get(at) != Some(hash))
            .map(|(at, _)| at);
        if let Some(at) = first_changed {
            changes.push(PrefixChange::Message { position: at + 1 });
        }
        changes
    }
}

fn hash_of(bytes: &[u8]) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut hasher);
    hasher.finish()
}

fn message_hash(message: &Message) -> u64 {
    hash_of(&serde_json::to_vec(message).unwrap_or_default())
}

/// Where the chain stands between calls.
#[derive(Debug, Default)]
pub(super) struct CacheChain {
    /// The previous response's id: the next call is compared with it.
    previous_id: Option<String>,
    /// What the previous call sent; `None` after a resume (the call was another run's).
    previous: Option<PrefixPrint>,
    /// Compaction stages (event ids) that changed the history since the previous call.
    stages: Vec<String>,
    /// The previous call's report, when the server named a miss: the gauge says it
    /// until a call without one.
    last_miss: Option<CacheReport>,
}

impl CacheChain {
    /// A resumed session goes on from the newest call its journal names.
    pub(super) fn resumed(previous_id: Option<String>) -> Self {
        CacheChain {
            previous_id,
            ..CacheChain::default()
        }
    }

    /// What the next call asks the server.
    pub(super) fn check(&self) -> CacheCheck {
        match &self.previous_id {
            Some(id) => CacheCheck::After(id.clone()),
            None => CacheCheck::Start,
        }
    }

    /// The previous call's cache miss, as the server named it.
    pub(super) fn last_miss(&self) -> Option<&CacheReport> {
        self.last_miss.as_ref()
    }

    /// A compaction stage changed the history before the next call.
    pub(super) fn stage_ran(&mut self, id: &str) {
        if !id.is_empty() {
            self.stages.push(id.to_string());
        }
    }

    /// The call that sent `sent` was answered: the report of a divergence the server
    /// named (or is still comparing), with what scratchpad changed; `None` when the
    /// server found none or does not diagnose.
    pub(super) fn answered(
        &mut self,
        sent: PrefixPrint,
        id: Option<String>,
        diagnosis: Option<CacheDiagnosis>,
    ) -> Option<CacheReport> {
        let stages = std::mem::take(&mut self.stages);
        let report = diagnosis.map(|diagnosis| CacheReport {
            reason: diagnosis.reason,
            missed_input_tokens: diagnosis.missed_input_tokens,
            ours: self.previous.as_ref().map(|previous| sent.changes_since(previous)),
            stages,
        });
        self.previous = Some(sent);
        // A server that gives no id cannot be compared with: the chain starts again.
        self.previous_id = id;
        self.last_miss = report.clone().filter(CacheReport::missed);
        report
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolSpec;

    fn request<'m>(system: &str, tools: &[&str], messages: &'m [Message]) -> ModelRequest<'m> {
        ModelRequest {
            system: system.into(),
            tools: tools
                .iter()
                .map(|name| ToolSpec {
                    name: name.to_string(),
                    description: String::new(),
                    input_schema: serde_json::json!({}),
                })
                .collect(),
            messages,
            max_tokens: 100,
            cache_check: CacheCheck::Off,
            think: false,
        }
    }

    fn missed(reason: &str) -> Option<CacheDiagnosis> {
        Some(CacheDiagnosis {
            reason: Some(reason.into()),
            missed_input_tokens: Some(4_300),
        })
    }

    #[test]
    fn the_chain_names_the_previous_response_and_what_scratchpad_changed() {
        let mut chain = CacheChain::default();
        assert_eq!(chain.check(), CacheCheck::Start);
        let first = [Message::user_text("read a.rs"), Message::assistant_text("done")];
        let sent = PrefixPrint::of("claude", &request("sys", &["bash"], &first));
        assert_eq!(chain.answered(sent, Some("msg_1".into()), None), None, "no divergence");
        assert_eq!(chain.check(), CacheCheck::After("msg_1".into()));

        // A stage replaced the second message, and the tool list changed.
        chain.stage_ran("stage-1");
        let second = [
            Message::user_text("read a.rs"),
            Message::assistant_text("[cleared]"),
            Message::user_text("go on"),
        ];
        let sent = PrefixPrint::of("claude", &request("sys", &["bash", "recall"], &second));
        let report = chain
            .answered(sent, Some("msg_2".into()), missed("tools_changed"))
            .expect("a report");
        assert_eq!(
            report.ours,
            Some(vec![PrefixChange::Tools, PrefixChange::Message { position: 2 }])
        );
        assert_eq!(report.stages, vec!["stage-1".to_string()]);
        assert_eq!(
            report.line(),
            "cache missed: the tools changed, 4.3k tokens · scratchpad changed the tool list and message 2"
        );

        // Only new messages after the same prefix: nothing of ours changed.
        let mut third = second.to_vec();
        third.push(Message::assistant_text("ok"));
        let sent = PrefixPrint::of("claude", &request("sys", &["bash", "recall"], &third));
        let report = chain
            .answered(sent, Some("msg_3".into()), missed("messages_changed"))
            .expect("a report");
        assert_eq!(report.ours, Some(Vec::new()));
        assert!(report.stages.is_empty(), "the stages were the previous call's");
        assert!(
            report.line().ends_with("scratchpad changed nothing in it"),
            "{}",
            report.line()
        );
    }

    #[test]
    fn after_a_resume_the_chain_goes_on_but_cannot_say_what_changed() {
        let mut chain = CacheChain::resumed(Some("msg_old".into()));
        assert_eq!(chain.check(), CacheCheck::After("msg_old".into()));
        let messages = [Message::user_text("hello")];
        let sent = PrefixPrint::of("claude", &request("sys", &[], &messages));
        let report = chain
            .answered(sent, Some("msg_new".into()), missed("previous_message_not_found"))
            .expect("a report");
        assert_eq!(report.ours, None);
        assert_eq!(
            report.line(),
            "cache not compared: the server no longer has the previous request to compare with"
        );
        assert_eq!(chain.check(), CacheCheck::After("msg_new".into()));
    }

    #[test]
    fn a_pending_comparison_is_reported_as_pending_not_as_a_miss() {
        let mut chain = CacheChain::default();
        let messages = [Message::user_text("hello")];
        let sent = PrefixPrint::of("claude", &request("sys", &[], &messages));
        let report = chain
            .answered(
                sent,
                Some("msg_1".into()),
                Some(CacheDiagnosis {
                    reason: None,
                    missed_input_tokens: None,
                }),
            )
            .expect("a report");
        assert!(!report.missed());
        assert!(report.line().starts_with("cache check pending"), "{}", report.line());
    }
}
