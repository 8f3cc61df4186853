//! The one shape every view over the chat has (the help, the archive browser,
//! `/context`, the session picker, the session tree), [`OverlayView`]: it draws itself,
//! takes the keys while it is open and says what the app is to do with one as an
//! [`Effect`], lists the actions it offers now (its footer, each with its key from the
//! key table and whether it can run), and says whether typed letters are its own text. A view never reaches another view or
//! the agent itself: the app carries out its effects, so one place decides what
//! closing, sending or opening a file does.

use crossterm::event::KeyEvent;
use ratatui::Frame;
use ratatui::layout::Rect;

use crate::context_view::Thresholds;
use crate::disk::DiskJob;
use crate::protocol::Op;
use crate::state::AppState;

/// What a view may read of the app as it draws or takes a key.
pub struct Shown<'a> {
    pub state: &'a AppState,
    /// The limit and the target the agent works to now.
    pub thresholds: Thresholds,
}

/// What the app does after a view took a key.
pub enum Effect {
    /// Nothing beyond the view's own change.
    Stay,
    /// Close the view (the browser goes back where it was opened from).
    Close,
    /// Send the agent an op; the view stays open.
    Send(Op),
    /// Close the view and send the agent an op.
    CloseAndSend(Op),
    /// Work for the disk, off the UI thread.
    Disk(DiskJob),
    /// Say this in a toast, instead of acting.
    Tell(String),
    /// Read a file of the workspace in the browser, coming back here after.
    OpenPath(String),
    /// Read this text in the viewer, coming back here after.
    ShowText { title: String, text: String },
}

pub trait OverlayView {
    /// Its name, as the user opened it.
    fn name(&self) -> &'static str;

    /// Draw into `area` (the chat and the gauge's rows; the whole screen where
    /// [`OverlayView::covers_the_screen`]).
    fn draw(&mut self, frame: &mut Frame<'_>, area: Rect, shown: &Shown<'_>);

    /// One key, while the view is open.
    fn key(&mut self, key: KeyEvent, shown: &Shown<'_>) -> Effect;

    /// Whether typed letters are its own text (a filter, a search being typed, a file
    /// being read), not commands that typing prose could set off.
    fn takes_typing(&self) -> bool {
        false
    }

    /// Whether it is drawn over the whole screen rather than over the chat.
    fn covers_the_screen(&self) -> bool {
        false
    }

    /// Where its keys are in the key table (the help, opened over it, lists them
    /// first).
    fn keys(&self) -> crate::keymap::View;

    /// The actions it offers now, for its footer: each with whether it can run, and
    /// if not, why (what its key says when pressed).
    fn offers(&self, shown: &Shown<'_>) -> Vec<crate::keymap::Offer>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context_view::ContextView;

    /// Every view offers only actions its own keys do, so its footer names each with
    /// the key the table binds there; what cannot run says why.
    #[test]
    fn each_view_offers_actions_bound_in_it() {
        let state = AppState::default();
        let shown = Shown {
            state: &state,
            thresholds: Thresholds {
                limit: 50_000,
                target: 40_000,
            },
        };
        let views: Vec<Box<dyn OverlayView>> = vec![
            Box::new(crate::help::HelpView::default()),
            Box::new(crate::browser::Browser::new()),
            Box::new(ContextView::default()),
            Box::new(crate::picker::Picker::new(None)),
            Box::new(crate::tree::TreeView::new("s1".into(), false)),
        ];
        for view in views {
            let offers = view.offers(&shown);
            assert!(!offers.is_empty(), "{}", view.name());
            for offer in offers {
                assert!(
                    crate::keymap::key_in(view.keys(), offer.action).is_some(),
                    "{} offers {:?} with no key there",
                    view.name(),
                    offer.action
                );
                if let Err(why) = offer.now {
                    assert!(!why.is_empty(), "{}: {:?} says why", view.name(), offer.action);
                }
            }
        }
        let context = ContextView::default();
        let restore = context
            .offers(None)
            .into_iter()
            .find(|offer| offer.action == crate::keymap::Action::Restore)
            .unwrap();
        assert_eq!(
            restore.now,
            Err("nothing selected: the list of largest items is empty".into())
        );
    }
}
