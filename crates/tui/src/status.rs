//! The status line (turn state, provider, model, window, workspace, sandbox) and the
//! error banner.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use unicode_width::UnicodeWidthStr;

use super::state::{SessionInfo, TurnState};
use super::theme;
use crate::tools::sandbox::SandboxState;

/// The frames of the busy spinner, advanced by the app's tick.
pub const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// One item of the status line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatusItem {
    Badge,
    Turn,
    Provider,
    Model,
    Window,
    Workspace,
    Mcp,
    Sandbox,
}

/// The status line's items in the order they are drawn.
pub const STATUS_ORDER: [StatusItem; 8] = [
    StatusItem::Badge,
    StatusItem::Turn,
    StatusItem::Provider,
    StatusItem::Model,
    StatusItem::Window,
    StatusItem::Workspace,
    StatusItem::Mcp,
    StatusItem::Sandbox,
];

/// What gives way, step by step, when the line does not fit: each step takes that
/// item to its next shorter form, and past its last form it is gone (the demo's key
/// hint goes first, the workspace is first cut to its folder's name). The turn state
/// and the sandbox state never give way: what the model may touch stays on screen.
pub const GIVE_WAY: [StatusItem; 9] = [
    StatusItem::Provider,
    StatusItem::Workspace,
    StatusItem::Window,
    StatusItem::Model,
    StatusItem::Mcp,
    StatusItem::Workspace,
    StatusItem::Provider,
    StatusItem::Badge,
    StatusItem::Mcp,
];

impl StatusItem {
    /// The item's name as the book's description of the status line uses it.
    pub fn name(self) -> &'static str {
        match self {
            StatusItem::Badge => "name",
            StatusItem::Turn => "turn state",
            StatusItem::Provider => "provider",
            StatusItem::Model => "model",
            StatusItem::Window => "window",
            StatusItem::Workspace => "workspace",
            StatusItem::Mcp => "MCP servers starting or failed",
            StatusItem::Sandbox => "sandbox state",
        }
    }
}

pub fn turn_label(turn: &TurnState) -> String {
    match turn {
        TurnState::Idle => "ready".into(),
        TurnState::Thinking => "thinking".into(),
        // Past its time with no news, the retry waits on the server (a health poll).
        TurnState::Retrying { at, attempt, reason } => match at.saturating_duration_since(std::time::Instant::now()) {
            left if left.is_zero() => format!("waiting (attempt {attempt}): {reason}"),
            left => format!("retrying in {:.1} s (attempt {attempt}): {reason}", left.as_secs_f64()),
        },
        TurnState::RunningTool(name) => format!("running {name}"),
        TurnState::Compacting => "compacting".into(),
        TurnState::Summarising { since, chars } => format!("summarising ({})", summary_progress(*since, *chars)),
        TurnState::Asking => "waiting for your answer".into(),
        TurnState::Reviewing => "reviewing the summary".into(),
        TurnState::Cancelling => "cancelling".into(),
    }
}

/// How far a summary being written is, for the status line and the gauge: `12 s,
/// ≈340 tokens so far`; the tokens are estimated from the characters streamed.
pub fn summary_progress(since: std::time::Instant, chars: usize) -> String {
    let seconds = since.elapsed().as_secs();
    if chars == 0 {
        return format!("{seconds} s");
    }
    let tokens = (chars as f64 / crate::accounting::DEFAULT_CHARS_PER_TOKEN).round() as usize;
    format!("{seconds} s, ≈{} tokens so far", crate::compact::short_count(tokens))
}

pub fn render(frame: &mut Frame<'_>, area: Rect, session: &SessionInfo, turn: &TurnState, tick: usize) {
    frame.render_widget(Paragraph::new(status_line(session, turn, tick, area.width)), area);
}

/// The status line at `width` columns: the items shortened and dropped in
/// [`GIVE_WAY`]'s order until it fits, then the turn label cut, so that the sandbox
/// state stays.
fn status_line(session: &SessionInfo, turn: &TurnState, tick: usize, width: u16) -> Line<'static> {
    let width = usize::from(width);
    let mut forms = [0_usize; STATUS_ORDER.len()];
    let spans_at = |forms: &[usize; STATUS_ORDER.len()]| -> Vec<(StatusItem, Vec<Span<'static>>)> {
        STATUS_ORDER
            .iter()
            .zip(forms)
            .map(|(&item, &form)| (item, item_spans(item, form, session, turn, tick)))
            .collect()
    };
    let width_of = |items: &[(StatusItem, Vec<Span<'static>>)]| -> usize {
        items
            .iter()
            .flat_map(|(_, spans)| spans)
            .map(|span| span.content.width())
            .sum()
    };
    let mut items = spans_at(&forms);
    for step in GIVE_WAY {
        if width_of(&items) <= width {
            break;
        }
        if let Some(at) = STATUS_ORDER.iter().position(|&item| item == step) {
            forms[at] += 1;
        }
        items = spans_at(&forms);
    }
    let excess = width_of(&items).saturating_sub(width);
    if excess > 0
        && let Some((_, spans)) = items.iter_mut().find(|(item, _)| *item == StatusItem::Turn)
        && let Some(label) = spans.last_mut()
    {
        let keep = label.content.width().saturating_sub(excess);
        label.content = super::ellipsized(&label.content, keep).into();
    }
    Line::from(items.into_iter().flat_map(|(_, spans)| spans).collect::<Vec<_>>())
}

/// One item's spans in its `form` (0 is the fullest; past its shortest it has none),
/// each item after the first led by its separator.
fn item_spans(
    item: StatusItem,
    form: usize,
    session: &SessionInfo,
    turn: &TurnState,
    tick: usize,
) -> Vec<Span<'static>> {
    let palette = theme::palette();
    let separated = |text: String, style: Style| vec![Span::raw(" · "), Span::styled(text, style)];
    match (item, form) {
        (StatusItem::Badge, 0) => vec![Span::styled(
            " scratchpad ",
            Style::default()
                .fg(palette.on_colour)
                .bg(palette.accent)
                .add_modifier(Modifier::BOLD),
        )],
        (StatusItem::Turn, _) if *turn == TurnState::Idle && session.read_only.is_some() => vec![
            Span::raw(" "),
            Span::styled("◉ read-only", Style::default().fg(palette.attention)),
        ],
        (StatusItem::Turn, _) => {
            let (spinner, style) = if *turn == TurnState::Idle {
                ("●", Style::default().fg(palette.success))
            } else {
                (
                    SPINNER[tick % SPINNER.len()],
                    Style::default().fg(palette.attention).add_modifier(Modifier::BOLD),
                )
            };
            vec![
                Span::raw(" "),
                Span::styled(format!("{spinner} {}", turn_label(turn)), style),
            ]
        }
        (StatusItem::Provider, 0 | 1) if session.is_demo() => {
            let mut spans = separated(
                "offline demo model".into(),
                Style::default().fg(palette.on_colour).bg(palette.attention),
            );
            if form == 0 {
                spans.push(Span::styled(
                    " (set ANTHROPIC_API_KEY for Claude)",
                    Style::default().fg(palette.muted),
                ));
            }
            spans
        }
        (StatusItem::Provider, 0 | 1) => {
            separated(session.provider.clone(), Style::default().fg(palette.success_bright))
        }
        (StatusItem::Model, 0) => separated(
            model_label(&session.model).to_string(),
            Style::default().fg(palette.soft),
        ),
        (StatusItem::Window, 0) => match &session.window {
            Some(window) => separated(
                format!("{} window", crate::compact::short_count(window.tokens as usize)),
                Style::default().fg(palette.muted),
            ),
            None => Vec::new(),
        },
        (StatusItem::Workspace, 0) => separated(session.workspace.clone(), Style::default().fg(palette.muted)),
        (StatusItem::Workspace, 1) => separated(folder_name(&session.workspace), Style::default().fg(palette.muted)),
        (StatusItem::Mcp, 0 | 1) if !session.mcp_starting.is_empty() || !session.mcp_failed.is_empty() => {
            let text = if form == 0 {
                mcp_trouble(&session.mcp_starting, &session.mcp_failed)
            } else {
                let mut parts = Vec::new();
                if !session.mcp_starting.is_empty() {
                    parts.push(format!("{} starting", session.mcp_starting.len()));
                }
                if !session.mcp_failed.is_empty() {
                    parts.push(format!("{} failed", session.mcp_failed.len()));
                }
                format!("MCP: {}", parts.join(", "))
            };
            let colour = if session.mcp_failed.is_empty() {
                palette.muted
            } else {
                palette.attention
            };
            separated(text, Style::default().fg(colour))
        }
        (StatusItem::Sandbox, _) => separated(
            SandboxState::label_of(&session.sandbox),
            if SandboxState::is_full_mode(&session.sandbox) {
                Style::default().fg(palette.success)
            } else {
                Style::default().fg(palette.attention)
            },
        ),
        _ => Vec::new(),
    }
}

/// `MCP: starting a, b; c failed (/mcp)`.
fn mcp_trouble(starting: &[String], failed: &[String]) -> String {
    let mut parts = Vec::new();
    if !starting.is_empty() {
        parts.push(format!("starting {}", starting.join(", ")));
    }
    if !failed.is_empty() {
        parts.push(format!("{} failed (/mcp)", failed.join(", ")));
    }
    format!("MCP: {}", parts.join("; "))
}

/// A workspace path cut to its last folder, `…/` saying the rest was cut.
fn folder_name(workspace: &str) -> String {
    match workspace.trim_end_matches('/').rsplit_once('/') {
        Some((parent, name)) if !parent.is_empty() && !name.is_empty() => format!("…/{name}"),
        _ => workspace.to_string(),
    }
}

pub fn render_banner(frame: &mut Frame<'_>, area: Rect, message: &str) {
    let line = Line::from(vec![
        Span::styled(
            " ! ",
            Style::default()
                .fg(theme::palette().on_colour)
                .bg(theme::palette().failure)
                .add_modifier(Modifier::BOLD),
        ),
        Span::styled(
            format!(" {message} "),
            Style::default().fg(theme::palette().failure_soft),
        ),
        Span::styled(" (Ctrl+D dismisses)", Style::default().fg(theme::palette().muted)),
    ]);
    frame.render_widget(Paragraph::new(line), area);
}

/// A model id as shown: llama.cpp names its model by the file's path, of which the
/// file name says enough.
fn model_label(model: &str) -> &str {
    model
        .rsplit(['/', '\\'])
        .next()
        .filter(|name| !name.is_empty())
        .unwrap_or(model)
}

#[cfg(test)]
mod tests {
    /// A retry's time passed with no news: it waits on the server, and says so rather
    /// than counting down from nothing ("retrying in 0.0 s").
    #[test]
    fn a_retry_past_its_time_says_it_waits() {
        let now = std::time::Instant::now();
        let reason = "the server does not answer yet".to_string();
        let waiting = TurnState::Retrying {
            at: now - std::time::Duration::from_secs(1),
            attempt: 1,
            reason: reason.clone(),
        };
        assert_eq!(
            turn_label(&waiting),
            "waiting (attempt 1): the server does not answer yet"
        );
        let soon = TurnState::Retrying {
            at: now + std::time::Duration::from_secs(30),
            attempt: 2,
            reason,
        };
        let label = turn_label(&soon);
        assert!(
            label.starts_with("retrying in ") && label.contains("(attempt 2)"),
            "{label}"
        );
    }

    use super::*;

    fn demo_session() -> SessionInfo {
        SessionInfo {
            provider: "demo".into(),
            model: "offline-demo".into(),
            workspace: "/home/someone/projects/a-rather-long-workspace-name".into(),
            sandbox: "partial (no seccomp)".into(),
            window: Some(crate::protocol::Window {
                tokens: 200_000,
                source: crate::protocol::WindowSource::Configured,
            }),
            ..SessionInfo::default()
        }
    }

    fn text(line: &Line<'_>) -> String {
        line.spans.iter().map(|span| span.content.as_ref()).collect()
    }

    #[test]
    fn the_sandbox_state_and_workspace_are_shown_at_120_columns() {
        let line = text(&status_line(&demo_session(), &TurnState::Thinking, 0, 120));
        assert!(line.width() <= 120, "{line}");
        assert!(line.ends_with(" · sandbox: partial (no seccomp)"), "{line}");
        assert!(line.contains("a-rather-long-workspace-name"), "{line}");
        assert!(
            !line.contains("ANTHROPIC_API_KEY"),
            "the key hint gives way first: {line}"
        );
    }

    #[test]
    fn items_give_way_in_order_and_the_sandbox_never_does() {
        let session = demo_session();
        let mut previous = String::new();
        for width in (40..=200).rev() {
            let line = text(&status_line(&session, &TurnState::Thinking, 0, width));
            assert!(line.width() <= usize::from(width), "{width}: {line}");
            assert!(line.ends_with("sandbox: partial (no seccomp)"), "{width}: {line}");
            assert!(
                line.width() <= previous.width() || previous.is_empty(),
                "{width}: {line}"
            );
            previous = line;
        }
        let expected_steps = [
            " scratchpad  ⠋ thinking · offline demo model (set ANTHROPIC_API_KEY for Claude) · offline-demo · 200.0k window · /home/someone/projects/a-rather-long-workspace-name · sandbox: partial (no seccomp)",
            " scratchpad  ⠋ thinking · offline demo model · offline-demo · 200.0k window · /home/someone/projects/a-rather-long-workspace-name · sandbox: partial (no seccomp)",
            " scratchpad  ⠋ thinking · offline demo model · offline-demo · 200.0k window · …/a-rather-long-workspace-name · sandbox: partial (no seccomp)",
            " scratchpad  ⠋ thinking · offline demo model · offline-demo · …/a-rather-long-workspace-name · sandbox: partial (no seccomp)",
            " scratchpad  ⠋ thinking · offline demo model · …/a-rather-long-workspace-name · sandbox: partial (no seccomp)",
            " scratchpad  ⠋ thinking · offline demo model · sandbox: partial (no seccomp)",
            " scratchpad  ⠋ thinking · sandbox: partial (no seccomp)",
            " ⠋ thinking · sandbox: partial (no seccomp)",
        ];
        let seen: Vec<String> = (40..=220)
            .rev()
            .map(|width| text(&status_line(&session, &TurnState::Thinking, 0, width)))
            .filter(|line| !line.contains('…') || line.contains("…/"))
            .fold(Vec::new(), |mut seen, line| {
                if seen.last() != Some(&line) {
                    seen.push(line);
                }
                seen
            });
        assert_eq!(seen, expected_steps);
    }

    /// MCP servers starting or failed are named, then counted, then give way last
    /// but the badge; with none in trouble the item is not there.
    #[test]
    fn mcp_servers_in_trouble_are_named_then_counted() {
        let mut session = demo_session();
        session.mcp_starting = vec!["github".into()];
        session.mcp_failed = vec!["db".into(), "web".into()];
        let wide = text(&status_line(&session, &TurnState::Idle, 0, 220));
        assert!(
            wide.ends_with(" · MCP: starting github; db, web failed (/mcp) · sandbox: partial (no seccomp)"),
            "{wide}"
        );
        let narrow = text(&status_line(&session, &TurnState::Idle, 0, 110));
        assert!(narrow.contains(" · MCP: 1 starting, 2 failed · "), "{narrow}");
        assert!(narrow.width() <= 110, "{narrow}");
        let quiet = text(&status_line(&demo_session(), &TurnState::Idle, 0, 220));
        assert!(!quiet.contains("MCP"), "{quiet}");
    }

    #[test]
    fn a_workspace_is_cut_to_its_folder_name() {
        assert_eq!(folder_name("/home/a/project"), "…/project");
        assert_eq!(folder_name("/home/a/project/"), "…/project");
        assert_eq!(folder_name("/project"), "/project");
        assert_eq!(folder_name("project"), "project");
    }

    #[test]
    fn a_long_turn_label_is_shortened_rather_than_the_sandbox_state() {
        let turn = TurnState::Retrying {
            at: std::time::Instant::now(),
            attempt: 2,
            reason: "the server said it is overloaded, please wait a while".into(),
        };
        let line = text(&status_line(&demo_session(), &turn, 0, 50));
        assert_eq!(line.width(), 50, "{line}");
        assert!(line.contains("…"), "{line}");
        assert!(line.ends_with(" · sandbox: partial (no seccomp)"), "{line}");
    }

    #[test]
    fn a_model_path_is_shown_by_its_file_name() {
        assert_eq!(super::model_label("/root/models/SmolLM2.gguf"), "SmolLM2.gguf");
        assert_eq!(super::model_label("claude-sonnet-4-5"), "claude-sonnet-4-5");
        assert_eq!(super::model_label("dir/"), "dir/");
    }
}
