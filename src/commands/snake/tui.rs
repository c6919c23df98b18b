//! The Snake terminal: the guard that takes over the terminal and restores it on every exit
//! path (normal return, error, Ctrl-C, panic), the key reader, and the [`Screen`] that
//! `snake play` and `snake replay` draw on. What a frame shows is `crate::snake::view`.

use std::io::{self, Stdout};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;
use std::time::Duration;

use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::crossterm::{cursor, execute, terminal};
use ratatui::Terminal;

use crate::snake::view::{canvas_size, draw_frame, Key, Screen, View};

fn key_of(code: KeyCode, modifiers: KeyModifiers) -> Option<Key> {
    match code {
        KeyCode::Char('c') | KeyCode::Char('C') if modifiers.contains(KeyModifiers::CONTROL) => {
            Some(Key::Quit)
        }
        KeyCode::Char('q') | KeyCode::Char('Q') | KeyCode::Esc => Some(Key::Quit),
        KeyCode::Char(' ') => Some(Key::Pause),
        KeyCode::Up | KeyCode::Char('+') | KeyCode::Char('=') => Some(Key::Faster),
        KeyCode::Down | KeyCode::Char('-') => Some(Key::Slower),
        KeyCode::Char('r') | KeyCode::Char('R') => Some(Key::Reset),
        _ => None,
    }
}

static ALT_SCREEN: AtomicBool = AtomicBool::new(false);
static RAW_MODE: AtomicBool = AtomicBool::new(false);
static PANIC_HOOK: Once = Once::new();

/// Leave raw mode and the alternate screen and show the cursor; safe to call more than once.
fn restore_terminal() {
    if RAW_MODE.swap(false, Ordering::SeqCst) {
        let _ = terminal::disable_raw_mode();
    }
    let mut out = io::stdout();
    if ALT_SCREEN.swap(false, Ordering::SeqCst) {
        let _ = execute!(out, terminal::LeaveAlternateScreen);
    }
    let _ = execute!(out, cursor::Show);
}

/// The live terminal: raw mode, optional alternate screen; restored on drop and on panic.
pub struct Tui {
    terminal: Terminal<CrosstermBackend<Stdout>>,
}

impl Tui {
    /// Take over the terminal.
    pub fn enter(alt_screen: bool) -> io::Result<Self> {
        PANIC_HOOK.call_once(|| {
            let previous = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                restore_terminal();
                previous(info);
            }));
        });
        terminal::enable_raw_mode()?;
        RAW_MODE.store(true, Ordering::SeqCst);
        let mut out = io::stdout();
        if alt_screen {
            ALT_SCREEN.store(true, Ordering::SeqCst);
            execute!(out, terminal::EnterAlternateScreen)?;
        }
        execute!(out, cursor::Hide, terminal::Clear(terminal::ClearType::All))?;
        let terminal = Terminal::new(CrosstermBackend::new(out))?;
        Ok(Self { terminal })
    }
}

impl Screen for Tui {
    /// Whether the terminal holds the canvas of a board (an unreadable size counts as fitting).
    fn fits(&self, width: usize, height: usize) -> bool {
        let (cols, rows) = canvas_size(width, height);
        terminal::size().map_or(true, |(c, r)| c >= cols && r >= rows)
    }

    /// Draw a frame; when the terminal is smaller than the canvas, draw the resize notice
    /// instead and return `false`.
    fn draw(&mut self, view: &View<'_>) -> io::Result<bool> {
        let mut fits = true;
        self.terminal.draw(|frame| fits = draw_frame(view, frame))?;
        Ok(fits)
    }

    /// Keys pressed until `timeout` passes (returns at the first key, or at once for zero).
    fn keys(&mut self, timeout: Duration) -> io::Result<Vec<Key>> {
        let mut keys = Vec::new();
        let mut wait = timeout;
        while event::poll(wait)? {
            if let Event::Key(k) = event::read()? {
                if k.kind != KeyEventKind::Release {
                    keys.extend(key_of(k.code, k.modifiers));
                }
            }
            wait = Duration::ZERO;
        }
        Ok(keys)
    }
}

impl Drop for Tui {
    fn drop(&mut self) {
        restore_terminal();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_map_to_the_view_keys() {
        assert_eq!(key_of(KeyCode::Char('c'), KeyModifiers::CONTROL), Some(Key::Quit));
        assert_eq!(key_of(KeyCode::Char('R'), KeyModifiers::SHIFT), Some(Key::Reset));
        assert_eq!(key_of(KeyCode::Char('x'), KeyModifiers::NONE), None);
    }
}
