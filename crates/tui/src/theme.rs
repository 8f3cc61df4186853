//! The app's colours: a small vocabulary of roles, described in `styles.md` beside this
//! file. Widgets name a role of the [`palette`] in use, never a colour; a test keeps it
//! that way, and another checks every role's contrast against the background each
//! palette is made for.
//!
//! Colours are from the xterm 256-colour cube and grey ramp (indices 16-255), whose
//! values are the same in every terminal that has them; the 16 named colours are each
//! terminal's own choice, which is how white text ended up on white backgrounds.

use std::cell::Cell;
use std::sync::OnceLock;
use std::time::Duration;

use ratatui::style::Color;

use crate::config::ThemeChoice;

/// One colour per role.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Palette {
    pub name: &'static str,
    /// The darkest and the lightest background this palette is made for (RGB); the
    /// contrast test checks every role against both.
    pub backgrounds: [(u8, u8, u8); 2],
    /// Primary text and names that must stand out.
    pub text: Color,
    /// Labels and text of middling importance.
    pub soft: Color,
    /// Secondary text: hints, times, sizes, inactive borders.
    pub muted: Color,
    /// Titles, headings and the focused element.
    pub accent: Color,
    /// What needs the eye now: keys to press, a busy state, the warm gauge zone.
    pub attention: Color,
    /// Done and well.
    pub success: Color,
    /// A second success, e.g. the provider name.
    pub success_bright: Color,
    /// Failed or over the limit.
    pub failure: Color,
    /// Errors and refusals that are not fatal; raw tool output in the context map.
    pub failure_soft: Color,
    /// Clickable paths and links.
    pub link: Color,
    /// Inline code in the model's text.
    pub code: Color,
    /// Neutral information: tool calls, code.
    pub info: Color,
    /// Compaction: markers in the chat, summaries in the context map.
    pub compaction: Color,
    /// Archive markers and second-level headings.
    pub archive: Color,
    /// References to saved text; deeper headings.
    pub reference: Color,
    /// Text on a coloured background (a status badge, a filled gauge cell).
    pub on_colour: Color,
    /// The background of a search match, under `text`.
    pub match_background: Color,
}

/// For dark backgrounds, black to `#262626`.
pub const DARK: Palette = Palette {
    name: "dark",
    backgrounds: [(0, 0, 0), (38, 38, 38)],
    text: Color::Indexed(255),
    soft: Color::Indexed(250),
    muted: Color::Indexed(246),
    accent: Color::Indexed(117),
    attention: Color::Indexed(220),
    success: Color::Indexed(77),
    success_bright: Color::Indexed(120),
    failure: Color::Indexed(203),
    failure_soft: Color::Indexed(210),
    link: Color::Indexed(123),
    code: Color::Indexed(220),
    info: Color::Indexed(80),
    compaction: Color::Indexed(213),
    archive: Color::Indexed(176),
    reference: Color::Indexed(111),
    on_colour: Color::Indexed(16),
    match_background: Color::Indexed(58),
};

/// For light backgrounds, `#eeeeee` to white.
pub const LIGHT: Palette = Palette {
    name: "light",
    backgrounds: [(238, 238, 238), (255, 255, 255)],
    text: Color::Indexed(16),
    soft: Color::Indexed(238),
    muted: Color::Indexed(241),
    accent: Color::Indexed(25),
    attention: Color::Indexed(94),
    success: Color::Indexed(22),
    success_bright: Color::Indexed(23),
    failure: Color::Indexed(124),
    failure_soft: Color::Indexed(160),
    link: Color::Indexed(26),
    code: Color::Indexed(94),
    info: Color::Indexed(24),
    compaction: Color::Indexed(90),
    archive: Color::Indexed(91),
    reference: Color::Indexed(19),
    on_colour: Color::Indexed(231),
    match_background: Color::Indexed(229),
};

/// For a terminal that does not say its background, which may be black or white:
/// the text a user reads in the terminal's own foreground (the one colour known to be
/// readable on it; links keep their underline), every other role a mid tone that
/// reads on both (the dark palette's pink markers, yellow warnings and light blue
/// headings vanished on white). No hue but a narrow band of greys reaches 4.5:1 on
/// black and on white, so these are held to 4:1 on both.
pub const EITHER: Palette = Palette {
    name: "auto (either background)",
    backgrounds: [(0, 0, 0), (255, 255, 255)],
    text: Color::Reset,
    soft: Color::Reset,
    muted: Color::Indexed(243),
    accent: Color::Indexed(31),
    attention: Color::Indexed(130),
    success: Color::Indexed(28),
    success_bright: Color::Indexed(29),
    failure: Color::Indexed(161),
    failure_soft: Color::Indexed(162),
    link: Color::Reset,
    code: Color::Reset,
    info: Color::Indexed(30),
    compaction: Color::Indexed(98),
    archive: Color::Indexed(97),
    reference: Color::Indexed(63),
    on_colour: Color::Indexed(231),
    match_background: Color::Indexed(243),
};

/// How long the terminal has to say what its background is. Terminals that cannot
/// answer are recognised at once; this bounds one that is slow (over SSH, say).
const QUERY_TIMEOUT: Duration = Duration::from_millis(250);

/// The palette for `choice`; for `Auto`, asks the terminal (before the app takes the
/// screen: the answer arrives on the terminal's input).
pub fn detect(choice: ThemeChoice) -> Palette {
    match choice {
        ThemeChoice::Dark => DARK,
        ThemeChoice::Light => LIGHT,
        ThemeChoice::Auto => {
            let mut options = terminal_colorsaurus::QueryOptions::default();
            options.timeout = QUERY_TIMEOUT;
            match terminal_colorsaurus::color_palette(options) {
                Ok(colours) => match colours.theme_mode() {
                    terminal_colorsaurus::ThemeMode::Dark => DARK,
                    terminal_colorsaurus::ThemeMode::Light => LIGHT,
                },
                Err(error) => {
                    tracing::info!("the terminal did not say its background ({error}); colours for either");
                    EITHER
                }
            }
        }
    }
}

static CHOSEN: OnceLock<Palette> = OnceLock::new();

thread_local! {
    static ON_THIS_THREAD: Cell<Option<Palette>> = const { Cell::new(None) };
}

/// Set the app's palette, once, at start.
pub fn choose(palette: Palette) {
    let _ = CHOSEN.set(palette);
}

/// The palette in use: this thread's (see [`with_palette`]), else the one chosen at
/// start, else [`DARK`].
pub fn palette() -> Palette {
    ON_THIS_THREAD
        .with(Cell::get)
        .unwrap_or_else(|| CHOSEN.get().copied().unwrap_or(DARK))
}

/// Run `draw` with `palette` on this thread only: renders of both themes side by side
/// (the snapshot tests) without touching the app's choice.
pub fn with_palette<R>(palette: Palette, draw: impl FnOnce() -> R) -> R {
    let before = ON_THIS_THREAD.with(|current| current.replace(Some(palette)));
    let result = draw();
    ON_THIS_THREAD.with(|current| current.set(before));
    result
}

/// The RGB value of a colour of the 256-colour cube or grey ramp; `None` for the 16
/// colours each terminal sets itself and for the terminal's defaults.
pub fn rgb(colour: Color) -> Option<(u8, u8, u8)> {
    match colour {
        Color::Rgb(r, g, b) => Some((r, g, b)),
        Color::Indexed(index @ 232..=255) => {
            let level = 8 + 10 * (index - 232);
            Some((level, level, level))
        }
        Color::Indexed(index @ 16..=231) => {
            const LEVELS: [u8; 6] = [0, 95, 135, 175, 215, 255];
            let cube = index - 16;
            Some((
                LEVELS[usize::from(cube / 36)],
                LEVELS[usize::from(cube / 6 % 6)],
                LEVELS[usize::from(cube % 6)],
            ))
        }
        _ => None,
    }
}

/// WCAG 2 contrast ratio of two colours, from 1 (none) to 21 (black on white).
pub fn contrast(a: (u8, u8, u8), b: (u8, u8, u8)) -> f64 {
    fn luminance((r, g, b): (u8, u8, u8)) -> f64 {
        let channel = |value: u8| {
            let v = f64::from(value) / 255.0;
            if v <= 0.039_28 {
                v / 12.92
            } else {
                ((v + 0.055) / 1.055).powf(2.4)
            }
        };
        0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)
    }
    let (la, lb) = (luminance(a), luminance(b));
    (la.max(lb) + 0.05) / (la.min(lb) + 0.05)
}

/// What a piece of highlighted code is, for its colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CodeRole {
    Plain,
    Keyword,
    Text,
    Comment,
    Constant,
    Function,
    Type,
}

/// The colour of each kind of code, from the roles above.
pub fn code_colour(role: CodeRole) -> Color {
    let palette = palette();
    match role {
        CodeRole::Plain => palette.info,
        CodeRole::Keyword => palette.archive,
        CodeRole::Text => palette.success,
        CodeRole::Comment => palette.muted,
        CodeRole::Constant => palette.attention,
        CodeRole::Function => palette.accent,
        CodeRole::Type => palette.success_bright,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_role(palette: &Palette) -> [(&'static str, Color); 17] {
        [
            ("text", palette.text),
            ("soft", palette.soft),
            ("muted", palette.muted),
            ("accent", palette.accent),
            ("attention", palette.attention),
            ("success", palette.success),
            ("success_bright", palette.success_bright),
            ("failure", palette.failure),
            ("failure_soft", palette.failure_soft),
            ("link", palette.link),
            ("code", palette.code),
            ("info", palette.info),
            ("compaction", palette.compaction),
            ("archive", palette.archive),
            ("reference", palette.reference),
            ("on_colour", palette.on_colour),
            ("match_background", palette.match_background),
        ]
    }

    /// styles.md's table gives each role's index in both palettes, as they are here.
    #[test]
    fn the_styles_table_is_the_palettes() {
        let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/src/styles.md")).unwrap();
        let mut documented = std::collections::BTreeMap::new();
        for row in doc.lines().filter(|line| line.starts_with("| `")) {
            let cells: Vec<&str> = row.trim_matches('|').split('|').map(str::trim).collect();
            let names: Vec<&str> = cells[0].split(" / ").map(|name| name.trim_matches('`')).collect();
            let dark: Vec<&str> = cells[1].split(" / ").collect();
            let light: Vec<&str> = cells[2].split(" / ").collect();
            let either: Vec<&str> = cells[3].split(" / ").collect();
            for (at, name) in names.iter().enumerate() {
                documented.insert(
                    name.to_string(),
                    (dark[at].to_string(), light[at].to_string(), either[at].to_string()),
                );
            }
        }
        let index = |colour: Color| match colour {
            Color::Indexed(n) => n.to_string(),
            Color::Reset => "terminal".to_string(),
            other => panic!("{other:?} is not a 256-colour index"),
        };
        let actual: std::collections::BTreeMap<String, (String, String, String)> = every_role(&DARK)
            .into_iter()
            .zip(every_role(&LIGHT))
            .zip(every_role(&EITHER))
            .map(|(((name, dark), (_, light)), (_, either))| {
                (name.to_string(), (index(dark), index(light), index(either)))
            })
            .collect();
        assert_eq!(documented, actual);
    }

    /// Every role of each palette is readable on every background it is made for:
    /// 4.5:1 for text (WCAG AA), 3:1 for the gauge's ticks and rules.
    #[test]
    fn every_role_has_its_contrast_on_each_palettes_backgrounds() {
        for palette in [DARK, LIGHT, EITHER] {
            // The terminal's own foreground is readable on its own background.
            let terminal_text = |colour: Color| colour == Color::Reset;
            let needed_for_text = if palette == EITHER { 4.0 } else { 4.5 };
            let roles = every_role(&palette);
            // All but the last two are drawn over the background; `on_colour` and
            // `match_background` are checked in the pairs they are drawn in, below.
            let text_roles = &roles[..roles.len() - 2];
            let mut pairs: Vec<(String, Color, Color, f64)> = Vec::new();
            for &(name, colour) in text_roles.iter().filter(|(_, colour)| !terminal_text(*colour)) {
                for background in palette.backgrounds {
                    let (r, g, b) = background;
                    pairs.push((
                        format!("{name} on {background:?}"),
                        colour,
                        Color::Rgb(r, g, b),
                        needed_for_text,
                    ));
                }
            }
            for (name, badge) in [
                ("accent", palette.accent),
                ("attention", palette.attention),
                ("failure", palette.failure),
                ("success", palette.success),
            ] {
                pairs.push((
                    format!("on_colour on {name}"),
                    palette.on_colour,
                    badge,
                    needed_for_text,
                ));
                pairs.push((format!("a tick on a filled {name} cell"), palette.on_colour, badge, 3.0));
            }
            // Under the terminal's own text, a match is a mid grey, which either
            // foreground reads on.
            let (front, needed) = if terminal_text(palette.text) {
                (Color::Indexed(231), needed_for_text)
            } else {
                (palette.text, 4.5)
            };
            pairs.push(("text on a search match".into(), front, palette.match_background, needed));
            if terminal_text(palette.text) {
                pairs.push((
                    "dark text on a search match".into(),
                    Color::Indexed(16),
                    palette.match_background,
                    needed_for_text,
                ));
            }
            for (what, front, back, needed) in pairs {
                let (Some(front_rgb), Some(back_rgb)) = (rgb(front), rgb(back)) else {
                    panic!("{}: {what}: a colour each terminal sets itself", palette.name);
                };
                let ratio = contrast(front_rgb, back_rgb);
                assert!(
                    ratio >= needed,
                    "{}: {what} is {ratio:.2}:1, under {needed}:1",
                    palette.name
                );
            }
        }
    }

    #[test]
    fn contrast_and_the_256_colour_values_are_the_standard_ones() {
        assert_eq!(rgb(Color::Indexed(16)), Some((0, 0, 0)));
        assert_eq!(rgb(Color::Indexed(231)), Some((255, 255, 255)));
        assert_eq!(rgb(Color::Indexed(196)), Some((255, 0, 0)));
        assert_eq!(rgb(Color::Indexed(110)), Some((135, 175, 215)));
        assert_eq!(rgb(Color::Indexed(232)), Some((8, 8, 8)));
        assert_eq!(rgb(Color::Indexed(255)), Some((238, 238, 238)));
        assert_eq!(rgb(Color::White), None, "named colours are the terminal's own");
        assert!((contrast((0, 0, 0), (255, 255, 255)) - 21.0).abs() < 1e-9);
        assert!((contrast((119, 119, 119), (255, 255, 255)) - 4.48).abs() < 0.01);
    }

    #[test]
    fn a_palette_set_on_one_thread_leaves_the_others_alone() {
        let inside = with_palette(LIGHT, || {
            let elsewhere = std::thread::spawn(palette).join().unwrap();
            (palette(), elsewhere)
        });
        assert_eq!(inside.0, LIGHT);
        assert_ne!(inside.1, LIGHT);
        assert_ne!(palette(), LIGHT, "restored after the render");
    }

    /// Widgets use the roles above; only this file names colours.
    #[test]
    fn no_widget_names_a_raw_colour() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.file_name().is_some_and(|name| name == "theme.rs") || path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for (at, line) in text.lines().enumerate() {
                assert!(
                    !line.contains("Color::"),
                    "{}:{}: use a role from tui/theme.rs instead of a colour: {line}",
                    path.display(),
                    at + 1
                );
            }
        }
    }
}
