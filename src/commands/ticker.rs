//! Progress through a fixed number of steps for commands without blocks (`convert-check`'s
//! questions): a bar on a terminal; where stderr is not a terminal (a CI log), a plain line at
//! most every [`PLAIN_EVERY`], so a long run shows it is alive without flooding a short one.

use std::cell::RefCell;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// The shortest time between two plain lines.
pub(crate) const PLAIN_EVERY: Duration = Duration::from_secs(10);

/// `h:mm:ss`.
pub(crate) fn clock_text(d: Duration) -> String {
    let s = d.as_secs();
    format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// ` · about h:mm:ss left` after `done` of `total` steps in `elapsed`, at the mean pace of the
/// steps done so far; empty before the first step and after the last.
pub(crate) fn time_left(done: u64, total: u64, elapsed: Duration) -> String {
    if done == 0 || done >= total {
        return String::new();
    }
    let per_step = elapsed.as_secs_f64() / done as f64;
    format!(" · about {} left", clock_text(Duration::from_secs_f64(per_step * (total - done) as f64)))
}

/// The plain line after `done` of `total` steps in `elapsed`, with the time left.
pub(crate) fn plain_step_line(what: &str, unit: &str, done: u64, total: u64, elapsed: Duration) -> String {
    format!(
        "{what}: {done}/{total} {unit} · {} elapsed{}",
        clock_text(elapsed),
        time_left(done, total, elapsed)
    )
}

enum Show {
    Bar(ProgressBar),
    Plain { last: Instant },
}

/// Progress through `total` steps; `at(done)` may be called as often as wanted.
pub(crate) struct Ticker {
    what: &'static str,
    unit: &'static str,
    total: u64,
    start: Instant,
    show: RefCell<Show>,
}

impl Ticker {
    pub(crate) fn new(what: &'static str, unit: &'static str, total: u64) -> Self {
        let start = Instant::now();
        let show = if std::io::stderr().is_terminal() {
            let bar = ProgressBar::new(total);
            let template = format!(
                "{{spinner}} [{{bar:30}}] {{pos}}/{{len}} {unit} · {{elapsed_precise}} elapsed · ETA {{eta}}"
            );
            bar.set_style(
                ProgressStyle::with_template(&template).unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            bar.enable_steady_tick(Duration::from_millis(200));
            Show::Bar(bar)
        } else {
            Show::Plain { last: start }
        };
        Self { what, unit, total, start, show: RefCell::new(show) }
    }

    /// `done` steps are done (takes `&self`, so a `Fn` closure can call it).
    pub(crate) fn at(&self, done: u64) {
        match &mut *self.show.borrow_mut() {
            Show::Bar(bar) => bar.set_position(done),
            Show::Plain { last } => {
                if last.elapsed() >= PLAIN_EVERY && done < self.total {
                    *last = Instant::now();
                    eprintln!(
                        "{}",
                        plain_step_line(self.what, self.unit, done, self.total, self.start.elapsed())
                    );
                }
            }
        }
    }

    pub(crate) fn finish(&self) {
        if let Show::Bar(bar) = &*self.show.borrow() {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_lines_estimate_the_time_left_from_the_steps_done() {
        // 12 of 67 in 50 s: 4.1667 s a step, 55 left, 229.2 s = 0:03:49.
        assert_eq!(
            plain_step_line("convert-check", "questions", 12, 67, Duration::from_secs(50)),
            "convert-check: 12/67 questions · 0:00:50 elapsed · about 0:03:49 left"
        );
        assert_eq!(
            plain_step_line("convert-check", "questions", 0, 67, Duration::from_millis(10_400)),
            "convert-check: 0/67 questions · 0:00:10 elapsed"
        );
        assert_eq!(clock_text(Duration::from_secs(3600 * 2 + 61)), "2:01:01");
    }
}
