//! The number and table formatting every report shares: decimals or `n/a`, milliseconds, CSV
//! cells, terminal widths, counted nouns, and the "Missing values" list of the Markdown
//! reports.

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
}
