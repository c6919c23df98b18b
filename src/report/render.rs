//! [`Render`]: the one way a report becomes text, as hyperfine's exporters are one trait over
//! its formats. Every report a command prints implements it (the speed, energy and summary
//! reports here and in `summary/`, the doctor survey, and the `bounds`, `verify`,
//! `convert-check`, `trace summarize`, `trace run` and `snake bench` reports beside their
//! libraries); the commands call these methods and print or write what they return, never
//! formatting a report themselves.

/// A report as text.
pub trait Render {
    /// What the command prints on standard output.
    fn terminal(&self) -> String;

    /// The Markdown file's text. By default what the terminal shows: the speed, energy and
    /// summary reports print their Markdown.
    fn markdown(&self) -> String {
        self.terminal()
    }

    /// The CSV file's text, for a report that has one (one row per arm or block); `None` for
    /// one that has none.
    fn csv(&self) -> Option<String> {
        None
    }
}
