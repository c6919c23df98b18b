//! Snake rules: the board and its Hamiltonian cycle, legality, stepping, death, win and food
//! placement with CPython's RNG (docs/snake.md §1).

use std::collections::VecDeque;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::pyrandom::PyRandom;

/// Default board width.
pub const DEFAULT_WIDTH: usize = 24;
/// Default board height.
pub const DEFAULT_HEIGHT: usize = 16;
/// Default game seed.
pub const DEFAULT_SEED: i64 = 7;
/// Default initial snake length.
pub const DEFAULT_INITIAL_LENGTH: usize = 6;
/// Largest board this port accepts (`width * height`), so a bad size cannot exhaust memory.
pub const MAX_CELLS: usize = 1 << 22;
/// Identity of the food RNG, for reports and recordings.
pub const RNG_IDENTITY: &str =
    "cpython-random-3.11: MT19937, init_by_array(|seed| words), choice via _randbelow";

/// A game that cannot be built or stepped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GameError {
    /// Width or height below 4, or both odd.
    #[error("Board dimensions must be >= 4, with at least one even dimension (got {width}x{height})")]
    BadDimensions {
        /// Requested width.
        width: usize,
        /// Requested height.
        height: usize,
    },
    /// The board has more than [`MAX_CELLS`] cells.
    #[error("Board {width}x{height} is too large; at most {max} cells are supported")]
    BoardTooLarge {
        /// Requested width.
        width: usize,
        /// Requested height.
        height: usize,
        /// The limit.
        max: usize,
    },
    /// Initial length outside `2..capacity`.
    #[error(
        "Initial length must be >= 2 and smaller than the board (got {length}, board has {capacity} cells)"
    )]
    BadInitialLength {
        /// Requested length.
        length: usize,
        /// Board capacity.
        capacity: usize,
    },
    /// `step` on a dead or won game.
    #[error("Cannot step a finished game")]
    Finished,
    /// A direction name other than UP, DOWN, LEFT, RIGHT.
    #[error("Unknown direction: {0}; use UP, DOWN, LEFT or RIGHT")]
    UnknownDirection(String),
    /// A position set by [`Game::set_position`] that the rules cannot hold.
    #[error("Invalid position: {0}")]
    InvalidPosition(String),
}

/// One of the four moves, in the canonical order UP, DOWN, LEFT, RIGHT used for every tie.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Direction {
    /// `(0, -1)`.
    Up,
    /// `(0, +1)`.
    Down,
    /// `(-1, 0)`.
    Left,
    /// `(+1, 0)`.
    Right,
}

impl Direction {
    /// The four directions in canonical order.
    pub const ALL: [Direction; 4] = [Direction::Up, Direction::Down, Direction::Left, Direction::Right];

    /// The upper-case name (`"UP"`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Up => "UP",
            Direction::Down => "DOWN",
            Direction::Left => "LEFT",
            Direction::Right => "RIGHT",
        }
    }

    /// The unit vector `(dx, dy)`, with `y` pointing down.
    pub fn vector(self) -> (i32, i32) {
        match self {
            Direction::Up => (0, -1),
            Direction::Down => (0, 1),
            Direction::Left => (-1, 0),
            Direction::Right => (1, 0),
        }
    }

    /// Position in the canonical order (0 for UP ... 3 for RIGHT).
    pub fn index(self) -> usize {
        match self {
            Direction::Up => 0,
            Direction::Down => 1,
            Direction::Left => 2,
            Direction::Right => 3,
        }
    }
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Direction {
    type Err = GameError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Direction::ALL
            .into_iter()
            .find(|d| d.as_str() == s)
            .ok_or_else(|| GameError::UnknownDirection(s.to_string()))
    }
}

/// A board cell `(x, y)`, `x` to the right and `y` downward; serialized as `[x, y]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Cell {
    /// Column.
    pub x: i32,
    /// Row.
    pub y: i32,
}

impl Cell {
    /// The cell `(x, y)`.
    pub const fn new(x: i32, y: i32) -> Self {
        Self { x, y }
    }

    /// The neighbour one step in `direction` (may be off the board).
    pub fn step(self, direction: Direction) -> Cell {
        let (dx, dy) = direction.vector();
        Cell::new(self.x + dx, self.y + dy)
    }
}

impl Serialize for Cell {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        [self.x, self.y].serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Cell {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let [x, y] = <[i32; 2]>::deserialize(deserializer)?;
        Ok(Cell::new(x, y))
    }
}

/// Why a move kills the snake (§1.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeathReason {
    /// The target is off the board.
    Wall,
    /// The target is the neck.
    Reverse,
    /// The target is another body cell that stays occupied.
    Body,
}

impl DeathReason {
    /// `"wall"`, `"reverse"` or `"body"`.
    pub fn as_str(self) -> &'static str {
        match self {
            DeathReason::Wall => "wall",
            DeathReason::Reverse => "reverse",
            DeathReason::Body => "body",
        }
    }
}

/// The legality of one move (`legal_reason`, §1.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Legality {
    /// The move is allowed.
    Legal,
    /// The move would end the game for this reason.
    Blocked(DeathReason),
}

impl Legality {
    /// `"legal"` or the death reason.
    pub fn as_str(self) -> &'static str {
        match self {
            Legality::Legal => "legal",
            Legality::Blocked(reason) => reason.as_str(),
        }
    }
}

/// A board with its fixed Hamiltonian cycle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Board {
    width: usize,
    height: usize,
    cycle: Vec<Cell>,
    /// Cycle index of each cell, row-major (`y * width + x`).
    index: Vec<usize>,
}

impl Board {
    /// Validate the size and build the cycle (§1.1).
    pub fn new(width: usize, height: usize) -> Result<Self, GameError> {
        let cycle = hamiltonian_cycle(width, height)?;
        let mut index = vec![0; width * height];
        for (i, cell) in cycle.iter().enumerate() {
            index[cell.y as usize * width + cell.x as usize] = i;
        }
        Ok(Self { width, height, cycle, index })
    }

    /// Columns.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Rows.
    pub fn height(&self) -> usize {
        self.height
    }

    /// Number of cells.
    pub fn capacity(&self) -> usize {
        self.cycle.len()
    }

    /// The cells in cycle order.
    pub fn cycle(&self) -> &[Cell] {
        &self.cycle
    }

    /// Whether `cell` is on the board.
    pub fn contains(&self, cell: Cell) -> bool {
        cell.x >= 0 && cell.y >= 0 && (cell.x as usize) < self.width && (cell.y as usize) < self.height
    }

    /// Row-major slot of an on-board cell.
    fn slot(&self, cell: Cell) -> Option<usize> {
        self.contains(cell).then(|| cell.y as usize * self.width + cell.x as usize)
    }

    /// Cycle index of `cell`, or `None` off the board.
    pub fn cycle_index(&self, cell: Cell) -> Option<usize> {
        self.slot(cell).map(|slot| self.index[slot])
    }
}

/// The fixed Hamiltonian cycle of a `width × height` board (§1.1), starting at `(0, 0)`.
pub fn hamiltonian_cycle(width: usize, height: usize) -> Result<Vec<Cell>, GameError> {
    if width.min(height) < 4 || (width % 2 == 1 && height % 2 == 1) {
        return Err(GameError::BadDimensions { width, height });
    }
    let cells = width.saturating_mul(height);
    if cells > MAX_CELLS {
        return Err(GameError::BoardTooLarge { width, height, max: MAX_CELLS });
    }
    if height % 2 == 1 {
        let transposed = hamiltonian_cycle(height, width)?;
        return Ok(transposed.into_iter().map(|c| Cell::new(c.y, c.x)).collect());
    }
    // Both sides are at most MAX_CELLS / 4, so they fit in i32.
    let (w, h) = (width as i32, height as i32);
    let mut path = Vec::with_capacity(cells);
    path.push(Cell::new(0, 0));
    for y in 0..h {
        if y % 2 == 0 {
            path.extend((1..w).map(|x| Cell::new(x, y)));
        } else {
            path.extend((1..w).rev().map(|x| Cell::new(x, y)));
        }
    }
    path.extend((1..h).rev().map(|y| Cell::new(0, y)));
    Ok(path)
}

/// The JSON snapshot of a game (§1.6), used in records, replays and tests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    /// Board columns.
    pub width: usize,
    /// Board rows.
    pub height: usize,
    /// The game seed.
    pub seed: i64,
    /// Body cells, head first.
    pub body: Vec<Cell>,
    /// Food cell, `null` after a win.
    pub food: Option<Cell>,
    /// Foods eaten.
    pub score: usize,
    /// Body length.
    pub length: usize,
    /// Steps taken, fatal ones included.
    pub ticks: u64,
    /// False after a fatal move.
    pub alive: bool,
    /// True once the body fills the board.
    pub won: bool,
    /// Why the snake died, if it did.
    pub death_reason: Option<DeathReason>,
}

/// One Snake game: board, body, food, counters and the food RNG.
#[derive(Debug, Clone)]
pub struct Game {
    board: Board,
    seed: i64,
    initial_length: usize,
    rng: PyRandom,
    body: VecDeque<Cell>,
    occupied: Vec<bool>,
    food: Option<Cell>,
    score: usize,
    ticks: u64,
    alive: bool,
    won: bool,
    death_reason: Option<DeathReason>,
}

impl Game {
    /// A new game: cycle, initial snake behind the centre cell, and the first food (§1.2).
    pub fn new(width: usize, height: usize, seed: i64, initial_length: usize) -> Result<Self, GameError> {
        let board = Board::new(width, height)?;
        let capacity = board.capacity();
        if initial_length < 2 || initial_length >= capacity {
            return Err(GameError::BadInitialLength { length: initial_length, capacity });
        }
        let centre = Cell::new((width / 2) as i32, (height / 2) as i32);
        let start = board.cycle_index(centre).unwrap_or(0);
        let body: VecDeque<Cell> =
            (0..initial_length).map(|i| board.cycle[(start + capacity - i) % capacity]).collect();
        let mut occupied = vec![false; capacity];
        for &cell in &body {
            if let Some(slot) = board.slot(cell) {
                occupied[slot] = true;
            }
        }
        let mut game = Self {
            board,
            seed,
            initial_length,
            rng: PyRandom::new(i128::from(seed)),
            body,
            occupied,
            food: None,
            score: 0,
            ticks: 0,
            alive: true,
            won: false,
            death_reason: None,
        };
        game.food = game.spawn_food();
        Ok(game)
    }

    /// The default 24×16 game with the given seed and initial length 6.
    pub fn with_seed(seed: i64) -> Self {
        // The default dimensions and length are valid, so this cannot fail.
        match Self::new(DEFAULT_WIDTH, DEFAULT_HEIGHT, seed, DEFAULT_INITIAL_LENGTH) {
            Ok(game) => game,
            Err(error) => unreachable!("default board is valid: {error}"),
        }
    }

    /// Draw the next food uniformly from the empty cells in cycle order (§1.5).
    fn spawn_food(&mut self) -> Option<Cell> {
        let empty: Vec<Cell> =
            self.board.cycle.iter().copied().filter(|&cell| !self.occupies(cell)).collect();
        self.rng.choice(&empty).copied()
    }

    /// The board and its cycle.
    pub fn board(&self) -> &Board {
        &self.board
    }

    /// Board columns.
    pub fn width(&self) -> usize {
        self.board.width
    }

    /// Board rows.
    pub fn height(&self) -> usize {
        self.board.height
    }

    /// Number of cells.
    pub fn capacity(&self) -> usize {
        self.board.capacity()
    }

    /// The seed the game was built with.
    pub fn seed(&self) -> i64 {
        self.seed
    }

    /// The length the snake started with.
    pub fn initial_length(&self) -> usize {
        self.initial_length
    }

    /// Body cells, head first.
    pub fn body(&self) -> &VecDeque<Cell> {
        &self.body
    }

    /// The head cell.
    pub fn head(&self) -> Cell {
        self.body[0]
    }

    /// The tail cell.
    pub fn tail(&self) -> Cell {
        self.body[self.body.len() - 1]
    }

    /// The food cell (`None` after a win).
    pub fn food(&self) -> Option<Cell> {
        self.food
    }

    /// Foods eaten.
    pub fn score(&self) -> usize {
        self.score
    }

    /// Steps taken.
    pub fn ticks(&self) -> u64 {
        self.ticks
    }

    /// False after a fatal move.
    pub fn alive(&self) -> bool {
        self.alive
    }

    /// True once the body fills the board.
    pub fn won(&self) -> bool {
        self.won
    }

    /// True when the game is dead or won.
    pub fn finished(&self) -> bool {
        !self.alive || self.won
    }

    /// Why the snake died, if it did.
    pub fn death_reason(&self) -> Option<DeathReason> {
        self.death_reason
    }

    /// Whether a body cell lies on `cell`.
    pub fn occupies(&self, cell: Cell) -> bool {
        self.board.slot(cell).is_some_and(|slot| self.occupied[slot])
    }

    /// The cell a move in `direction` would enter.
    pub fn target(&self, direction: Direction) -> Cell {
        self.head().step(direction)
    }

    /// `legal_reason`: wall, then reverse, then body (the tail moves away unless eating) (§1.3).
    pub fn legal_reason(&self, direction: Direction) -> Legality {
        let target = self.target(direction);
        if !self.board.contains(target) {
            return Legality::Blocked(DeathReason::Wall);
        }
        if target == self.body[1] {
            return Legality::Blocked(DeathReason::Reverse);
        }
        let eats = Some(target) == self.food;
        if self.occupies(target) && (eats || target != self.tail()) {
            return Legality::Blocked(DeathReason::Body);
        }
        Legality::Legal
    }

    /// Advance one tick; returns whether the snake ate (§1.4). A fatal move ends the game and
    /// returns `Ok(false)`.
    pub fn step(&mut self, direction: Direction) -> Result<bool, GameError> {
        if self.finished() {
            return Err(GameError::Finished);
        }
        self.ticks += 1;
        if let Legality::Blocked(reason) = self.legal_reason(direction) {
            self.alive = false;
            self.death_reason = Some(reason);
            return Ok(false);
        }
        let target = self.target(direction);
        let eats = Some(target) == self.food;
        if !eats {
            // Vacate the tail first: the head may enter the cell the tail leaves.
            if let Some(tail) = self.body.pop_back() {
                self.set_occupied(tail, false);
            }
        }
        self.body.push_front(target);
        self.set_occupied(target, true);
        if !eats {
            return Ok(false);
        }
        self.score += 1;
        if self.body.len() == self.capacity() {
            self.won = true;
            self.food = None;
        } else {
            self.food = self.spawn_food();
        }
        Ok(true)
    }

    /// [`Game::step`] by direction name (`"UP"`, ...), as recordings store it.
    pub fn step_named(&mut self, direction: &str) -> Result<bool, GameError> {
        if self.finished() {
            return Err(GameError::Finished);
        }
        self.step(direction.parse()?)
    }

    fn set_occupied(&mut self, cell: Cell, value: bool) {
        if let Some(slot) = self.board.slot(cell) {
            self.occupied[slot] = value;
        }
    }

    /// The body occupies a strictly increasing arc of the cycle, tail to head (§1.6).
    pub fn cycle_order_valid(&self) -> bool {
        let cap = self.capacity();
        let mut sum = 0usize;
        let mut previous: Option<usize> = None;
        for &cell in self.body.iter().rev() {
            let Some(index) = self.board.cycle_index(cell) else {
                return false;
            };
            if let Some(prev) = previous {
                let distance = (index + cap - prev) % cap;
                if distance == 0 {
                    return false;
                }
                sum += distance;
            }
            previous = Some(index);
        }
        sum < cap
    }

    /// Replace the body and food (for tests and hand-built positions); score, ticks and the RNG
    /// are kept. The body must have at least two distinct on-board cells and the food must be
    /// on the board and off the body.
    pub fn set_position(&mut self, body: Vec<Cell>, food: Option<Cell>) -> Result<(), GameError> {
        if body.len() < 2 {
            return Err(GameError::InvalidPosition("the body needs at least two cells".into()));
        }
        let mut occupied = vec![false; self.capacity()];
        for &cell in &body {
            let slot = self.board.slot(cell).ok_or_else(|| {
                GameError::InvalidPosition(format!("body cell [{}, {}] is off the board", cell.x, cell.y))
            })?;
            if occupied[slot] {
                return Err(GameError::InvalidPosition(format!(
                    "body cell [{}, {}] appears twice",
                    cell.x, cell.y
                )));
            }
            occupied[slot] = true;
        }
        if let Some(cell) = food {
            match self.board.slot(cell) {
                None => {
                    return Err(GameError::InvalidPosition(format!(
                        "food [{}, {}] is off the board",
                        cell.x, cell.y
                    )))
                }
                Some(slot) if occupied[slot] => {
                    return Err(GameError::InvalidPosition(format!(
                        "food [{}, {}] is on the body",
                        cell.x, cell.y
                    )))
                }
                Some(_) => {}
            }
        }
        self.body = body.into();
        self.occupied = occupied;
        self.food = food;
        Ok(())
    }

    /// The JSON snapshot of the current state.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            width: self.width(),
            height: self.height(),
            seed: self.seed,
            body: self.body.iter().copied().collect(),
            food: self.food,
            score: self.score,
            length: self.body.len(),
            ticks: self.ticks,
            alive: self.alive,
            won: self.won,
            death_reason: self.death_reason,
        }
    }
}

#[cfg(test)]
mod tests;
