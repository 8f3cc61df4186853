//! The keys of each view (the help's sections after the screen's own): what each
//! view's keys do there, and the action each key is bound to.

use super::*;

/// The keys of each view.
pub const VIEWS: &[(&str, &[Row])] = &[
    (
        "In the archive browser (/archive)",
        &[
            row(
                "Up / Down, j / k",
                "select a file",
                &[
                    (V::Browser, key(KeyCode::Up), A::Previous),
                    (V::Browser, key(KeyCode::Down), A::Next),
                    (V::Browser, char('k'), A::Previous),
                    (V::Browser, char('j'), A::Next),
                ],
            ),
            row("Enter", "open it", &[(V::Browser, key(KeyCode::Enter), A::Open(0))]),
            row(
                "Esc, q",
                "close the browser",
                &[
                    (V::Browser, key(KeyCode::Esc), A::Close),
                    (V::Browser, char('q'), A::Close),
                ],
            ),
        ],
    ),
    (
        "In the viewer",
        &[
            row(
                "Up / Down, PgUp / PgDn, g / G",
                "scroll",
                &[
                    (V::Viewer, key(KeyCode::Up), A::Previous),
                    (V::Viewer, key(KeyCode::Down), A::Next),
                    (V::Viewer, char('k'), A::Previous),
                    (V::Viewer, char('j'), A::Next),
                    (V::Viewer, key(KeyCode::PageUp), A::PageUp),
                    (V::Viewer, key(KeyCode::PageDown), A::PageDown),
                    (V::Viewer, char(' '), A::PageDown),
                    (V::Viewer, key(KeyCode::Home), A::Top),
                    (V::Viewer, char('g'), A::Top),
                    (V::Viewer, key(KeyCode::End), A::Bottom),
                    (V::Viewer, char('G'), A::Bottom),
                ],
            ),
            row("/", "search", &[(V::Viewer, char('/'), A::Search)]),
            row(
                "n / N",
                "next / previous match",
                &[
                    (V::Viewer, char('n'), A::NextMatch),
                    (V::Viewer, char('N'), A::PreviousMatch),
                ],
            ),
            row(
                "b",
                "jump back to where the search started",
                &[(V::Viewer, char('b'), A::JumpBack)],
            ),
            row(
                "Esc, q",
                "back to where it was opened (the list, the chat or /context)",
                &[
                    (V::Viewer, key(KeyCode::Esc), A::Close),
                    (V::Viewer, char('q'), A::Close),
                ],
            ),
        ],
    ),
    (
        "In the session picker (/resume)",
        &[
            row(
                "type",
                "filter by the text of each session's first and newest requests, and its id",
                &[],
            ),
            row(
                "Up / Down",
                "select a session",
                &[
                    (V::Picker, key(KeyCode::Up), A::Previous),
                    (V::Picker, key(KeyCode::Down), A::Next),
                ],
            ),
            row("Enter", "continue it", &[(V::Picker, key(KeyCode::Enter), A::Open(0))]),
            row("Esc", "close", &[(V::Picker, key(KeyCode::Esc), A::Close)]),
        ],
    ),
    (
        "In the session tree (/tree)",
        &[
            row(
                "Up / Down",
                "select a request, a compaction or a branch",
                &[
                    (V::Tree, key(KeyCode::Up), A::Previous),
                    (V::Tree, key(KeyCode::Down), A::Next),
                    (V::Tree, char('k'), A::Previous),
                    (V::Tree, char('j'), A::Next),
                ],
            ),
            row(
                "PgUp / PgDn",
                "a page up or down",
                &[
                    (V::Tree, key(KeyCode::PageUp), A::PageUp),
                    (V::Tree, key(KeyCode::PageDown), A::PageDown),
                ],
            ),
            row(
                "Home / End",
                "the first / the last row",
                &[
                    (V::Tree, key(KeyCode::Home), A::Top),
                    (V::Tree, key(KeyCode::End), A::Bottom),
                ],
            ),
            row(
                "Enter",
                "fork just before it (a request comes back to the prompt to edit; a compaction gives the history as it was before it), or continue the selected branch",
                &[(V::Tree, key(KeyCode::Enter), A::Open(0))],
            ),
            row(
                "Space, Left / Right",
                "fold or unfold a branch, or a request's stages",
                &[
                    (V::Tree, char(' '), A::Fold),
                    (V::Tree, key(KeyCode::Left), A::Fold),
                    (V::Tree, key(KeyCode::Right), A::Fold),
                ],
            ),
            row(
                "s",
                "summarise everything before it and keep it and what follows verbatim (a request, or the first request after a compaction, of the open session)",
                &[(V::Tree, char('s'), A::SummariseUpTo)],
            ),
            row(
                "l",
                "label it (an empty label removes it)",
                &[(V::Tree, char('l'), A::Label)],
            ),
            row(
                "Esc, q",
                "close",
                &[(V::Tree, key(KeyCode::Esc), A::Close), (V::Tree, char('q'), A::Close)],
            ),
        ],
    ),
    (
        "In /context",
        &[
            row(
                "Up / Down",
                "select an item of the list; the letters below act once you moved in it (a letter typed before goes to the prompt)",
                &[
                    (V::Context, key(KeyCode::Up), A::Previous),
                    (V::Context, key(KeyCode::Down), A::Next),
                    (V::Context, char('k'), A::Previous),
                    (V::Context, char('j'), A::Next),
                ],
            ),
            row(
                "Enter",
                "open it: its saved file, or its text",
                &[(V::Context, key(KeyCode::Enter), A::Open(0))],
            ),
            row(
                "f",
                "list the largest items, every tool result, or only the whole, persisted, cleared or pinned ones",
                &[(V::Context, char('f'), A::NextList)],
            ),
            row(
                "r",
                "put a shortened tool result back in full",
                &[(V::Context, char('r'), A::Restore)],
            ),
            row(
                "p",
                "pin a tool result (stage 3 leaves it whole) or unpin it",
                &[(V::Context, char('p'), A::Pin)],
            ),
            row(
                "d",
                "move a tool result to the archive now, with a receipt",
                &[(V::Context, char('d'), A::Drop)],
            ),
            row(
                "t",
                "count the tokens exactly, where the provider can",
                &[(V::Context, char('t'), A::CountTokens)],
            ),
            row(
                "PgUp / PgDn",
                "scroll the list of the session's compactions (newest first)",
                &[
                    (V::Context, key(KeyCode::PageUp), A::ScrollUp),
                    (V::Context, key(KeyCode::PageDown), A::ScrollDown),
                ],
            ),
            row(
                "Esc, q",
                "close",
                &[
                    (V::Context, key(KeyCode::Esc), A::Close),
                    (V::Context, char('q'), A::Close),
                ],
            ),
        ],
    ),
    (
        "In a permission question",
        &[
            row(
                "y, Enter",
                "allow once",
                &[
                    (V::Permission, char('y'), A::AllowOnce),
                    (V::Permission, key(KeyCode::Enter), A::AllowOnce),
                ],
            ),
            row("n", "deny", &[(V::Permission, char('n'), A::Deny)]),
            row(
                "e",
                "deny, and tell the model why (typed in the prompt; Esc goes back)",
                &[(V::Permission, char('e'), A::DenyBecause)],
            ),
            row(
                "a",
                "always allow in this session, where offered",
                &[(V::Permission, char('a'), A::AlwaysAllow)],
            ),
            row(
                "p",
                "always allow in this project, where offered (kept outside the workspace; /permissions revokes)",
                &[(V::Permission, char('p'), A::AlwaysForProject)],
            ),
            row(
                "Esc",
                "cancel the turn (so does Ctrl+C): no tool call follows",
                &[(V::Permission, key(KeyCode::Esc), A::CancelTurn)],
            ),
        ],
    ),
    (
        "In the help",
        &[
            row(
                "Up / Down",
                "scroll a line",
                &[
                    (V::Help, key(KeyCode::Up), A::Previous),
                    (V::Help, key(KeyCode::Down), A::Next),
                    (V::Help, char('k'), A::Previous),
                    (V::Help, char('j'), A::Next),
                ],
            ),
            row(
                "PgUp / PgDn",
                "scroll a page",
                &[
                    (V::Help, key(KeyCode::PageUp), A::PageUp),
                    (V::Help, key(KeyCode::PageDown), A::PageDown),
                ],
            ),
            row(
                "Home, g / End, G",
                "the top / the bottom",
                &[
                    (V::Help, key(KeyCode::Home), A::Top),
                    (V::Help, char('g'), A::Top),
                    (V::Help, key(KeyCode::End), A::Bottom),
                    (V::Help, char('G'), A::Bottom),
                ],
            ),
            row(
                "Esc, q, ?, F1",
                "close",
                &[
                    (V::Help, key(KeyCode::Esc), A::Close),
                    (V::Help, char('q'), A::Close),
                    (V::Help, char('?'), A::Close),
                    (V::Help, key(KeyCode::F(1)), A::Close),
                ],
            ),
        ],
    ),
    (
        "In a summary's review (the text is yours to edit)",
        &[
            row(
                "Ctrl+S",
                "apply the summary as it stands (your edit, or the model's text)",
                &[(V::Review, ctrl('s'), A::ApplySummary)],
            ),
            row(
                "Ctrl+R",
                "not now: the history stays as it was (at the limit the call goes over it; /summary sets it aside)",
                &[(V::Review, ctrl('r'), A::RejectSummary)],
            ),
            row(
                "Esc",
                "cancel (Ctrl+C too)",
                &[(V::Review, key(KeyCode::Esc), A::CancelTurn)],
            ),
        ],
    ),
    (
        "In a preview (/compact --preview)",
        &[
            row(
                "Ctrl+S",
                "compact now: the summary is written (with review_summaries, reviewed before it goes in)",
                &[(V::Preview, ctrl('s'), A::ApplySummary)],
            ),
            row(
                "Ctrl+R, Esc, q",
                "not now: close it, nothing changes",
                &[
                    (V::Preview, ctrl('r'), A::RejectSummary),
                    (V::Preview, key(KeyCode::Esc), A::Close),
                    (V::Preview, char('q'), A::Close),
                ],
            ),
            row(
                "Up / Down",
                "scroll the receipts",
                &[
                    (V::Preview, key(KeyCode::Up), A::Previous),
                    (V::Preview, key(KeyCode::Down), A::Next),
                ],
            ),
        ],
    ),
];
