//! One builder of conversations, for the tests of every stage, the integration tests
//! and the benchmarks: requests, answers and tool rounds, with call ids `t0`, `t1`, …
//! in order, so every suite builds its histories the same way.

pub mod planted;

use serde_json::Value;

use crate::message::{ContentBlock, Message, Role};

/// A history being built.
#[derive(Clone, Debug, Default)]
pub struct History {
    messages: Vec<Message>,
    calls: usize,
}

/// One call of a round or batch: the tool, its input and its output.
pub struct Call<'a> {
    /// The tool called.
    pub tool: &'a str,
    /// Its input.
    pub input: Value,
    /// What it gave back.
    pub output: String,
    /// The result is an error (a command that failed).
    pub failed: bool,
}

impl<'a> Call<'a> {
    /// A call of `tool` with `input` that gave `output`.
    pub fn new(tool: &'a str, input: Value, output: impl Into<String>) -> Self {
        Call {
            tool,
            input,
            output: output.into(),
            failed: false,
        }
    }

    /// The same call, its result an error (a command that failed).
    pub fn failed(self) -> Self {
        Call { failed: true, ..self }
    }
}

impl History {
    /// An empty conversation.
    pub fn new() -> Self {
        History::default()
    }

    /// A request the user typed.
    pub fn request(mut self, text: impl Into<String>) -> Self {
        self.messages.push(Message::user_text(text));
        self
    }

    /// The model's text answer.
    pub fn answer(mut self, text: impl Into<String>) -> Self {
        self.messages.push(Message::assistant_text(text));
        self
    }

    /// One call and its result: an assistant message, then a user message.
    pub fn round(self, call: Call<'_>) -> Self {
        self.batch(vec![call])
    }

    /// Several calls in one assistant message, their results in the next message.
    pub fn batch(mut self, calls: Vec<Call<'_>>) -> Self {
        let mut uses = Vec::with_capacity(calls.len());
        let mut results = Vec::with_capacity(calls.len());
        for call in calls {
            let id = format!("t{}", self.calls);
            self.calls += 1;
            uses.push(ContentBlock::tool_use(id.clone(), call.tool, call.input));
            results.push(ContentBlock::tool_result(id, call.output, call.failed));
        }
        self.messages.push(Message::blocks(Role::Assistant, uses));
        self.messages.push(Message::blocks(Role::User, results));
        self
    }

    /// `n` rounds of `tool` with `input`, the `i`th returning `output(i)`.
    pub fn rounds(mut self, n: usize, tool: &str, input: &Value, output: impl Fn(usize) -> String) -> Self {
        for i in 0..n {
            self = self.round(Call::new(tool, input.clone(), output(i)));
        }
        self
    }

    /// Requests and answers in turn, `n` messages in all (`u0`, `a1`, `u2`, …).
    pub fn chat(mut self, n: usize) -> Self {
        for i in 0..n {
            self = if i % 2 == 0 {
                self.request(format!("u{i}"))
            } else {
                self.answer(format!("a{i}"))
            };
        }
        self
    }

    /// The conversation's messages.
    pub fn build(self) -> Vec<Message> {
        self.messages
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::compact::pairing::check_pairing;

    #[test]
    fn rounds_and_batches_pair_their_ids_in_order() {
        let history = History::new()
            .request("go")
            .round(Call::new("bash", json!({"command": "ls"}), "a.rs"))
            .batch(vec![
                Call::new("read_file", json!({"path": "a.rs"}), "fn a() {}"),
                Call::new("glob", json!({"pattern": "*"}), "a.rs"),
            ])
            .answer("done")
            .build();
        assert_eq!(history.len(), 6);
        assert_eq!(check_pairing(&history), Ok(()));
        let ids: Vec<&str> = history[3].tool_use_ids().collect();
        assert_eq!(ids, ["t1", "t2"]);
        assert_eq!(History::new().chat(3).build()[2].text(), "u2");
    }
}
