"""Regenerate the snake conformance fixtures from the reference implementation.

Not used at test time. Run from anywhere with CPython 3.11 and the laya-coreml 0.5.1 wheel
unpacked (pip download --no-deps laya-coreml==0.5.1), e.g.

    python3 src/snake/testdata/generate.py /work/ref/laya_coreml src/snake/testdata

It drives the reference SnakeGame and LayaPolicy.decide (with a stub agent in place of the
model, so no checkpoint is needed) and writes games.jsonl, prompts.jsonl and decisions.jsonl.
"""

import hashlib
import json
import random
import sys
from collections import deque

sys.path.insert(0, sys.argv[1])
from laya_coreml.snake.game import DIRECTIONS, SnakeGame  # noqa: E402
from laya_coreml.snake.policy import LayaPolicy  # noqa: E402

OUT = sys.argv[2]


def compact(value):
    return json.dumps(value, separators=(",", ":"))


def setup(case):
    game = SnakeGame(case["width"], case["height"], case["seed"], case["initial_length"])
    for letter in case["actions"]:
        game.step({"U": "UP", "D": "DOWN", "L": "LEFT", "R": "RIGHT"}[letter])
    if case.get("position"):
        game.body = deque(tuple(c) for c in case["position"]["body"])
        food = case["position"]["food"]
        game.food = tuple(food) if food else None
    return game


def planner_best(game):
    safe = [m for m in game.moves() if m.safe]
    return max(safe, key=lambda m: m.advance).direction


# ---- games: full trajectories under three model-free policies --------------------------------
def play(width, height, seed, length, policy, choice_seed, max_steps):
    game = SnakeGame(width, height, seed, length)
    chooser = random.Random(choice_seed)
    snaps = [compact(game.snapshot())]
    actions, eats, foods = "", [], [game.food]
    while game.alive and not game.won and game.ticks < max_steps:
        if policy == "planner_best":
            d = planner_best(game)
        elif policy == "random_safe":
            d = chooser.choice([m.direction for m in game.moves() if m.safe])
        else:  # random_legal: mostly legal moves, sometimes any move
            legal = [d for d in DIRECTIONS if game.legal_reason(d) == "legal"]
            if chooser.random() < 0.02 or not legal:
                d = chooser.choice(DIRECTIONS)
            else:
                d = chooser.choice(legal)
        actions += d[0]
        if game.step(d):
            eats.append(game.ticks)
            foods.append(game.food)
        snaps.append(compact(game.snapshot()))
    return {
        "width": width, "height": height, "seed": seed, "initial_length": length,
        "policy": policy, "choice_seed": choice_seed, "max_steps": max_steps,
        "actions": actions, "eat_ticks": eats, "foods": [list(f) if f else None for f in foods],
        "snapshots_sha256": hashlib.sha256("\n".join(snaps).encode()).hexdigest(),
        "final": game.snapshot(),
    }


games = []
for seed in (101, 102, 7, 103):
    games.append(play(24, 16, seed, 6, "planner_best", 0, 300))
for seed in range(12):
    games.append(play(6, 6, seed, 2, "random_safe", seed + 1000, 10_000))
for (w, h, seed, length, cs) in [
    (4, 4, 1, 2, 11), (4, 5, 3, 2, 12), (5, 4, 3, 3, 13), (6, 6, 0, 4, 14), (8, 7, 11, 3, 15),
    (7, 8, 12, 3, 16), (24, 16, 7, 6, 17), (24, 16, 101, 6, 18), (10, 10, -5, 5, 19),
    (6, 6, 2**40, 2, 20), (4, 4, 9, 15, 21), (12, 9, 5, 8, 22),
]:
    games.append(play(w, h, seed, length, "random_legal", cs, 2_000))
with open(f"{OUT}/games.jsonl", "w") as f:
    for g in games:
        f.write(compact(g) + "\n")


# ---- prompts and decisions through the real LayaPolicy.decide with a stub agent ---------------
class StubAgent:
    def __init__(self, answers):
        self.answers, self.seen = answers, None

    def predict(self, state, questions):
        self.seen = compact({"state": state, "questions": questions})
        return {"answers": self.answers, "usage": {"input_tokens": 123}}


def run_policy(game, style, guarded, answers):
    policy = object.__new__(LayaPolicy)
    policy.guarded, policy.prompt, policy.agent = guarded, style, StubAgent(answers)
    try:
        decision = policy.decide(game).to_dict()
        for k in ("inference_ms", "decision_ms"):
            decision.pop(k)
        outcome = {"decision": decision}
    except (RuntimeError, ValueError) as error:
        outcome = {"error": str(error)}
    return policy.agent.seen, outcome


def planner_prefix(width, height, seed, length, steps):
    game, s = SnakeGame(width, height, seed, length), ""
    for _ in range(steps):
        d = planner_best(game)
        s += d[0]
        game.step(d)
    return s


states = []
for seed, ticks in [(101, (0, 5, 12, 13, 60, 148, 299)), (7, (0, 48, 200)), (102, (50, 250))]:
    for t in ticks:
        states.append({"width": 24, "height": 16, "seed": seed, "initial_length": 6,
                       "actions": planner_prefix(24, 16, seed, 6, t)})
for g in games:
    if g["policy"] == "random_legal":
        acts = g["actions"]
        for cut in sorted({0, len(acts) // 3, (2 * len(acts)) // 3, max(0, len(acts) - 1)}):
            states.append({"width": g["width"], "height": g["height"], "seed": g["seed"],
                           "initial_length": g["initial_length"], "actions": acts[:cut]})
    if g["policy"] == "random_safe" and g["seed"] in (0, 5):
        for cut in (3, 40, len(g["actions"]) - 1):
            states.append({"width": 6, "height": 6, "seed": g["seed"], "initial_length": 2,
                           "actions": g["actions"][:cut]})
# Hand-built positions: food walled in by the tail; the docs/snake.md §7 test 2 legality board.
states.append({"width": 6, "height": 6, "seed": 0, "initial_length": 2, "actions": "",
               "position": {"body": [[0, 5], [1, 5], [4, 0], [5, 1]], "food": [5, 0]}})
states.append({"width": 4, "height": 4, "seed": 7, "initial_length": 4, "actions": "",
               "position": {"body": [[1, 1], [1, 2], [0, 2], [0, 1]], "food": [3, 3]}})

with open(f"{OUT}/prompts.jsonl", "w") as f:
    for case in states:
        game = setup(case)
        if not game.alive or game.won:
            continue
        moves = game.moves()
        reachable, space = game.food_reachability()
        hi = game.indices[game.head]
        features = {
            "tail_distance": (game.indices[game.body[-1]] - hi) % game.capacity,
            "food_distance": (game.indices[game.food] - hi) % game.capacity,
            "moves": [[m.direction, m.legal, m.safe, m.advance, m.reason, m.eats] for m in moves],
            "food_reachable": reachable, "open_cells": space,
        }
        uniform = {"move": {"type": "choice", "probabilities": {d: 0.25 for d in DIRECTIONS}},
                   "risk": {"type": "noul", "noul": 0.5}, "food": {"type": "noul", "noul": 0.5}}
        for style in ("compact", "detailed"):
            request, _ = run_policy(game, style, False, uniform)
            f.write(compact({**case, "style": style, "features": features,
                             "request": request}) + "\n")


def answers(probs, risk=0.97, food=0.9):
    return {"move": {"type": "choice", "probabilities": dict(zip(DIRECTIONS, probs))},
            "risk": {"type": "noul", "noul": risk}, "food": {"type": "noul", "noul": food}}


decisions = []
base = {"width": 24, "height": 16, "seed": 7, "initial_length": 6, "actions": ""}
third = 0.1 / 3
probability_sets = [
    [0.9, third, third, third],  # docs/snake.md §7 test 7: unsafe UP on the seed-7 board; DOWN/RIGHT tie
    [third, 0.9, third, third],
    [third, third, 0.9, third],
    [0.1, 0.2, 0.3, 0.4],
    [0.25, 0.25, 0.25, 0.25],
    [0.4, 0.1, 0.4, 0.1],
    [0.0, 0.0, 1.0, 0.0],
    [0.5, 0.2, 0.1, 0.2],
    [1.5, 0.0, 0.0, 0.0],  # invalid
    [-0.1, 0.5, 0.3, 0.3],  # invalid
]
chooser = random.Random(4242)
for case in [base] + [s for s in states[::4]]:
    game = setup(case)
    if not game.alive or game.won:
        continue
    sets = probability_sets if case is base else [
        [round(chooser.random(), 4) for _ in range(4)] for _ in range(3)
    ] + [[0.0, 0.5, 0.5, 0.0]]
    for probs in sets:
        for guarded in (True, False):
            pairs = ((0.97, 0.9), (0.123, 0.4567)) if case is base else ((0.123, 0.4567),)
            for risk, food in pairs:
                _, outcome = run_policy(game, "compact", guarded, answers(probs, risk, food))
                decisions.append({**case, "guarded": guarded, "probabilities": probs,
                                  "risk": risk, "food": food, **outcome})
for risk, food in ((1.2, 0.5), (0.5, -0.5)):
    _, outcome = run_policy(setup(base), "compact", True, answers([0.25] * 4, risk, food))
    decisions.append({**base, "guarded": True, "probabilities": [0.25] * 4,
                      "risk": risk, "food": food, **outcome})
with open(f"{OUT}/decisions.jsonl", "w") as f:
    for d in decisions:
        f.write(compact(d) + "\n")
print(len(games), "games,", len(states), "states,", len(decisions), "decisions")
