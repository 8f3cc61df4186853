//! Coding sessions with facts planted in them, and what compaction does to each fact:
//! the retention benchmark's generator and measure, which a test in CI holds to its
//! goals. A session is read_file, bash and edit_file rounds of varied sizes between a
//! goal and a closing request; eleven kinds of fact fall at seeded places. Each fact is
//! a distinctive string (its needle) that a summary, the index, the context or an
//! archive file either holds or does not.

use serde_json::json;

use crate::compact::{CompactConfig, MemoryArchive, Stage, Summariser, SummaryError, SummaryRequest, prepare};
use crate::message::{ContentBlock, Message, Role};

/// The kinds of fact a session plants, one of each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, strum::IntoStaticStr, strum::EnumIter)]
#[strum(serialize_all = "snake_case")]
pub enum FactKind {
    /// What the session is for.
    Goal,
    /// A rule the user set.
    Constraint,
    /// Something the user said not to do.
    DoNot,
    /// A choice made along the way.
    Decision,
    /// A file that was changed.
    EditedFile,
    /// An error a build reported.
    CompilerError,
    /// A figure a benchmark measured.
    BenchNumber,
    /// What is left to do.
    RemainingWork,
    /// An approach tried and given up.
    RejectedApproach,
    /// A value that a later message changed.
    ValueChangedLater,
    /// A command that was run.
    Command,
}

impl FactKind {
    /// The kind, as the retention table names it.
    pub fn name(self) -> &'static str {
        self.into()
    }

    /// Every kind, in order.
    pub fn all() -> impl Iterator<Item = FactKind> {
        <FactKind as strum::IntoEnumIterator>::iter()
    }

    /// The kinds a summariser that keeps nothing must still keep in context through
    /// the index: paths, commands and errors.
    pub fn indexed(self) -> bool {
        matches!(
            self,
            FactKind::EditedFile | FactKind::CompilerError | FactKind::Command | FactKind::DoNot
        )
    }
}

/// A fact and the string that shows it is there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fact {
    /// Its kind.
    pub kind: FactKind,
    /// The text that shows it is there.
    pub needle: String,
}

/// A generated session.
#[derive(Clone, Debug)]
pub struct Planted {
    /// The session's messages.
    pub messages: Vec<Message>,
    /// The facts planted in them.
    pub facts: Vec<Fact>,
    /// The request the session ends on.
    pub request: String,
}

/// A small deterministic generator (splitmix64): the same seed, the same session.
struct Seeded(u64);

impl Seeded {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `range`.
    fn within(&mut self, range: std::ops::Range<usize>) -> usize {
        let span = (range.end - range.start).max(1) as u64;
        range.start + usize::try_from(self.next() % span).unwrap_or(0)
    }
}

/// A session of `rounds` tool rounds from `seed`.
pub fn session(seed: u64, rounds: usize) -> Planted {
    let mut random = Seeded(seed);
    let tag = |kind: FactKind| format!("{}{seed}", &kind.name()[..3]);
    let mut builder = Builder::default();
    let goal = format!(
        "Goal: make the lexer stream its tokens into the {} pipeline.",
        tag(FactKind::Goal)
    );
    builder.user(&goal);
    let mut facts = vec![Fact {
        kind: FactKind::Goal,
        needle: format!("{} pipeline", tag(FactKind::Goal)),
    }];
    // Where each other fact falls: a round each, spread over the session.
    let mut places: Vec<(usize, FactKind)> = FactKind::all()
        .filter(|kind| *kind != FactKind::Goal)
        .map(|kind| (random.within(1..rounds.max(2)), kind))
        .collect();
    places.sort();
    for round in 0..rounds {
        for (_, kind) in places.iter().filter(|(at, _)| *at == round) {
            facts.push(builder.plant(*kind, &tag(*kind), &mut random));
        }
        builder.filler(round, &mut random);
    }
    let request = "Carry on with the remaining work.".to_string();
    builder.user(&request);
    Planted {
        messages: builder.messages,
        facts,
        request,
    }
}

#[derive(Default)]
struct Builder {
    messages: Vec<Message>,
    calls: usize,
}

impl Builder {
    fn user(&mut self, text: &str) {
        self.messages.push(Message::user_text(text));
    }

    fn said(&mut self, text: &str) {
        self.messages.push(Message::assistant_text(text));
    }

    /// One call with some words before it, and its result.
    fn call(&mut self, words: &str, tool: &str, input: serde_json::Value, output: &str, failed: bool) {
        let id = format!("toolu_{:05}", self.calls);
        self.calls += 1;
        self.messages.push(Message::blocks(
            Role::Assistant,
            vec![
                ContentBlock::text(words),
                ContentBlock::tool_use(id.clone(), tool, input),
            ],
        ));
        self.messages.push(Message::blocks(
            Role::User,
            vec![ContentBlock::tool_result(id, output, failed)],
        ));
    }

    fn plant(&mut self, kind: FactKind, tag: &str, random: &mut Seeded) -> Fact {
        let needle = match kind {
            FactKind::Goal => unreachable!("the goal opens the session"),
            FactKind::Constraint => {
                let needle = format!("crate_{tag}");
                self.user(&format!("Keep the public API of {needle} unchanged while you do this."));
                needle
            }
            FactKind::DoNot => {
                let needle = format!("vendor/{tag}/lib.rs");
                self.user(&format!("Do NOT edit {needle}; it is generated."));
                needle
            }
            FactKind::Decision => {
                let needle = format!("ring_{tag}");
                self.said(&format!(
                    "Decision: the token queue is a ring buffer, {needle}, sized at start."
                ));
                needle
            }
            FactKind::EditedFile => {
                let needle = format!("src/{tag}_stream.rs");
                self.call(
                    "Adding the stream adapter.",
                    "edit_file",
                    json!({"path": needle, "old_string": "fn next()", "new_string": "fn next_token()"}),
                    "Edited 1 occurrence.",
                    false,
                );
                needle
            }
            FactKind::CompilerError => {
                let needle = format!("{tag}_peek");
                let noise = compiler_noise(random.within(2_000..9_000));
                self.call(
                    "Building.",
                    "bash",
                    json!({"command": "cargo build"}),
                    &format!(
                        "{noise}error[E0599]: no method named `{needle}` found for struct `Lexer`\n{noise}[exit code 101]"
                    ),
                    true,
                );
                needle
            }
            FactKind::BenchNumber => {
                let needle = format!("{}.{} ms", 100 + random.within(0..800), random.within(0..10));
                let noise = compiler_noise(random.within(3_000..12_000));
                self.call(
                    "Measuring.",
                    "bash",
                    json!({"command": "cargo bench --bench lex"}),
                    &format!("{noise}lex_{tag}/stream  time: {needle}\n{noise}"),
                    false,
                );
                needle
            }
            FactKind::RemainingWork => {
                let needle = format!("escape_{tag}");
                self.said(&format!(
                    "Remaining work: port {needle} handling to the streaming path."
                ));
                needle
            }
            FactKind::RejectedApproach => {
                let needle = format!("regex_{tag}");
                self.said(&format!(
                    "Rejected approach: {needle} for splitting; it was three times slower."
                ));
                needle
            }
            FactKind::ValueChangedLater => {
                let needle = format!("MAX_DEPTH_{} = 128", tag.to_uppercase());
                self.call(
                    "Raising the depth limit.",
                    "edit_file",
                    json!({"path": "src/limits.rs", "old_string": format!("MAX_DEPTH_{} = 64", tag.to_uppercase()), "new_string": needle}),
                    "Edited 1 occurrence.",
                    false,
                );
                needle
            }
            FactKind::Command => {
                let needle = format!("cargo run --example {tag}_probe");
                self.call(
                    "Probing.",
                    "bash",
                    json!({"command": needle}),
                    &compiler_noise(random.within(500..4_000)),
                    false,
                );
                needle
            }
        };
        Fact { kind, needle }
    }

    /// A round of ordinary work: a file read, a build or a small edit, results from a
    /// few hundred characters to tens of thousands.
    fn filler(&mut self, round: usize, random: &mut Seeded) {
        let thinking = THOUGHTS[random.within(0..THOUGHTS.len())].repeat(random.within(1..4));
        match random.within(0..6) {
            0..=2 => {
                let size = [600, 3_000, 9_000, 24_000][random.within(0..4)];
                self.call(
                    &thinking,
                    "read_file",
                    json!({"path": format!("src/module_{round}.rs")}),
                    &source_text(round, size),
                    false,
                );
            }
            3 | 4 => self.call(
                &thinking,
                "bash",
                json!({"command": "cargo check"}),
                &compiler_noise(random.within(300..6_000)),
                false,
            ),
            _ => self.said(&thinking),
        }
    }
}

/// What the model says between calls, as a model does: a sentence or three of why.
const THOUGHTS: [&str; 4] = [
    "The cursor advances before the token is pushed, so the next read starts one character late; checking how the caller uses it. ",
    "This module only forwards to the buffer, nothing to change here, but its tests pin the old iterator signature. ",
    "The build output is long but only the last lines matter; the warnings are the known unused-import ones. ",
    "Reading the next module to see whether it holds its own copy of the position or borrows the lexer's. ",
];

fn source_text(round: usize, chars: usize) -> String {
    let line = format!("    let value_{round} = compute(input, {round}); // keeps the cursor in step\n");
    line.repeat(chars / line.len() + 1)
}

fn compiler_noise(chars: usize) -> String {
    let line = "   Compiling lexer v0.4.2 (/work/lexer)\n    Checking parser v0.9.0\n";
    line.repeat(chars / line.len() + 1)
}

/// Where a fact is after compaction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Standing {
    /// In a summary request's history text.
    pub reached: bool,
    /// In the history after compaction.
    pub in_context: bool,
    /// In a file the history after compaction names.
    pub one_read: bool,
    /// Nowhere: not in context, not in any archive file.
    pub lost: bool,
}

/// What became of one session's facts.
#[derive(Clone, Debug)]
pub struct Measured {
    /// Each fact, and where it stands after compaction.
    pub standings: Vec<(Fact, Standing)>,
    /// The stages that fired.
    pub stages: Vec<Stage>,
    /// The largest summary request's history text, in characters.
    pub summary_input_chars: usize,
    /// The limit it ran at.
    pub limit: usize,
    /// Index entries cut to fit.
    pub index_cut: usize,
}

/// A summariser that keeps the requests it was given.
struct Recording<'s> {
    inner: &'s mut dyn Summariser,
    texts: Vec<String>,
}

impl Summariser for Recording<'_> {
    fn summarise(&mut self, request: &SummaryRequest<'_>) -> Result<String, SummaryError> {
        self.texts.push(request.history_text.clone());
        self.inner.summarise(request)
    }
}

/// `planted` through one `prepare` under `config` with `summariser`, and where each
/// fact stands after it.
pub fn measure(planted: &Planted, config: &CompactConfig, summariser: &mut dyn Summariser) -> Measured {
    let archive = MemoryArchive::new();
    let mut recording = Recording {
        inner: summariser,
        texts: Vec::new(),
    };
    let prepared = prepare(
        planted.messages.clone(),
        &planted.request,
        &crate::compact::Context::new(config, &archive),
        &mut recording,
    );
    let context = crate::compact::render::to_text(&prepared.messages);
    let files = archive.files();
    let named: Vec<&String> = files
        .iter()
        .filter(|(path, _)| context.contains(path.as_str()))
        .map(|(_, text)| text)
        .collect();
    let standings = planted
        .facts
        .iter()
        .map(|fact| {
            let needle = fact.needle.as_str();
            let in_context = context.contains(needle);
            let one_read = named.iter().any(|text| text.contains(needle));
            let anywhere = files.values().any(|text| text.contains(needle));
            let standing = Standing {
                reached: recording.texts.iter().any(|text| text.contains(needle)),
                in_context,
                one_read: in_context || one_read,
                lost: !in_context && !anywhere,
            };
            (fact.clone(), standing)
        })
        .collect();
    Measured {
        standings,
        stages: prepared
            .events
            .iter()
            .filter(|event| event.replaced > 0)
            .map(|event| event.stage)
            .collect(),
        summary_input_chars: recording
            .texts
            .iter()
            .map(|text| text.chars().count())
            .max()
            .unwrap_or(0),
        limit: config.context_char_limit.chars,
        index_cut: prepared
            .events
            .iter()
            .filter_map(|event| event.summary_note.as_ref())
            .map(|record| record.index_cut)
            .sum(),
    }
}

/// The limits tried, largest first, for where stage 4 fires.
pub const STAGE_FOUR_LIMITS: [usize; 8] = [50_000, 40_000, 30_000, 20_000, 12_000, 8_000, 5_000, 3_000];

/// The largest of [`STAGE_FOUR_LIMITS`] at which `planted` makes stage 4 fire after
/// the recoverable stages, so that every session is measured where a summary is
/// written.
pub fn limit_where_stage_four_fires(planted: &Planted, base: &CompactConfig) -> Option<CompactConfig> {
    STAGE_FOUR_LIMITS.into_iter().find_map(|limit| {
        let config = CompactConfig {
            context_char_limit: crate::compact::Limit::chars(limit),
            ..base.clone()
        };
        let archive = MemoryArchive::new();
        let prepared = prepare(
            planted.messages.clone(),
            &planted.request,
            &crate::compact::Context::new(&config, &archive),
            &mut crate::compact::ExtractiveSummariser,
        );
        prepared
            .events
            .iter()
            .any(|event| event.stage == Stage::CompactHistory && event.replaced > 0)
            .then_some(config)
    })
}

/// A summariser that answers one fixed line, whatever it is asked: what survives it
/// is what scratchpad keeps itself.
pub struct OneLine;

impl Summariser for OneLine {
    fn summarise(&mut self, _: &SummaryRequest<'_>) -> Result<String, SummaryError> {
        Ok("The session worked on the lexer.".into())
    }
}

/// The figures of `measured`, per kind of fact, as a Markdown table: reached the
/// summary request, in context after compaction, one read away, lost.
pub fn table(measured: &[Measured]) -> String {
    let mut text = String::from(
        "| fact | reached the summary request | in context after | one read away | lost |\n|---|---|---|---|---|\n",
    );
    let mut totals = [0usize; 5];
    for kind in FactKind::all() {
        let standings: Vec<Standing> = measured
            .iter()
            .flat_map(|m| m.standings.iter())
            .filter(|(fact, _)| fact.kind == kind)
            .map(|(_, standing)| *standing)
            .collect();
        let count = |of: fn(&Standing) -> bool| standings.iter().filter(|standing| of(standing)).count();
        let row = [
            count(|s| s.reached),
            count(|s| s.in_context),
            count(|s| s.one_read),
            count(|s| s.lost),
            standings.len(),
        ];
        for (total, n) in totals.iter_mut().zip(row) {
            *total += n;
        }
        let all = row[4];
        text.push_str(&format!(
            "| {} | {}/{all} | {}/{all} | {}/{all} | {} |\n",
            kind.name(),
            row[0],
            row[1],
            row[2],
            row[3]
        ));
    }
    let percent = |n: usize| n * 100 / totals[4].max(1);
    text.push_str(&format!(
        "| all | {}% | {}% | {}% | {} |\n",
        percent(totals[0]),
        percent(totals[1]),
        percent(totals[2]),
        totals[3]
    ));
    text
}
