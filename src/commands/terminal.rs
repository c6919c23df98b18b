//! How a command's results are shown, decided once at the command edge from the global flags
//! (`--color`, `--quiet`), `NO_COLOR` and whether stdout is a terminal, then passed down: the
//! reports' Markdown padded and coloured for a terminal ([`crate::report::Style`]), plain
//! into a pipe or a file.

use std::ffi::OsStr;
use std::io::IsTerminal;

use crate::cli::ColorWhen;
use crate::report::Style;

/// What the global output flags ask of a command.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Output {
    /// `--quiet`: no progress, no set-up notes, no tables; only the paths of the files written.
    pub quiet: bool,
    /// How the Markdown printed on stdout is shown.
    pub style: Style,
}

impl Output {
    /// From the flags, `NO_COLOR` and stdout (read here, at the edge, and nowhere else).
    pub(crate) fn from_flags(color: ColorWhen, quiet: bool) -> Self {
        let terminal = std::io::stdout().is_terminal();
        let no_color = std::env::var_os("NO_COLOR");
        Self { quiet, style: style(color, no_color.as_deref(), terminal) }
    }
}

/// The decision: tables padded where stdout is a terminal; colour with `--color always`, never
/// with `--color never`, and under `auto` only on a terminal with `NO_COLOR` unset or empty
/// (<https://no-color.org>: any non-empty value turns colour off; the flag overrides it).
pub(crate) fn style(color: ColorWhen, no_color: Option<&OsStr>, terminal: bool) -> Style {
    let color = match color {
        ColorWhen::Always => true,
        ColorWhen::Never => false,
        ColorWhen::Auto => terminal && no_color.is_none_or(OsStr::is_empty),
    };
    Style { pad: terminal, color }
}

#[cfg(test)]
mod tests {
    use std::ffi::OsStr;

    use super::style;
    use crate::cli::ColorWhen::{Always, Auto, Never};
    use crate::report::Style;

    #[test]
    fn colour_follows_the_flag_then_no_color_then_the_terminal() {
        let on = Some(OsStr::new("1"));
        let empty = Some(OsStr::new(""));
        // auto: a terminal without NO_COLOR (or with it empty) only
        assert_eq!(style(Auto, None, true), Style { pad: true, color: true });
        assert_eq!(style(Auto, empty, true), Style { pad: true, color: true });
        assert_eq!(style(Auto, on, true), Style { pad: true, color: false });
        assert_eq!(style(Auto, None, false), Style { pad: false, color: false });
        // the flag wins over NO_COLOR and the pipe; padding follows the terminal alone
        assert_eq!(style(Always, on, false), Style { pad: false, color: true });
        assert_eq!(style(Never, None, true), Style { pad: true, color: false });
    }
}
