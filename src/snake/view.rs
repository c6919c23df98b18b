//! The Snake terminal view (docs/snake.md §6.3) as pure drawing: board, move probabilities, shield,
//! risk and food bars, latency, score, and the key bindings, laid out into a ratatui
//! [`Buffer`]; the keys the view reacts to; and the [`Screen`] a live session or a replay
//! shows its frames on.
//!
//! [`render`] draws into a plain [`Buffer`], so `snake bench` can render the same frame into
//! memory and discard it ([`OffscreenCanvas`]); [`draw_frame`] is what the terminal draws. The
//! terminal itself (raw mode, alternate screen, reading the keyboard) is `snake play`'s and
//! `snake replay`'s, in `src/commands/snake/tui.rs`.

use std::io;
use std::time::Duration;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};

use crate::snake::game::{Cell, Direction, Game, Snapshot};
use crate::snake::rate_search::FrameInfo;
use crate::snake::Decision;

/// The key line shown in the footer (and documented in docs/snake.md).
pub const PLAY_KEYS: &str = "SPACE pause   ↑/+ faster   ↓/- slower   R reset   Q quit";
/// The key line of a replay.
pub const REPLAY_KEYS: &str = "SPACE pause   ↑/+ faster   ↓/- slower   Q quit";

const HEAD: Color = Color::Rgb(0xdc, 0xff, 0xf0);
const AMBER: Color = Color::Rgb(0xff, 0xb0, 0x20);
const RED: Color = Color::Rgb(0xff, 0x50, 0x50);
const CYAN: Color = Color::Rgb(0x40, 0xd0, 0xe0);
const DIM: Color = Color::Rgb(0x50, 0x58, 0x60);
const TEXT: Color = Color::Rgb(0xd0, 0xd8, 0xe0);
const BAR_CELLS: usize = 18;

/// Canvas size for a board: `(max(104, 2w+50), max(35, h+19))` columns × rows.
pub fn canvas_size(width: usize, height: usize) -> (u16, u16) {
    let cols = 104usize.max(2 * width + 50);
    let rows = 35usize.max(height + 19);
    (u16::try_from(cols).unwrap_or(u16::MAX), u16::try_from(rows).unwrap_or(u16::MAX))
}

/// The board part of a frame, borrowed from a live game or a recorded snapshot.
#[derive(Debug, Clone, Copy)]
pub struct BoardView<'a> {
    /// Columns.
    pub width: usize,
    /// Rows.
    pub height: usize,
    /// Body, head first, as up to two slices.
    pub body: (&'a [Cell], &'a [Cell]),
    /// Food cell.
    pub food: Option<Cell>,
    /// Score.
    pub score: usize,
    /// Length.
    pub length: usize,
    /// Alive.
    pub alive: bool,
    /// Board cleared.
    pub won: bool,
}

impl<'a> BoardView<'a> {
    /// From a live game (no copy of the body).
    pub fn from_game(game: &'a Game) -> Self {
        Self {
            width: game.width(),
            height: game.height(),
            body: game.body().as_slices(),
            food: game.food(),
            score: game.score(),
            length: game.body().len(),
            alive: game.alive(),
            won: game.won(),
        }
    }

    /// From a recorded snapshot.
    pub fn from_snapshot(s: &'a Snapshot) -> Self {
        Self {
            width: s.width,
            height: s.height,
            body: (&s.body, &[]),
            food: s.food,
            score: s.score,
            length: s.length,
            alive: s.alive,
            won: s.won,
        }
    }
}

/// Everything one frame shows.
#[derive(Debug, Clone, Copy)]
pub struct View<'a> {
    /// The board before the executed move.
    pub board: BoardView<'a>,
    /// The decision made on it, if any yet.
    pub decision: Option<&'a Decision>,
    /// Header state label (LIVE, PAUSED, GAME OVER, BOARD CLEAR, RECORDED RUN · 1×).
    pub state: &'a str,
    /// Round number.
    pub round: u64,
    /// Best score so far.
    pub best: usize,
    /// Cumulative shield interventions.
    pub interventions: u64,
    /// Shield on.
    pub guarded: bool,
    /// Engine label.
    pub engine: &'a str,
    /// Decisions per second over the last frames.
    pub decisions_per_second: Option<f64>,
    /// Pacing target, `None` when unpaced.
    pub target_fps: Option<f64>,
    /// Seconds since the run began (footer clock).
    pub elapsed_s: f64,
    /// Footer key line.
    pub keys: &'a str,
}

/// The label of a live frame.
pub fn state_label(board: &BoardView<'_>, paused: bool) -> &'static str {
    if board.won {
        "BOARD CLEAR"
    } else if !board.alive {
        "GAME OVER"
    } else if paused {
        "PAUSED"
    } else {
        "LIVE"
    }
}

fn bar(value: f64, cells: usize) -> String {
    let filled = if value.is_finite() { (value.clamp(0.0, 1.0) * cells as f64).round() as usize } else { 0 };
    let mut s = String::with_capacity(cells * 3);
    for i in 0..cells {
        s.push(if i < filled { '█' } else { '░' });
    }
    s
}

fn body_colour(index: usize, length: usize) -> Color {
    if index == 0 {
        return HEAD;
    }
    let t = index as f64 / length.max(2) as f64;
    let mix = |a: f64, b: f64| (a + (b - a) * t).round() as u8;
    Color::Rgb(mix(90.0, 20.0), mix(230.0, 110.0), mix(140.0, 60.0))
}

fn put(buf: &mut Buffer, x: usize, y: usize, text: &str, style: Style) {
    let area = buf.area;
    let (Ok(x), Ok(y)) = (u16::try_from(x), u16::try_from(y)) else { return };
    if x < area.right() && y < area.bottom() {
        buf.set_stringn(x, y, text, usize::from(area.right() - x), style);
    }
}

/// Draw one frame into `buf` (its area should be at least [`canvas_size`]).
pub fn render(view: &View<'_>, buf: &mut Buffer) {
    let text = Style::default().fg(TEXT);
    let bold = text.add_modifier(Modifier::BOLD);
    let dim = Style::default().fg(DIM);
    let b = &view.board;
    let (cols, rows) = canvas_size(b.width, b.height);
    let (cols, rows) = (usize::from(cols), usize::from(rows));
    put(buf, 1, 0, "LAYA SNAKE", bold);
    let label_style = match view.state {
        "LIVE" => bold.fg(Color::Green),
        "GAME OVER" => bold.fg(RED),
        _ => bold.fg(AMBER),
    };
    put(buf, 13, 0, view.state, label_style);
    put(buf, 13 + view.state.chars().count() + 2, 0, &format!("round {}", view.round), dim);
    // Board with a frame; every cell is two columns wide.
    let (x0, y0) = (2usize, 2usize);
    let inner = 2 * b.width;
    put(buf, x0 - 1, y0 - 1, &format!("┌{}┐", "─".repeat(inner)), dim);
    put(buf, x0 - 1, y0 + b.height, &format!("└{}┘", "─".repeat(inner)), dim);
    for y in 0..b.height {
        put(buf, x0 - 1, y0 + y, "│", dim);
        put(buf, x0 + inner, y0 + y, "│", dim);
        for x in 0..b.width {
            put(buf, x0 + 2 * x, y0 + y, "· ", dim);
        }
    }
    let cell_at = |c: Cell| -> Option<(usize, usize)> {
        let (x, y) = (usize::try_from(c.x).ok()?, usize::try_from(c.y).ok()?);
        (x < b.width && y < b.height).then_some((x0 + 2 * x, y0 + y))
    };
    if let Some((x, y)) = b.food.and_then(cell_at) {
        put(buf, x, y, "● ", Style::default().fg(AMBER));
    }
    for (i, &c) in b.body.0.iter().chain(b.body.1).enumerate() {
        if let Some((x, y)) = cell_at(c) {
            put(buf, x, y, "██", Style::default().fg(body_colour(i, b.length)));
        }
    }
    // Under the board: counters and the board-fill bar.
    let under = y0 + b.height + 2;
    put(
        buf,
        x0,
        under,
        &format!("SCORE {:03}   LENGTH {:03}   BEST {:03}", b.score, b.length, view.best),
        bold,
    );
    let fill = b.length as f64 / (b.width * b.height).max(1) as f64;
    put(buf, x0, under + 1, &format!("BOARD FILL {} {:5.1}%", bar(fill, BAR_CELLS), fill * 100.0), text);
    // Right panel.
    let px = 58usize.max(2 * b.width + 10);
    put(buf, px, 2, "MOVE PROBABILITIES", bold);
    if let Some(d) = view.decision {
        for (i, dir) in Direction::ALL.iter().enumerate() {
            let p = d.probabilities.get(*dir);
            let mark = if *dir == d.proposed { "›" } else { " " };
            let style = if *dir == d.executed { bold } else { text };
            put(buf, px, 3 + i, &format!("{mark} {:<5} {} {p:.2}", dir.as_str(), bar(p, BAR_CELLS)), style);
        }
        put(buf, px, 8, &format!("EXECUTING {}", d.executed.as_str()), bold);
        if d.intervened {
            put(buf, px + 11 + d.executed.as_str().len(), 8, "SHIELD", bold.fg(AMBER));
        }
        let risk_colour = if d.dead_end_risk < 0.5 { AMBER } else { RED };
        let risk = format!("DEAD-END RISK  {} {:.2}", bar(d.dead_end_risk, BAR_CELLS), d.dead_end_risk);
        put(buf, px, 10, &risk, Style::default().fg(risk_colour));
        let food = format!("FOOD REACHABLE {} {:.2}", bar(d.food_reachable, BAR_CELLS), d.food_reachable);
        put(buf, px, 11, &food, Style::default().fg(CYAN));
        put(buf, px, 13, &format!("decision      {:8.2} ms", d.decision_ms), text);
        put(buf, px, 14, &format!("model call    {:8.2} ms  (3 questions)", d.inference_ms), text);
        put(
            buf,
            px,
            16,
            &format!("input tokens  {:5}   output tokens {}", d.input_tokens, d.output_tokens),
            dim,
        );
    } else {
        put(buf, px, 3, "waiting for the first decision", dim);
    }
    let rate = view.decisions_per_second.map_or("   –".to_string(), |r| format!("{r:6.1}"));
    let target = view.target_fps.map_or("uncapped".to_string(), |f| format!("target {f:.0}/s"));
    put(buf, px, 15, &format!("decisions/s   {rate}    {target}"), text);
    put(buf, px, 18, "NETWORK OFFLINE", dim);
    put(buf, px, 19, view.engine, dim);
    let shield = if view.guarded { "Laya + cycle safety" } else { "Laya · shield OFF" };
    put(buf, px, 21, shield, if view.guarded { bold } else { bold.fg(AMBER) });
    put(buf, px, 22, &format!("Shield interventions  {:04}", view.interventions), text);
    // Footer: keys and an MM:SS clock.
    let footer = rows.saturating_sub(1);
    put(buf, 1, footer, view.keys, dim);
    let secs = view.elapsed_s.max(0.0) as u64;
    put(buf, cols.saturating_sub(6), footer, &format!("{:02}:{:02}", secs / 60, secs % 60), text);
}

/// Draw a frame into a terminal frame; when the frame is smaller than the canvas, draw the
/// resize notice instead and return `false`.
pub fn draw_frame(view: &View<'_>, frame: &mut ratatui::Frame<'_>) -> bool {
    let (cols, rows) = canvas_size(view.board.width, view.board.height);
    let area = frame.area();
    if area.width < cols || area.height < rows {
        let notice = format!(
            "Resize terminal to at least {cols} columns × {rows} rows. The game is waiting. Q quits."
        );
        frame.buffer_mut().set_stringn(0, 0, notice, usize::from(area.width), Style::default());
        return false;
    }
    render(view, frame.buffer_mut());
    true
}

/// A key the view reacts to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    /// `q`, `Q` or Ctrl-C.
    Quit,
    /// Space.
    Pause,
    /// ↑ or `+`.
    Faster,
    /// ↓ or `-`.
    Slower,
    /// `r`, `R`.
    Reset,
}

/// Play speed after a key: `fps ± 2`, within 1..=240.
pub fn adjust_fps(fps: f64, key: Key) -> f64 {
    match key {
        Key::Faster => (fps + 2.0).min(240.0),
        Key::Slower => (fps - 2.0).max(1.0),
        _ => fps,
    }
}

/// Where a live session or a replay shows its frames and reads its keys: the terminal in
/// `snake play` and `snake replay`.
pub trait Screen {
    /// Whether the screen holds the canvas of a board.
    fn fits(&self, width: usize, height: usize) -> bool;

    /// Draw a frame; when the screen is smaller than the canvas, draw the resize notice
    /// instead and return `false`.
    fn draw(&mut self, view: &View<'_>) -> io::Result<bool>;

    /// Keys pressed until `timeout` passes (returns at the first key, or at once for zero).
    fn keys(&mut self, timeout: Duration) -> io::Result<Vec<Key>>;
}

/// A frame rendered into memory and discarded (the rate benchmark's render cost).
pub struct OffscreenCanvas {
    buffer: Buffer,
}

impl OffscreenCanvas {
    /// A truecolor cell buffer of the canvas size for a board.
    pub fn new(width: usize, height: usize) -> Self {
        let (cols, rows) = canvas_size(width, height);
        Self { buffer: Buffer::empty(Rect::new(0, 0, cols, rows)) }
    }

    /// Clear the buffer and draw `view` into it.
    pub fn draw(&mut self, view: &View<'_>) {
        self.buffer.reset();
        render(view, &mut self.buffer);
    }

    /// Draw the live frame of a rate-benchmark tick of `engine` (`backend · precision`).
    pub fn draw_tick(&mut self, game: &Game, decision: &Decision, info: &FrameInfo, engine: &str) {
        self.draw(&View {
            board: BoardView::from_game(game),
            decision: Some(decision),
            state: "LIVE",
            round: 1,
            best: game.score(),
            interventions: info.interventions,
            guarded: info.guarded,
            engine,
            decisions_per_second: None,
            target_fps: info.target_fps,
            elapsed_s: info.elapsed_s,
            keys: PLAY_KEYS,
        });
    }

    /// The drawn cells, one string per row (for tests).
    #[cfg(test)]
    pub fn lines(&self) -> Vec<String> {
        let area = self.buffer.area;
        (0..area.height)
            .map(|y| (0..area.width).map(|x| self.buffer[(x, y)].symbol().to_string()).collect())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    use super::*;
    use crate::snake::game::Game;
    use crate::snake::policy::MoveProbabilities;

    fn decision() -> Decision {
        Decision {
            probabilities: MoveProbabilities::from_array([0.9, 0.05, 0.0, 0.05]),
            proposed: Direction::Up,
            executed: Direction::Down,
            safe_directions: vec![Direction::Down, Direction::Right],
            intervened: true,
            dead_end_risk: 0.03,
            food_reachable: 0.5,
            inference_ms: 1.5,
            decision_ms: 1.75,
            input_tokens: 93,
            output_tokens: 0,
            safe_count: 2,
            planner_best: Some(Direction::Down),
        }
    }

    fn live_view<'a>(game: &'a Game, d: &'a Decision) -> View<'a> {
        View {
            board: BoardView::from_game(game),
            decision: Some(d),
            state: "LIVE",
            round: 1,
            best: 3,
            interventions: 12,
            guarded: true,
            engine: "portable · f32",
            decisions_per_second: Some(48.5),
            target_fps: Some(12.0),
            elapsed_s: 75.0,
            keys: PLAY_KEYS,
        }
    }

    #[test]
    fn canvas_is_104_by_35_for_the_default_board_and_grows_with_it() {
        assert_eq!(canvas_size(24, 16), (104, 35));
        assert_eq!(canvas_size(40, 30), (130, 49));
    }

    #[test]
    fn frame_shows_board_probabilities_shield_and_counters() {
        let game = Game::with_seed(7);
        let d = decision();
        let view = live_view(&game, &d);
        let mut canvas = OffscreenCanvas::new(24, 16);
        canvas.draw(&view);
        let lines = canvas.lines();
        assert_eq!((lines.len(), lines[0].chars().count()), (35, 104));
        let all = lines.join("\n");
        // Head at (12,8): row 2+8, column 2+24; food of seed 7 at (20,7).
        assert_eq!(&lines[10].chars().skip(26).take(2).collect::<String>(), "██");
        assert_eq!(&lines[9].chars().skip(42).take(1).collect::<String>(), "●");
        for needle in [
            "LIVE",
            "› UP",
            "0.90",
            "EXECUTING DOWN SHIELD",
            "DEAD-END RISK",
            "FOOD REACHABLE",
            "SCORE 000   LENGTH 006   BEST 003",
            "Shield interventions  0012",
            "Laya + cycle safety",
            "NETWORK OFFLINE",
            "01:15",
            "R reset",
        ] {
            assert!(all.contains(needle), "frame lacks {needle:?}:\n{all}");
        }
    }

    #[test]
    fn a_terminal_frame_is_the_canvas_or_the_resize_notice() {
        let game = Game::with_seed(7);
        let d = decision();
        let view = live_view(&game, &d);
        let mut small = Terminal::new(TestBackend::new(60, 10)).unwrap();
        let mut fits = true;
        small.draw(|f| fits = draw_frame(&view, f)).unwrap();
        assert!(!fits);
        let top: String = (0..60).map(|x| small.backend().buffer()[(x, 0)].symbol().to_string()).collect();
        assert_eq!(top, "Resize terminal to at least 104 columns × 35 rows. The game ");
        let mut big = Terminal::new(TestBackend::new(104, 35)).unwrap();
        big.draw(|f| fits = draw_frame(&view, f)).unwrap();
        assert!(fits);
        let mut canvas = OffscreenCanvas::new(24, 16);
        canvas.draw(&view);
        assert_eq!(big.backend().buffer(), &canvas.buffer);
    }

    #[test]
    fn speed_keys_step_by_two_within_bounds() {
        assert_eq!(adjust_fps(12.0, Key::Faster), 14.0);
        assert_eq!(adjust_fps(239.0, Key::Faster), 240.0);
        assert_eq!(adjust_fps(2.0, Key::Slower), 1.0);
        assert_eq!(adjust_fps(12.0, Key::Pause), 12.0);
    }

    #[test]
    fn labels_follow_the_game_state() {
        let game = Game::with_seed(7);
        let b = BoardView::from_game(&game);
        assert_eq!(state_label(&b, false), "LIVE");
        assert_eq!(state_label(&b, true), "PAUSED");
        let dead = BoardView { alive: false, ..b };
        assert_eq!(state_label(&dead, false), "GAME OVER");
    }
}
