//! Planner features: per-move legality, cycle advance and safety, the planner's preferred move,
//! and flood-fill reachability (docs/snake.md §2). Deterministic; no RNG.

use std::collections::VecDeque;

use super::game::{Cell, DeathReason, Direction, Game, Legality};

/// Why a move is or is not safe (`MoveInfo.reason` in the reference).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MoveReason {
    /// Legal and safe (`"legal"`).
    Legal,
    /// Illegal: the move would kill the snake.
    Blocked(DeathReason),
    /// Legal, but it passes the tail along the cycle (`"would cross the tail"`).
    WouldCrossTail,
    /// Legal, but it jumps past the food or stands still (`"would skip the food on the safe route"`).
    WouldSkipFood,
}

impl MoveReason {
    /// The reference's reason string.
    pub fn as_str(self) -> &'static str {
        match self {
            MoveReason::Legal => "legal",
            MoveReason::Blocked(reason) => reason.as_str(),
            MoveReason::WouldCrossTail => "would cross the tail",
            MoveReason::WouldSkipFood => "would skip the food on the safe route",
        }
    }
}

/// The planner's view of one move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MoveInfo {
    /// The move.
    pub direction: Direction,
    /// The cell it enters (may be off the board).
    pub target: Cell,
    /// Passes the legality rules (§1.3).
    pub legal: bool,
    /// Legal and keeps the snake on its cycle arc without skipping the food.
    pub safe: bool,
    /// Forward cycle distance from the head to the target (0 off the board).
    pub advance: usize,
    /// Why it is (un)safe.
    pub reason: MoveReason,
    /// The target is the food.
    pub eats: bool,
}

/// All planner features of one game state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Features {
    /// One entry per direction in canonical order; empty when the game is finished.
    pub moves: Vec<MoveInfo>,
    /// Forward cycle distance head → tail (`None` when finished).
    pub tail_distance: Option<usize>,
    /// Forward cycle distance head → food (`None` when finished).
    pub food_distance: Option<usize>,
    /// Safe directions in canonical order.
    pub safe: Vec<Direction>,
    /// The safe move with the largest advance (`"NONE"` in the reference when there is none).
    pub planner_best: Option<Direction>,
    /// The food cell is reachable from the head through empty cells.
    pub food_reachable: bool,
    /// Cells reached by the flood fill, the head included.
    pub open_cells: usize,
    /// Snake length.
    pub length: usize,
}

impl Features {
    /// Compute every feature of `game` (§2).
    pub fn compute(game: &Game) -> Self {
        let (moves, tail_distance, food_distance) = match moves(game) {
            Some((moves, tail, food)) => (moves, Some(tail), Some(food)),
            None => (Vec::new(), None, None),
        };
        let safe: Vec<Direction> = moves.iter().filter(|m| m.safe).map(|m| m.direction).collect();
        // Advances of distinct targets are distinct, so the maximum is unique; `max_by_key`
        // would keep the last of equal keys, so fold explicitly to keep the first like Python.
        let planner_best = moves
            .iter()
            .filter(|m| m.safe)
            .fold(None::<&MoveInfo>, |best, m| match best {
                Some(b) if b.advance >= m.advance => Some(b),
                _ => Some(m),
            })
            .map(|m| m.direction);
        let (food_reachable, open_cells) = food_reachability(game);
        Self {
            moves,
            tail_distance,
            food_distance,
            safe,
            planner_best,
            food_reachable,
            open_cells,
            length: game.body().len(),
        }
    }

    /// Number of safe moves.
    pub fn safe_count(&self) -> usize {
        self.safe.len()
    }

    /// Whether `direction` is safe.
    pub fn is_safe(&self, direction: Direction) -> bool {
        self.safe.contains(&direction)
    }

    /// The planner's preferred move as the reference names it (`"NONE"` if no move is safe).
    pub fn planner_best_name(&self) -> &'static str {
        self.planner_best.map_or("NONE", Direction::as_str)
    }
}

/// Per-move features plus tail and food distances, or `None` for a finished game.
fn moves(game: &Game) -> Option<(Vec<MoveInfo>, usize, usize)> {
    if game.finished() {
        return None;
    }
    let board = game.board();
    let cap = game.capacity();
    let head_index = board.cycle_index(game.head())?;
    let forward = |index: usize| (index + cap - head_index) % cap;
    let tail_distance = forward(board.cycle_index(game.tail())?);
    let food_distance = forward(board.cycle_index(game.food()?)?);
    let moves = Direction::ALL
        .into_iter()
        .map(|direction| {
            let target = game.target(direction);
            let legality = game.legal_reason(direction);
            let legal = legality == Legality::Legal;
            let advance = forward(board.cycle_index(target).unwrap_or(head_index));
            let eats = Some(target) == game.food();
            let mut safe = legal;
            let mut reason = match legality {
                Legality::Legal => MoveReason::Legal,
                Legality::Blocked(r) => MoveReason::Blocked(r),
            };
            if safe && (advance > tail_distance || (advance == tail_distance && eats)) {
                safe = false;
                reason = MoveReason::WouldCrossTail;
            }
            if safe && (advance == 0 || advance > food_distance) {
                safe = false;
                reason = MoveReason::WouldSkipFood;
            }
            MoveInfo { direction, target, legal, safe, advance, reason, eats }
        })
        .collect();
    Some((moves, tail_distance, food_distance))
}

/// Flood fill from the head over empty cells; every body cell but the head (the tail included)
/// blocks. Returns (food visited, cells visited including the head).
pub fn food_reachability(game: &Game) -> (bool, usize) {
    let board = game.board();
    let head = game.head();
    let width = game.width();
    let slot = |c: Cell| c.y as usize * width + c.x as usize;
    let mut visited = vec![false; game.capacity()];
    visited[slot(head)] = true;
    let mut count = 1usize;
    let mut queue = VecDeque::from([head]);
    while let Some(cell) = queue.pop_front() {
        for direction in Direction::ALL {
            let next = cell.step(direction);
            if board.contains(next) && !game.occupies(next) && !visited[slot(next)] {
                visited[slot(next)] = true;
                count += 1;
                queue.push_back(next);
            }
        }
    }
    let reachable = game.food().is_some_and(|food| visited[slot(food)]);
    (reachable, count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_101_tick_0_matches_worked_example() {
        let game = Game::with_seed(101);
        let f = Features::compute(&game);
        assert_eq!(game.board().cycle_index(game.head()), Some(196));
        assert_eq!(f.tail_distance, Some(379));
        assert_eq!(f.food_distance, Some(107));
        let up = f.moves[0];
        assert!(up.legal && !up.safe);
        assert_eq!(up.advance, 361);
        assert_eq!(up.reason.as_str(), "would skip the food on the safe route");
        let down = f.moves[1];
        assert!(down.safe);
        assert_eq!(down.advance, 23);
        assert_eq!(f.moves[2].reason.as_str(), "reverse");
        assert!(!f.moves[2].legal);
        assert!(f.moves[3].safe);
        assert_eq!(f.moves[3].advance, 1);
        assert_eq!(f.planner_best, Some(Direction::Down));
        assert_eq!(f.safe, vec![Direction::Down, Direction::Right]);
        assert!(f.food_reachable);
        assert_eq!(f.open_cells, 379);
    }

    #[test]
    fn finished_game_has_no_moves_and_no_best() {
        let mut game = Game::new(4, 4, 7, 2).unwrap();
        while !game.finished() {
            game.step(Direction::Up).unwrap();
        }
        let f = Features::compute(&game);
        assert!(f.moves.is_empty());
        assert_eq!(f.planner_best_name(), "NONE");
        assert_eq!(f.tail_distance, None);
        assert_eq!(f.safe_count(), 0);
    }

    #[test]
    fn flood_fill_treats_the_tail_as_blocked() {
        // Food in the corner (5,0), walled in by (4,0) and the tail (5,1).
        let mut game = Game::new(6, 6, 0, 2).unwrap();
        let cells = |v: &[(i32, i32)]| v.iter().map(|&(x, y)| Cell::new(x, y)).collect();
        game.set_position(cells(&[(0, 5), (1, 5), (4, 0), (5, 1)]), Some(Cell::new(5, 0))).unwrap();
        assert_eq!(food_reachability(&game), (false, 32));
        game.set_position(cells(&[(0, 5), (1, 5), (4, 0), (3, 3)]), Some(Cell::new(5, 0))).unwrap();
        assert_eq!(food_reachability(&game), (true, 33));
    }
}
