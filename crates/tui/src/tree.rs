//! `/tree` (and Esc Esc on an empty prompt): this session and every fork related to
//! it, drawn as a tree of requests, compaction stages and branch points. Enter on a
//! request forks just before it (the request back in the prompt to edit), on a stage
//! forks from the history as it was before that stage, on a branch opens that session.

use std::collections::BTreeSet;

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use super::keymap::{self, Action, View};
use super::theme;
use crate::protocol::{ForkAt, ForkPoint};
use crate::session::labels::{self, Labels};
use crate::session::{Branch, Node};

/// One line of the tree.
/// What folds a request's stages, beside the branch ids in `folded`.
fn request_key(branch: &str, position: usize) -> String {
    format!("{branch}#{position}")
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Row {
    Branch { session: usize, depth: usize },
    Node { session: usize, node: usize, depth: usize },
}

pub struct TreeView {
    /// `None` until the disk answers; an error in words.
    family: Option<Result<Vec<Branch>, String>>,
    labels: Labels,
    /// The session open now.
    current: String,
    folded: BTreeSet<String>,
    selected: usize,
    first_shown: usize,
    /// Rows the last frame showed: what PgUp and PgDn move by.
    page: usize,
    /// The label being typed for the selected row.
    labelling: Option<String>,
    /// Select the newest request of the open session once the family arrives (Esc Esc).
    on_newest_request: bool,
}

pub enum TreeAction {
    Stay,
    Close,
    Fork {
        session: Option<String>,
        at: ForkAt,
    },
    Resume(String),
    Label {
        key: String,
        label: String,
    },
    /// Summarise up to a request of the open session (see `Op::SummariseUpTo`).
    SummariseUpTo {
        request: String,
        later_same: usize,
    },
    /// Said instead of acting: why the key did nothing here.
    Tell(String),
}

impl TreeView {
    pub fn new(current: String, on_newest_request: bool) -> Self {
        TreeView {
            family: None,
            labels: Labels::default(),
            current,
            folded: BTreeSet::new(),
            selected: 0,
            first_shown: 0,
            page: 0,
            labelling: None,
            on_newest_request,
        }
    }

    pub fn loaded(&mut self, family: Result<Vec<Branch>, String>, labels: Labels) {
        self.family = Some(family);
        self.labels = labels;
        let rows = self.rows();
        let current = self.branches().iter().position(|branch| branch.id == self.current);
        let wanted = rows.iter().rposition(|row| match row {
            Row::Node { session, node, .. } if self.on_newest_request => {
                Some(*session) == current
                    && matches!(self.branches()[*session].nodes.get(*node), Some(Node::Request { .. }))
            }
            Row::Branch { session, .. } => !self.on_newest_request && Some(*session) == current,
            _ => false,
        });
        self.selected = wanted.unwrap_or(0);
    }

    pub fn labels_saved(&mut self, labels: Labels) {
        self.labels = labels;
    }

    fn branches(&self) -> &[Branch] {
        match &self.family {
            Some(Ok(branches)) => branches,
            _ => &[],
        }
    }

    /// The tree as lines: each session's points in order, a fork's subtree just before
    /// the point of its parent it branched before.
    pub fn rows(&self) -> Vec<Row> {
        let mut rows = Vec::new();
        if !self.branches().is_empty() {
            self.push_branch(0, 0, &mut rows, &mut Vec::new());
        }
        rows
    }

    fn push_branch(&self, session: usize, depth: usize, rows: &mut Vec<Row>, seen: &mut Vec<usize>) {
        let branches = self.branches();
        seen.push(session);
        rows.push(Row::Branch { session, depth });
        let branch = &branches[session];
        if self.folded.contains(&branch.id) {
            return;
        }
        let mut children: Vec<usize> = (0..branches.len())
            .filter(|child| !seen.contains(child))
            .filter(|&child| branches[child].parent.as_ref().is_some_and(|p| p.session == branch.id))
            .collect();
        // The stages under a folded request are left out, up to the next request.
        let mut folded_request = false;
        for (at, node) in branch.nodes.iter().enumerate() {
            let (before, rest): (Vec<usize>, Vec<usize>) = children
                .iter()
                .partition(|&&child| forks_before(&branches[child], node));
            children = rest;
            // A fork sits deeper than the nodes of its parent it branched between, so
            // the parent's later nodes, back at their own depth, read as the parent's.
            for child in before {
                self.push_branch(child, depth + 2, rows, seen);
            }
            if let Node::Request { position, .. } = node {
                folded_request = self.folded.contains(&request_key(&branch.id, *position));
            } else if folded_request {
                continue;
            }
            rows.push(Row::Node {
                session,
                node: at,
                depth: depth + 1,
            });
        }
        for child in children {
            self.push_branch(child, depth + 2, rows, seen);
        }
    }

    fn key_of(&self, row: &Row) -> Option<String> {
        let branches = self.branches();
        match row {
            Row::Branch { session, .. } => Some(labels::key(&branches.get(*session)?.id, None)),
            Row::Node { session, node, .. } => {
                let branch = branches.get(*session)?;
                Some(labels::key(&branch.id, branch.nodes.get(*node)))
            }
        }
    }

    pub fn handle_key(&mut self, key: KeyEvent) -> TreeAction {
        if let Some(label) = &mut self.labelling {
            match key.code {
                KeyCode::Esc => self.labelling = None,
                KeyCode::Enter => {
                    let label = std::mem::take(label);
                    self.labelling = None;
                    if let Some(key) = self.rows().get(self.selected).and_then(|row| self.key_of(row)) {
                        return TreeAction::Label { key, label };
                    }
                }
                _ => {
                    super::input::edit_line(label, &key);
                }
            }
            return TreeAction::Stay;
        }
        let rows = self.rows();
        let selected = rows.get(self.selected).cloned();
        match keymap::action(View::Tree, &key) {
            Some(Action::Close) => return TreeAction::Close,
            Some(Action::Previous) => self.selected = self.selected.saturating_sub(1),
            Some(Action::Next) => self.selected = (self.selected + 1).min(rows.len().saturating_sub(1)),
            Some(Action::PageUp) => self.selected = self.selected.saturating_sub(self.page.max(1)),
            Some(Action::PageDown) => {
                self.selected = (self.selected + self.page.max(1)).min(rows.len().saturating_sub(1));
            }
            Some(Action::Top) => self.selected = 0,
            Some(Action::Bottom) => self.selected = rows.len().saturating_sub(1),
            Some(Action::Fold) => {
                // A branch folds its nodes; a request, the stages that followed it.
                let key = match selected {
                    Some(Row::Branch { session, .. }) => self.branches().get(session).map(|branch| branch.id.clone()),
                    Some(Row::Node { session, node, .. }) => {
                        self.branches()
                            .get(session)
                            .and_then(|branch| match branch.nodes.get(node) {
                                Some(Node::Request { position, .. }) => Some(request_key(&branch.id, *position)),
                                _ => None,
                            })
                    }
                    None => None,
                };
                if let Some(key) = key
                    && !self.folded.remove(&key)
                {
                    self.folded.insert(key);
                }
            }
            Some(Action::Label) => {
                if let Some(key) = selected.as_ref().and_then(|row| self.key_of(row)) {
                    self.labelling = Some(self.labels.get(&key).unwrap_or_default().to_string());
                }
            }
            Some(Action::Open(_)) => return self.open(selected),
            Some(Action::SummariseUpTo) => return self.summarise_up_to(selected),
            _ => {}
        }
        TreeAction::Stay
    }

    /// The request a summary should end before: the selected one, or for a
    /// compaction the first request after it; only in the open session, whose history
    /// the summary changes.
    fn summarise_up_to(&self, row: Option<Row>) -> TreeAction {
        let branches = self.branches();
        let Some(Row::Node { session, node, .. }) = row else {
            return TreeAction::Tell("select a request or a compaction of this session".into());
        };
        let Some(branch) = branches.get(session) else {
            return TreeAction::Stay;
        };
        if branch.id != self.current {
            return TreeAction::Tell("that is another session: open it first (Enter on its branch)".into());
        }
        let requests: Vec<&str> = branch
            .nodes
            .iter()
            .skip(node)
            .filter_map(|node| match node {
                Node::Request { text, .. } => Some(text.as_str()),
                Node::Stage { .. } => None,
            })
            .collect();
        let Some(request) = requests.first() else {
            return TreeAction::Tell("no request follows it to keep".into());
        };
        let later_same = requests[1..].iter().filter(|text| *text == request).count();
        TreeAction::SummariseUpTo {
            request: request.to_string(),
            later_same,
        }
    }

    fn open(&self, row: Option<Row>) -> TreeAction {
        let branches = self.branches();
        match row {
            Some(Row::Branch { session, .. }) => match branches.get(session) {
                Some(branch) if branch.id == self.current => TreeAction::Close,
                Some(branch) => TreeAction::Resume(branch.id.clone()),
                None => TreeAction::Stay,
            },
            Some(Row::Node { session, node, .. }) => {
                let Some(branch) = branches.get(session) else {
                    return TreeAction::Stay;
                };
                let at = match branch.nodes.get(node) {
                    Some(Node::Request { position, .. }) => ForkAt::Message(*position),
                    Some(Node::Stage { id, .. }) => ForkAt::Stage(id.clone()),
                    None => return TreeAction::Stay,
                };
                let session = (branch.id != self.current).then(|| branch.id.clone());
                TreeAction::Fork { session, at }
            }
            None => TreeAction::Stay,
        }
    }

    /// What the tree offers on the selected row: summarising only where a request of
    /// the open session follows it (else why not).
    pub fn offers(&self) -> Vec<keymap::Offer> {
        use keymap::Offer;
        let selected = self.rows().get(self.selected).cloned();
        let summarise = match self.summarise_up_to(selected) {
            TreeAction::SummariseUpTo { .. } => Ok(()),
            TreeAction::Tell(why) => Err(why),
            _ => Err("select a request or a compaction of this session".into()),
        };
        vec![
            Offer::ready(Action::Previous, "select"),
            Offer::ready(Action::Open(0), "fork before / open"),
            Offer::when(Action::SummariseUpTo, "summarise before", summarise),
            Offer::ready(Action::Fold, "fold"),
            Offer::ready(Action::Label, "label"),
            Offer::ready(Action::Close, "close"),
        ]
    }

    pub fn render(&mut self, frame: &mut Frame<'_>, area: Rect) {
        frame.render_widget(Clear, area);
        let palette = theme::palette();
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(Style::default().fg(palette.accent))
            .title(" session tree ");
        let inner = block.inner(area);
        frame.render_widget(block, area);
        let [body, foot] = Layout::vertical([Constraint::Min(1), Constraint::Length(1)]).areas(inner);
        let rows = self.rows();
        let height = body.height.max(1) as usize;
        self.page = height;
        if self.selected < self.first_shown {
            self.first_shown = self.selected;
        } else if self.selected >= self.first_shown + height {
            self.first_shown = self.selected + 1 - height;
        }
        let width = body.width as usize;
        let mut lines: Vec<Line<'static>> = match &self.family {
            None => vec![Line::styled(
                "reading the sessions…",
                Style::default().fg(palette.muted),
            )],
            Some(Err(error)) => vec![Line::styled(error.clone(), Style::default().fg(palette.failure))],
            Some(Ok(_)) => Vec::new(),
        };
        for (at, row) in rows.iter().enumerate().skip(self.first_shown).take(height) {
            lines.push(self.line(row, at == self.selected, width));
        }
        frame.render_widget(Paragraph::new(lines), body);
        let footer = match &self.labelling {
            Some(label) => Line::styled(
                format!("label: {label}▏ · Enter keep · Esc cancel (empty removes it)"),
                Style::default().fg(palette.soft),
            ),
            None => keymap::footer(View::Tree, &self.offers()),
        };
        frame.render_widget(Paragraph::new(footer), foot);
    }

    fn line(&self, row: &Row, selected: bool, width: usize) -> Line<'static> {
        let palette = theme::palette();
        let branches = self.branches();
        let (depth, text, style) = match row {
            Row::Branch { session, depth } => {
                let branch = &branches[*session];
                let folded = if self.folded.contains(&branch.id) { "▸" } else { "▾" };
                let mut text = match &branch.parent {
                    None => format!("{folded} ● session {}", branch.id),
                    Some(origin) => format!("{folded} ⑂ {} · {}", branch.id, origin.at),
                };
                if branch.id == self.current {
                    text.push_str(" · open here");
                } else if let Some(pid) = &branch.open_in {
                    text.push_str(&format!(" · open in pid {pid}"));
                }
                (
                    *depth,
                    text,
                    Style::default().fg(palette.archive).add_modifier(Modifier::BOLD),
                )
            }
            Row::Node { session, node, depth } => match &branches[*session].nodes[*node] {
                Node::Request { position, text } => {
                    let branch = &branches[*session];
                    let stages = branch.nodes[*node + 1..]
                        .iter()
                        .take_while(|next| matches!(next, Node::Stage { .. }))
                        .count();
                    let folded = if stages > 0 && self.folded.contains(&request_key(&branch.id, *position)) {
                        format!(" ▸ {}", crate::compact::counted(stages, "stage", "stages"))
                    } else {
                        String::new()
                    };
                    (
                        *depth,
                        format!("{position:>3} › {}{folded}", crate::text::flatten_whitespace(text)),
                        Style::default().fg(palette.text),
                    )
                }
                Node::Stage {
                    stage,
                    chars_before,
                    chars_after,
                    undone,
                    ..
                } => (
                    *depth,
                    format!(
                        "    ◆ {stage} {} → {} chars{}",
                        crate::compact::short_count(*chars_before),
                        crate::compact::short_count(*chars_after),
                        if *undone { " · undone" } else { "" }
                    ),
                    Style::default().fg(palette.compaction),
                ),
            },
        };
        let label = self
            .key_of(row)
            .and_then(|key| self.labels.get(&key).map(str::to_string));
        let indent = "  ".repeat(depth);
        let marker = if selected { "›" } else { " " };
        let label_width = label.as_ref().map_or(0, |l| l.chars().count() + 3);
        let room = width.saturating_sub(indent.len() + 2 + label_width);
        let mut style = style;
        if selected {
            style = style.add_modifier(Modifier::REVERSED);
        }
        let mut spans = vec![
            Span::styled(marker.to_string(), Style::default().fg(palette.accent)),
            Span::raw(format!(" {indent}")),
            Span::styled(
                super::ellipsized(&crate::terminal_text::screen_safe(&text), room),
                style,
            ),
        ];
        if let Some(label) = label {
            spans.push(Span::styled(
                format!("  [{label}]"),
                Style::default().fg(palette.attention),
            ));
        }
        Line::from(spans)
    }
}

/// Whether `child` branched off just before `node`.
fn forks_before(child: &Branch, node: &Node) -> bool {
    let Some(origin) = &child.parent else { return false };
    match (&origin.at, node) {
        (ForkPoint::Stage { id, .. }, Node::Stage { id: here, .. }) => id == here,
        (ForkPoint::Message { position }, Node::Request { position: here, .. }) => position <= here,
        // A stage fired after `shown` messages: a fork before one of them is before it.
        (ForkPoint::Message { position }, Node::Stage { shown, .. }) => position <= shown,
        (ForkPoint::Stage { .. }, Node::Request { .. }) => false,
    }
}

impl crate::view::OverlayView for TreeView {
    fn offers(&self, _shown: &crate::view::Shown<'_>) -> Vec<keymap::Offer> {
        TreeView::offers(self)
    }

    fn keys(&self) -> crate::keymap::View {
        crate::keymap::View::Tree
    }

    fn name(&self) -> &'static str {
        "/tree"
    }

    fn draw(&mut self, frame: &mut Frame<'_>, area: Rect, _shown: &crate::view::Shown<'_>) {
        self.render(frame, area);
    }

    fn key(&mut self, key: KeyEvent, _shown: &crate::view::Shown<'_>) -> crate::view::Effect {
        use crate::protocol::Op;
        use crate::view::Effect;
        match self.handle_key(key) {
            TreeAction::Stay => Effect::Stay,
            TreeAction::Close => Effect::Close,
            TreeAction::Fork { session, at } => Effect::CloseAndSend(Op::Fork { session, at }),
            TreeAction::Resume(session) => Effect::CloseAndSend(Op::Resume { session }),
            TreeAction::Label { key, label } => Effect::Disk(crate::disk::DiskJob::Label { key, label }),
            TreeAction::SummariseUpTo { request, later_same } => {
                Effect::CloseAndSend(Op::SummariseUpTo { request, later_same })
            }
            TreeAction::Tell(message) => Effect::Tell(message),
        }
    }
}

#[cfg(test)]
mod tests {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

    use super::*;

    fn request(position: usize, text: &str) -> Node {
        Node::Request {
            position,
            text: text.into(),
        }
    }

    /// `s` on a request asks to summarise up to it, telling repeated requests apart; on
    /// a compaction, up to the first request after it; in another session, it says
    /// to open that one first.
    #[test]
    fn s_summarises_up_to_the_selected_request_of_the_open_session() {
        let stage = Node::Stage {
            id: "st1".into(),
            shown: 3,
            stage: crate::compact::Stage::CompactHistory,
            chars_before: 60_000,
            chars_after: 2_000,
            undone: false,
        };
        let branch = |id: &str| Branch {
            id: id.into(),
            parent: None,
            nodes: vec![
                request(1, "go on"),
                stage.clone(),
                request(4, "go on"),
                request(6, "fix it"),
            ],
            open_in: None,
        };
        let mut tree = TreeView::new("open".into(), false);
        tree.loaded(Ok(vec![branch("open")]), Labels::default());
        let s = KeyEvent::new(KeyCode::Char('s'), KeyModifiers::NONE);
        let down = KeyEvent::new(KeyCode::Down, KeyModifiers::NONE);
        let mut asked = Vec::new();
        for _ in 0..5 {
            match tree.handle_key(s) {
                TreeAction::SummariseUpTo { request, later_same } => asked.push(format!("{request}/{later_same}")),
                TreeAction::Tell(message) => asked.push(message),
                _ => asked.push("other".into()),
            }
            tree.handle_key(down);
        }
        assert_eq!(
            asked,
            vec![
                "select a request or a compaction of this session",
                "go on/1",
                "go on/0",
                "go on/0",
                "fix it/0"
            ]
        );
        let mut elsewhere = TreeView::new("open".into(), false);
        elsewhere.loaded(Ok(vec![branch("other")]), Labels::default());
        elsewhere.handle_key(down);
        assert!(matches!(elsewhere.handle_key(s), TreeAction::Tell(message) if message.contains("another session")));
    }

    /// A long tree is walked a page at a time, and Home and End reach its ends (it
    /// had Up and Down only).
    #[test]
    fn page_keys_and_home_end_move_through_a_long_tree() {
        let nodes: Vec<Node> = (0..60).map(|n| request(n * 2 + 1, &format!("request {n}"))).collect();
        let branch = Branch {
            id: "open".into(),
            parent: None,
            nodes,
            open_in: None,
        };
        let mut tree = TreeView::new("open".into(), false);
        tree.loaded(Ok(vec![branch]), Labels::default());
        let rows = tree.rows().len();
        tree.page = 10;
        let press = |tree: &mut TreeView, code: KeyCode| {
            tree.handle_key(KeyEvent::new(code, KeyModifiers::NONE));
            tree.selected
        };
        assert_eq!(press(&mut tree, KeyCode::End), rows - 1);
        assert_eq!(press(&mut tree, KeyCode::PageUp), rows - 11);
        assert_eq!(press(&mut tree, KeyCode::Home), 0);
        assert_eq!(press(&mut tree, KeyCode::PageDown), 10);
    }

    /// Space on a request folds the stages that followed it (a long session's tree
    /// was every stage of every request), and unfolds them again.
    #[test]
    fn a_request_folds_its_stages() {
        let stage = |id: &str| Node::Stage {
            id: id.into(),
            shown: 3,
            stage: crate::compact::Stage::MicroCompact,
            chars_before: 60_000,
            chars_after: 50_000,
            undone: false,
        };
        let branch = Branch {
            id: "open".into(),
            parent: None,
            nodes: vec![request(1, "go"), stage("a"), stage("b"), request(5, "on"), stage("c")],
            open_in: None,
        };
        let mut tree = TreeView::new("open".into(), false);
        tree.loaded(Ok(vec![branch]), Labels::default());
        assert_eq!(tree.rows().len(), 6, "the branch and its five nodes");
        let press = |tree: &mut TreeView, code: KeyCode| {
            tree.handle_key(KeyEvent::new(code, KeyModifiers::NONE));
        };
        press(&mut tree, KeyCode::Down);
        press(&mut tree, KeyCode::Char(' '));
        assert_eq!(tree.rows().len(), 4, "the first request's two stages folded");
        press(&mut tree, KeyCode::Char(' '));
        assert_eq!(tree.rows().len(), 6, "and back");
    }
}
