//! The first-run tour on the offline demo: three short notes at the moments that
//! matter (the first compaction marker, the first summary, the first undo). Each stays
//! over the top of the chat until Ctrl+D dismisses it, and is never shown again: the
//! dismissed ones are kept in the data folder (`tour.json`), read and written by the
//! disk worker, never on the UI thread.

use std::path::Path;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::Line;
use ratatui::widgets::{Block, BorderType, Borders, Clear, Paragraph, Wrap};

use crate::compact::Stage;
use crate::protocol::AgentEvent;
use crate::theme;

/// The file in the data folder that keeps the dismissed notes.
pub const TOUR_FILE: &str = "tour.json";

/// One note of the tour.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, strum::EnumIter)]
#[serde(rename_all = "snake_case")]
pub enum TourStop {
    FirstMarker,
    FirstSummary,
    FirstUndo,
}

impl TourStop {
    /// The stop `event` reaches, if any: a compaction that changed the history (a
    /// summary apart), or an undo.
    pub fn reached_by(event: &AgentEvent) -> Option<TourStop> {
        match event {
            AgentEvent::Compaction { event } if !event.failed() && event.replaced > 0 => {
                Some(if event.stage == Stage::CompactHistory {
                    TourStop::FirstSummary
                } else {
                    TourStop::FirstMarker
                })
            }
            AgentEvent::Undone { .. } => Some(TourStop::FirstUndo),
            _ => None,
        }
    }

    fn number(self) -> usize {
        self as usize + 1
    }

    fn text(self) -> &'static str {
        match self {
            TourStop::FirstMarker => {
                "◆ That marker is a compaction: older tool output left the context for the archive, and the \
                 marker says what went where. Tab, then ↑↓ selects it; → shows its receipt; Enter opens what \
                 was saved; u undoes it."
            }
            TourStop::FirstSummary => {
                "◆ compact_history: the model now reads a summary in place of the conversation, and the whole \
                 transcript is one Enter away on its marker. f there forks a session from before it; Ctrl+X \
                 shows what the context holds now."
            }
            TourStop::FirstUndo => {
                "Undone: the history is back exactly as it was before that compaction, read back from the \
                 archive and checked against its receipt. / finds every action, with its key."
            }
        }
    }
}

/// Which notes were dismissed (once read from the data folder) and which one shows.
#[derive(Debug, Default)]
pub struct Tour {
    /// `None` until the data folder was read (or when this is not the demo).
    dismissed: Option<Vec<TourStop>>,
    /// The newest stop reached, shown once the dismissed ones are known.
    reached: Option<TourStop>,
}

impl Tour {
    /// What the data folder keeps: the dismissed notes.
    pub fn loaded(&mut self, dismissed: Vec<TourStop>) {
        self.dismissed = Some(dismissed);
    }

    /// The moment of `stop` came: its note shows, unless it was dismissed before.
    pub fn reached(&mut self, stop: TourStop) {
        self.reached = Some(stop);
    }

    /// The note on screen, if any.
    pub fn showing(&self) -> Option<TourStop> {
        let stop = self.reached?;
        (!self.dismissed.as_ref()?.contains(&stop)).then_some(stop)
    }

    /// Ctrl+D: the note on screen goes, for good; the one to keep as dismissed.
    pub fn dismiss(&mut self) -> Option<TourStop> {
        let stop = self.showing()?;
        self.reached = None;
        if let Some(dismissed) = &mut self.dismissed {
            dismissed.push(stop);
        }
        Some(stop)
    }

    /// The note on screen over `area` (the chat), in its width, never over the first
    /// line of the newest marker on screen (its row in `marker_row`), the one it is
    /// about: at the top, or at the bottom where the top would cover that line. Where
    /// it was drawn, if it was.
    pub fn render(&self, frame: &mut Frame<'_>, area: Rect, marker_row: Option<u16>) -> Option<Rect> {
        let stop = self.showing()?;
        if area.width < 24 || area.height < 6 {
            return None;
        }
        let width = area.width.saturating_sub(4).min(84);
        let inner = usize::from(width.saturating_sub(4)).max(1);
        let lines = u16::try_from(textwrap::wrap(stop.text(), inner).len()).unwrap_or(u16::MAX);
        let height = (lines + 2).min(area.height.saturating_sub(2));
        let top_rows = area.y + 1..area.y + 1 + height;
        let low = marker_row.is_some_and(|row| top_rows.contains(&row));
        let note = Rect {
            x: area.x + 2,
            y: if low {
                area.y + area.height - 1 - height
            } else {
                area.y + 1
            },
            width,
            height,
        };
        let palette = theme::palette();
        let total = <TourStop as strum::IntoEnumIterator>::iter().count();
        frame.render_widget(Clear, note);
        frame.render_widget(
            Paragraph::new(Line::from(stop.text()))
                .style(Style::default().fg(palette.text))
                .wrap(Wrap { trim: true })
                .block(
                    Block::default()
                        .borders(Borders::ALL)
                        .border_type(BorderType::Rounded)
                        .border_style(Style::default().fg(palette.accent))
                        .padding(ratatui::widgets::Padding::horizontal(1))
                        .title(format!(" tour {} of {total} ", stop.number()))
                        .title_bottom(Line::from(" Ctrl+D dismisses it for good ").right_aligned()),
                ),
            note,
        );
        Some(note)
    }
}

/// The notes dismissed so far, as kept in `data_dir`, with `dismiss` added and kept
/// when given. A file that is not ours is said, and the tour starts afresh.
pub fn keep(data_dir: &Path, dismiss: Option<TourStop>) -> Result<Vec<TourStop>, String> {
    let path = data_dir.join(TOUR_FILE);
    let mut dismissed: Vec<TourStop> = crate::store::read_json_whole(&path)
        .map_err(|error| error.to_string())?
        .unwrap_or_default();
    if let Some(stop) = dismiss
        && !dismissed.contains(&stop)
    {
        dismissed.push(stop);
        crate::store::write_json_whole(&path, &dismissed).map_err(|error| error.to_string())?;
    }
    Ok(dismissed)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A note shows once the dismissed ones are known, goes with Ctrl+D, and a note
    /// dismissed before never shows; what is dismissed is kept in the data folder.
    #[test]
    fn a_dismissed_note_never_shows_again() {
        let data = tempfile::tempdir().unwrap();
        let mut tour = Tour::default();
        tour.reached(TourStop::FirstMarker);
        assert_eq!(tour.showing(), None, "not before the data folder was read");
        tour.loaded(keep(data.path(), None).unwrap());
        assert_eq!(tour.showing(), Some(TourStop::FirstMarker));
        let dismissed = tour.dismiss().unwrap();
        assert_eq!(tour.showing(), None);
        keep(data.path(), Some(dismissed)).unwrap();

        let mut next_run = Tour::default();
        next_run.loaded(keep(data.path(), None).unwrap());
        next_run.reached(TourStop::FirstMarker);
        assert_eq!(next_run.showing(), None, "dismissed for good");
        next_run.reached(TourStop::FirstSummary);
        assert_eq!(next_run.showing(), Some(TourStop::FirstSummary));

        std::fs::write(data.path().join(TOUR_FILE), b"\"no\"").unwrap();
        let error = keep(data.path(), None).unwrap_err();
        assert!(error.contains("does not hold what scratchpad keeps there"), "{error}");
    }
}
