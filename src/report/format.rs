//! The number and table formatting every report shares: decimals or `n/a`, milliseconds, CSV
//! cells, terminal widths, counted nouns, the "Missing values" list of the Markdown reports,
//! and how a report's Markdown is shown on a terminal ([`Style`]: tables padded, status words
//! coloured).

use std::collections::BTreeMap;

/// Terminal columns `text` takes: a wide character (今, 日) takes two, a combining mark none.
/// Measured by ratatui's text width (unicode-width), already a dependency for the Snake view.
pub fn display_width(text: &str) -> usize {
    ratatui::text::Line::raw(text).width()
}

/// `text` padded with spaces to `width` terminal columns (left-aligned; longer text is kept).
pub fn pad(text: &str, width: usize) -> String {
    let w = display_width(text);
    format!("{text}{}", " ".repeat(width.saturating_sub(w)))
}

/// `n` and the noun, singular for one: `1 balanced cycle`, `3 balanced cycles`.
pub fn count(n: usize, singular: &str, plural: &str) -> String {
    format!("{n} {}", if n == 1 { singular } else { plural })
}

/// The first `n` whole balanced cycles of a run, in words: `first whole balanced cycle`,
/// `first 2 whole balanced cycles`.
pub fn first_cycles(n: usize) -> String {
    if n == 1 {
        "first whole balanced cycle".into()
    } else {
        format!("first {n} whole balanced cycles")
    }
}

/// The warning for an interrupted run whose figures cover its whole cycles while `n` calls of
/// the cut cycle, left out of them, did not reproduce their warm-up result.
pub fn left_out_unstable_warning(n: u64) -> String {
    format!(
        "WARNING: {n} call(s) of the cut cycle, left out of the figures, did not reproduce their arm's warm-up result: the run is unstable"
    )
}

/// A number with `digits` decimals, or `n/a` (missing, or not a finite number: a NaN is what
/// an empty mean leaves, never a value to print).
pub fn num(v: Option<f64>, digits: usize) -> String {
    match v {
        Some(x) if x.is_finite() => format!("{x:.digits$}"),
        _ => "n/a".into(),
    }
}

/// A bootstrap interval as the tables print it right after its figure: ` [low, high]` with
/// `digits` decimals (`speed`'s ratio: 2, `energy`'s: 3, as the figure itself), or nothing
/// without one.
pub fn interval_bracket(interval: Option<&super::Interval>, digits: usize) -> String {
    interval.map(|iv| format!(" [{:.digits$}, {:.digits$}]", iv.low, iv.high)).unwrap_or_default()
}

/// Seconds as milliseconds with 3 decimals, or `n/a`.
pub fn ms(v: Option<f64>) -> String {
    num(v.map(|s| s * 1e3), 3)
}

/// A CSV cell: the number, or empty when missing or not finite.
pub fn csv_num(v: Option<f64>) -> String {
    v.filter(|x| x.is_finite()).map(|x| x.to_string()).unwrap_or_default()
}

/// Quote a CSV field when it needs it.
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The "Missing values" list: one line per reason and set of arms, naming its fields.
/// A field's generic "an input is missing" reason is left out where the same arm gives the
/// input's own reason for that field; every field keeps at least one reason.
pub fn missing_markdown(arms: &[(&str, Vec<(&str, &str)>)]) -> String {
    use crate::energy::run::{INPUT_MISSING, R_MISSING, S_MISSING, S_OR_R_MISSING};
    let generic = |why: &str| [INPUT_MISSING, S_OR_R_MISSING, S_MISSING, R_MISSING].contains(&why);
    // (reason, field) -> arms, in arm order and without repeats.
    let mut by_reason: BTreeMap<(&str, &str), Vec<&str>> = BTreeMap::new();
    for (arm, entries) in arms {
        for &(field, why) in entries {
            let specific = entries.iter().any(|&(f, w)| f == field && !generic(w));
            if generic(why) && specific {
                continue;
            }
            let list = by_reason.entry((why, field)).or_default();
            if !list.contains(arm) {
                list.push(arm);
            }
        }
    }
    if by_reason.is_empty() {
        return String::new();
    }
    // (reason, arms) -> fields.
    let mut lines: BTreeMap<(&str, Vec<&str>), Vec<&str>> = BTreeMap::new();
    for ((why, field), list) in by_reason {
        lines.entry((why, list)).or_default().push(field);
    }
    let mut out = String::from("Missing values (n/a):\n\n");
    for ((why, list), fields) in lines {
        let whose = if list.len() == arms.len() && arms.len() > 1 {
            "all arms".to_string()
        } else {
            format!("arm{} {}", if list.len() == 1 { "" } else { "s" }, list.join(", "))
        };
        out.push_str(&format!("- {why}: {} ({whose})\n", fields.join(", ")));
    }
    out.push('\n');
    out
}

/// How a report's Markdown is shown where it is printed, as the command decided at its edge:
/// `pad` the tables' columns to equal widths (stdout is a terminal), `color` the status words
/// (`--color`, `NO_COLOR`). Files keep the plain Markdown.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Style {
    /// Pad every table's columns to equal widths ([`pad_tables`]).
    pub pad: bool,
    /// Colour the status words ([`colorize`]).
    pub color: bool,
}

impl Style {
    /// `markdown` as this style shows it: padded, then coloured (so the colour codes never
    /// count in a column's width); unchanged when neither is asked for.
    pub fn apply(self, markdown: &str) -> String {
        let text = if self.pad { pad_tables(markdown) } else { markdown.to_string() };
        if self.color {
            colorize(&text)
        } else {
            text
        }
    }
}

/// A table column's alignment, from its separator cell (`---`, `:--`, `--:`, `:-:`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Align {
    Left,
    Right,
    Center,
    /// No colon: shown left-aligned, and the separator keeps no colon.
    Plain,
}

/// The cells of a table row (`| a | b |`, the outer pipes optional), trimmed; an escaped
/// pipe (`\|`) stays inside its cell.
fn cells(line: &str) -> Vec<String> {
    let t = line.trim();
    let t = t.strip_prefix('|').unwrap_or(t);
    let t = match t.strip_suffix('|') {
        Some(inner) if !inner.ends_with('\\') => inner,
        _ => t,
    };
    let mut out = Vec::new();
    let mut cell = String::new();
    let mut escaped = false;
    for c in t.chars() {
        if c == '|' && !escaped {
            out.push(cell.trim().to_string());
            cell.clear();
        } else {
            cell.push(c);
        }
        escaped = c == '\\' && !escaped;
    }
    out.push(cell.trim().to_string());
    out
}

/// The alignments of a separator row, or `None` when `line` is not one.
fn separator(line: &str) -> Option<Vec<Align>> {
    if !line.trim_start().starts_with('|') {
        return None;
    }
    cells(line)
        .iter()
        .map(|c| {
            let (left, right) = (c.starts_with(':'), c.ends_with(':') && c.len() > 1);
            let dashes = c.trim_start_matches(':').trim_end_matches(':');
            (!dashes.is_empty() && dashes.chars().all(|d| d == '-')).then_some(match (left, right) {
                (true, true) => Align::Center,
                (true, false) => Align::Left,
                (false, true) => Align::Right,
                (false, false) => Align::Plain,
            })
        })
        .collect()
}

/// One table, its columns padded to equal widths (terminal columns, [`display_width`]) and
/// aligned as its separator row says.
fn pad_table(rows: &[Vec<String>], aligns: &[Align]) -> String {
    let columns = rows.iter().map(Vec::len).chain([aligns.len()]).max().unwrap_or(0);
    let mut widths = vec![3; columns];
    for row in rows {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(display_width(c));
        }
    }
    let align = |i: usize| aligns.get(i).copied().unwrap_or(Align::Plain);
    let line = |cells: Vec<String>| format!("| {} |\n", cells.join(" | "));
    let mut out = String::new();
    for (r, row) in rows.iter().enumerate() {
        let shown = (0..columns).map(|i| {
            let text = row.get(i).map_or("", String::as_str);
            let gap = widths[i].saturating_sub(display_width(text));
            match align(i) {
                Align::Right => format!("{}{text}", " ".repeat(gap)),
                Align::Center => format!("{}{text}{}", " ".repeat(gap / 2), " ".repeat(gap - gap / 2)),
                Align::Left | Align::Plain => format!("{text}{}", " ".repeat(gap)),
            }
        });
        out.push_str(&line(shown.collect()));
        if r == 0 {
            let dashes = (0..columns).map(|i| {
                let w = widths[i];
                match align(i) {
                    Align::Plain => "-".repeat(w),
                    Align::Left => format!(":{}", "-".repeat(w - 1)),
                    Align::Right => format!("{}:", "-".repeat(w - 1)),
                    Align::Center => format!(":{}:", "-".repeat(w - 2)),
                }
            });
            out.push_str(&line(dashes.collect()));
        }
    }
    out
}

/// `markdown` with every table's columns padded to equal widths, for a terminal: a table is a
/// header row, a separator row (`|---|--:|`, whose colons are kept and respected) and the rows
/// after it that start with `|`. Everything else is unchanged.
pub fn pad_tables(markdown: &str) -> String {
    let lines: Vec<&str> = markdown.split_inclusive('\n').collect();
    let mut out = String::with_capacity(markdown.len());
    let mut i = 0;
    while i < lines.len() {
        let head = lines[i];
        let aligns = head.trim_start().starts_with('|').then(|| lines.get(i + 1).and_then(|l| separator(l)));
        let Some(Some(aligns)) = aligns else {
            out.push_str(head);
            i += 1;
            continue;
        };
        let mut rows = vec![cells(head)];
        let mut j = i + 2;
        while j < lines.len() && lines[j].trim_start().starts_with('|') {
            rows.push(cells(lines[j]));
            j += 1;
        }
        let table = pad_table(&rows, &aligns);
        // (the last line of the text may have had no newline)
        if lines[j - 1].ends_with('\n') {
            out.push_str(&table);
        } else {
            out.push_str(table.trim_end_matches('\n'));
        }
        i = j;
    }
    out
}

/// The ANSI colour of a status word, or `None` for any other word: COMPLETE green; REJECTED,
/// FAILED and AUDIT_FAILED red; INCOMPLETE and WARNING yellow.
fn status_color(word: &str) -> Option<&'static str> {
    match word {
        "COMPLETE" => Some("\x1b[32m"),
        "REJECTED" | "FAILED" | "AUDIT_FAILED" => Some("\x1b[31m"),
        "INCOMPLETE" => Some("\x1b[33m"),
        "WARNING" => Some("\x1b[1;33m"),
        _ => None,
    }
}

/// `text` with its status words coloured for a terminal (ANSI codes): the whole words of
/// `status_color`, and a ratio's `faster` (green) or `slower` (red) where a ratio says it
/// (`1.39× faster`, `8 % slower`), not where the prose explains the words.
pub fn colorize(text: &str) -> String {
    const RESET: &str = "\x1b[0m";
    let mut out = String::with_capacity(text.len() + 64);
    let mut word = String::new();
    let mut before = ' ';
    let flush = |word: &mut String, out: &mut String, before: char| {
        let color = status_color(word).or(match word.as_str() {
            "faster" if before == '×' => Some("\x1b[32m"),
            "slower" if before == '%' => Some("\x1b[31m"),
            _ => None,
        });
        match color {
            Some(c) => out.push_str(&format!("{c}{word}{RESET}")),
            None => out.push_str(word),
        }
        word.clear();
    };
    let mut last = ' ';
    for c in text.chars() {
        if c.is_alphanumeric() || c == '_' {
            if word.is_empty() {
                before = last;
            }
            word.push(c);
        } else {
            flush(&mut word, &mut out, before);
            out.push(c);
            if !c.is_whitespace() {
                last = c;
            }
            continue;
        }
    }
    flush(&mut word, &mut out, before);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::energy::run::{INPUT_MISSING, S_OR_R_MISSING};

    #[test]
    fn wide_characters_take_two_columns() {
        assert_eq!(display_width("今日"), 4);
        assert_eq!(display_width("abc"), 3);
        assert_eq!(pad("今日", 6), "今日  ");
        assert_eq!(pad("ab", 4), "ab  ");
        assert_eq!(pad("abcdef", 4), "abcdef");
    }

    #[test]
    fn one_is_singular() {
        assert_eq!(count(1, "balanced cycle", "balanced cycles"), "1 balanced cycle");
        assert_eq!(count(0, "block", "blocks"), "0 blocks");
        assert_eq!(count(3, "balanced cycle", "balanced cycles"), "3 balanced cycles");
        assert_eq!(first_cycles(1), "first whole balanced cycle");
        assert_eq!(first_cycles(2), "first 2 whole balanced cycles");
    }

    #[test]
    fn numbers_read_with_their_decimals_or_n_a() {
        assert_eq!(num(Some(1.23456), 2), "1.23");
        assert_eq!(num(None, 2), "n/a");
        assert_eq!(ms(Some(0.0123456)), "12.346");
        assert_eq!(ms(None), "n/a");
        assert_eq!(csv_num(Some(0.5)), "0.5");
        assert_eq!(csv_num(None), "");
        // An empty mean's NaN (an arm that made no call) is missing, never printed as "NaN".
        assert_eq!(num(Some(f64::NAN), 1), "n/a");
        assert_eq!(ms(Some(f64::NAN)), "n/a");
        assert_eq!(num(Some(f64::INFINITY), 1), "n/a");
        assert_eq!(csv_num(Some(f64::NAN)), "");
    }

    #[test]
    fn csv_fields_are_quoted_when_needed() {
        assert_eq!(csv_field("a"), "a");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }

    #[test]
    fn missing_values_are_grouped_by_reason_without_repeats() {
        let none = "no power samples";
        let arms = vec![
            // A field listed twice for one arm (totals and intervals) names the arm once.
            ("a", vec![("mean_power_w", none), ("mean_power_w", none), ("energy_gain", S_OR_R_MISSING)]),
            ("b", vec![("mean_power_w", none), ("energy_gain", S_OR_R_MISSING), ("energy_gain", none)]),
        ];
        let md = missing_markdown(&arms);
        assert_eq!(
            md,
            "Missing values (n/a):\n\n\
             - S and R are missing: energy_gain (arm a)\n\
             - no power samples: mean_power_w (all arms)\n\
             - no power samples: energy_gain (arm b)\n\n"
        );
        // A generic reason alone stays: the field is still explained.
        let md = missing_markdown(&[("x", vec![("power_ratio", INPUT_MISSING)])]);
        assert_eq!(md, "Missing values (n/a):\n\n- a figure it needs is missing: power_ratio (arm x)\n\n");
        assert_eq!(missing_markdown(&[("x", vec![])]), "");
    }
    /// A hand-written table: widths from the widest cell (wide characters count two columns),
    /// alignment markers kept and respected, a missing cell filled, the text around untouched.
    #[test]
    fn tables_are_padded_to_equal_widths_for_a_terminal() {
        let md = "# Title\n\n| arm | t (ms) | note |\n|---|--:|:-:|\n| f32 | 7.8 | ok |\n| 今日 | 12.345 |\n\nafter | not a table\n";
        let padded = pad_tables(md);
        assert_eq!(
            padded,
            "# Title\n\n| arm  | t (ms) | note |\n| ---- | -----: | :--: |\n| f32  |    7.8 |  ok  |\n| 今日 | 12.345 |      |\n\nafter | not a table\n"
        );
        // A left marker, an escaped pipe, and a table at the very end without a newline.
        assert_eq!(
            pad_tables("| a\\|b | c |\n|:--|---|\n| x | yy |"),
            "| a\\|b | c   |\n| :--- | --- |\n| x    | yy  |"
        );
        // No separator row: not a table.
        assert_eq!(pad_tables("| a | b |\n| c | d |\n"), "| a | b |\n| c | d |\n");
        assert_eq!(Style::default().apply(md), md, "plain Markdown unless asked");
    }

    #[test]
    fn status_words_and_ratio_words_are_coloured() {
        assert_eq!(colorize("## Energy run: COMPLETE"), "## Energy run: \x1b[32mCOMPLETE\x1b[0m");
        assert_eq!(colorize("**INCOMPLETE**: x"), "**\x1b[33mINCOMPLETE\x1b[0m**: x");
        assert_eq!(colorize("REJECTED, WARNING: y"), "\x1b[31mREJECTED\x1b[0m, \x1b[1;33mWARNING\x1b[0m: y");
        assert_eq!(
            colorize("1.39× faster | 0.92× = 8 % slower"),
            "1.39× \x1b[32mfaster\x1b[0m | 0.92× = 8 % \x1b[31mslower\x1b[0m"
        );
        // the prose that explains the words, and words that merely contain them, stay plain
        let plain = "reads faster or slower; COMPLETED incomplete WARNINGS";
        assert_eq!(colorize(plain), plain);
        // padding first, so the codes never widen a column
        let both = Style { pad: true, color: true }.apply("| s |\n|---|\n| FAILED |\n");
        assert_eq!(both, "| s      |\n| ------ |\n| \x1b[31mFAILED\x1b[0m |\n");
    }
}
