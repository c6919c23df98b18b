#!/usr/bin/env python3
"""Host-path goldens: drive laya-coreml 0.5.1's OWN host code on the fixture bundle.

Writes `fixtures/goldens/host.json` (schema `laya-bench-host-goldens/1`). Every case is a JSON
request (round-tripped through JSON before the reference sees it), the shape of the exported
graph, and what the reference did with it: the token rows, every packed forward batch exactly as
the model received it plus the float32 outputs our deterministic fake model returned, the result
dicts, the warnings -- or the exact error.

The reference is imported, never copied: see `scripts/laya_ref.py` for how to get the wheel.

    /tmp/refenv/bin/python scripts/make_host_goldens.py
"""

import copy
import json
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import laya_ref as lr  # noqa: E402
from laya_ref import explicit_outputs, shape_enum, shape_fixed, shape_range  # noqa: E402

OUT = lr.ROOT / "fixtures" / "goldens" / "host.json"

# ------------------------------------------------------------------------------------------
# Building blocks

TICKET = "The customer requests a refund of a duplicate payment."
TICKET_DICT = {
    "message": "My card was charged two times for order 5521. I want the second charge refunded.",
    "customer": {"id": 88123, "tier": "gold", "vip": False},
    "tags": ["billing", "refund"],
    "previous": None,
}
LONG_TEXT = (
    "A long note about the delivery: the courier came at noon, nobody was home, the neighbour "
    "took the box, and later the box was returned to the depot because the label was torn. "
    "Customer wrote three emails in one day asking about the same missing refund, each more "
    "upset than the last. "
) * 3
CONVERSATION = [
    {"role": "user", "content": "Hi, my invoice is wrong."},
    {"role": "agent", "content": "Sorry to hear that. What is the invoice number?"},
    {"role": "user", "content": "INV-7730, the amount is 312.80 EUR but it should be 213.80."},
]
LONG_CONVERSATION = CONVERSATION * 3 + [
    {"role": "user", "content": "Also, please refund the duplicate payment from last week."}
]

Q_NOUL = {"refund": {"type": "noul", "instructions": "Does the customer explicitly ask for a refund?"}}
Q_CHOICE = {
    "team": {
        "type": "choice",
        "instructions": "Which team should handle this support ticket?",
        "criteria": {
            "billing": "charges, invoices, refunds",
            "technical": "bugs, crashes, errors, login problems",
            "shipping": "delivery, tracking, damaged packages",
            "account": "profile, password, address changes",
        },
    }
}
Q_SCORE = {
    "urgency": {
        "type": "score",
        "instructions": "How urgent is this ticket?",
        "criteria": ["can wait", "should be handled today", "blocking, handle now"],
    }
}
Q_SNAKE = {
    "move": {
        "type": "choice",
        "instructions": "Choose the best safe move toward food.",
        "criteria": {
            "UP": "Unsafe. Traps the snake.",
            "DOWN": "Safe. Best route to food.",
            "LEFT": "Blocked. Collision.",
            "RIGHT": "Safe. Slower route.",
        },
    },
    "risk": {"type": "noul", "instructions": "Is a safe route available?"},
    "food": {"type": "noul", "instructions": "Is food reachable through empty cells?"},
}
SNAKE_STATE = "Safe route: yes. Food reachable through empty cells: yes."
Q_MIXED = {**Q_CHOICE, **Q_SCORE, **Q_NOUL}


def choice(crit, ins="Pick one label.", **extra):
    return dict({"type": "choice", "instructions": ins, "criteria": crit}, **extra)


def score(levels, ins="Rate the sentiment of the review.", **extra):
    return dict({"type": "score", "instructions": ins, "criteria": levels}, **extra)


def noul(ins="Is the wording rude?", **extra):
    return dict({"type": "noul", "instructions": ins}, **extra)


def predict(state, questions, **kwargs):
    return {"method": "predict", "state": state, "questions": questions, "kwargs": kwargs}


def predict_batch(states, questions, **kwargs):
    return {"method": "predict_batch", "states": states, "questions": questions, "kwargs": kwargs}


CASES = []


def case(name, covers, call, shape=None, patch=None, fake="hash", tok_patch=None):
    CASES.append(
        {
            "name": name,
            "covers": covers,
            "agent_config_patch": patch,
            "tokenizer_config_patch": tok_patch,
            "fake": fake,
            "shape": shape or shape_fixed(),
            "call": call,
        }
    )


# ------------------------------------------------------------------------------------------
# A. question types and option rendering (docs/host-path.md §3.4-3.5)

case("noul-default", "noul without criteria: default option texts, slot 0 = false, slot 1 = true; "
     "fixed L96 (ANE-like) shape", predict(TICKET, Q_NOUL))
case("noul-custom-criteria", "noul with both descriptions",
     predict(TICKET, {"polite": noul(criteria={"false": "the customer is rude",
                                                 "true": "the customer is polite"})}))
case("noul-labels-and-TRUE-key", "noul labels (stripped) + case-insensitive 'TRUE' criteria key; "
     "false keeps its default description",
     predict(TICKET, {"tone": noul(labels={"false": " rude ", "true": "polite"},
                                    criteria={"TRUE": "polite wording"})}))
case("noul-structured-False-key", "'False' key lower-cased; structured (dict) description rendered "
     "as JSON; true keeps the default",
     predict(TICKET, {"q": noul("Should we refund?",
                                criteria={"False": {"reason": "no refund", "ok": False,
                                                    "limit": 2.5}})}))
case("noul-empty-and-null-criteria", "noul criteria '' and null fall back to defaults; criteria "
     "null on the question is accepted",
     predict(TICKET, {"a": noul(criteria={"true": "", "false": None}),
                      "b": noul("Is this spam?", criteria=None)}))
case("noul-duplicate-keys-after-lowercase", "noul criteria {'TRUE': a, 'true': b, 'False': c}: keys "
     "lower-cased, the later duplicate wins",
     predict(TICKET, {"q": noul(criteria={"TRUE": "first true", "true": "second true",
                                          "False": "the false one"})}))
case("choice-dict-descriptions", "choice dict: None/'' -> bare label, 0/false kept as '0'/'false', "
     "structured (dict, list) descriptions as JSON; 7 options -> bucket choice:6-10 (fallback "
     "temperature[0])",
     predict(TICKET, {"kind": choice({"none": None, "empty": "", "zero": 0, "false": False,
                                      "struct": {"covers": ["a", "b"], "n": 1.5},
                                      "list": [1, "x", None], "text": "plain text"})}),
     shape=shape_enum())
case("choice-list-mixed-scalars", "choice list [1, 2.5, false, \"\"]: str() rendering, answer keys "
     "keep their JSON type, probability keys stringified",
     predict(TICKET, {"n": choice([1, 2.5, False, ""])}))
case("choice-list-float-formats", "Python str()/repr of floats as option text and keys: 0.1, "
     "1e-07, 1e+16, 123456789.0, -0.0, -3, true, '1'",
     predict(TICKET, {"f": choice([0.1, 1e-07, 1e16, 123456789.0, -0.0, -3, True, "1"])}),
     shape=shape_enum())
case("choice-snake", "snake compact prompt: 3 questions, 3 rows, each its own L96 forward",
     predict(SNAKE_STATE, Q_SNAKE))
case("choice-two-options", "choice with 2 options -> bucket choice:2",
     predict(TICKET, {"yn": choice({"refund": "give the money back", "keep": "no refund"})}))
case("choice-single-option", "choice with 1 option: bucket choice:2, p=[1.0], confidence 1.0",
     predict(TICKET, {"solo": choice(["only"])}))
case("choice-12-options", "12 options -> bucket choice:11+ (absent -> temperature[0])",
     predict(TICKET, {"dept": choice(["sales", "support", "billing", "legal", "hr", "it",
                                      "ops", "finance", "security", "design", "data", "other"])}),
     shape=shape_enum())
case("score-three-levels", "score: 'level i: text' options, expected score, legend",
     predict(TICKET, Q_SCORE))
case("score-structured-levels", "score levels of every JSON type (dict, number, list, bool, "
     "float) rendered as JSON in options and legend; 6 levels -> score:6-10",
     predict(TICKET, {"sev": score(["none", {"desc": "blocking", "sla_h": 1}, 3, [1, 2], True,
                                    2.5])}), shape=shape_enum())
case("score-two-levels", "score with 2 levels -> score:2 (absent -> temperature[1])",
     predict(TICKET, {"s2": score(["bad", "good"])}))
case("score-single-level", "score with 1 level",
     predict(TICKET, {"s1": score(["only level"])}))
case("score-12-levels", "score with 12 levels -> score:11+",
     predict(TICKET, {"s12": score(["level text %d" % i for i in range(12)])}),
     shape=shape_enum())
case("option-order-choice", "option_order [2,0,1] puts gamma, alpha, beta in slots 0..2; "
     "probabilities are un-permuted back to label order",
     predict(TICKET, {"g": choice(["alpha", "beta", "gamma"], option_order=[2, 0, 1])}))
case("option-order-noul", "noul option_order [1,0]: true in slot 0; noul is still P(true)",
     predict(TICKET, {"r": noul("Is a refund requested?", option_order=[1, 0])}))
case("option-order-score", "score option_order [3,1,0,2]; expected score over canonical levels",
     predict(TICKET, {"s": score(["none", "low", "high", "critical"], option_order=[3, 1, 0, 2])}))
case("instructions-non-string", "instructions as dict / list / number / bool are JSON-serialized "
     "(ensure_ascii=False)",
     predict(TICKET, {"d": noul({"task": "refund?", "sprache": "Rückerstattung"}),
                      "l": noul(["is", "it", "spam"]),
                      "n": noul(3.5),
                      "b": noul(True)}))
case("mask-sanitizing", "every literal [MASK] in state, instructions, option texts and noul labels "
     "becomes one space; answer keys keep it; '[mask]' (lower case) is untouched",
     predict("Refund [MASK] please, [MASK][MASK] now [mask]",
             {"c": choice({"a[MASK]b": "x [MASK] y", "plain": None}, "Pick one [MASK] label"),
              "n": noul("Is [MASK] rude?", labels={"false": "no[MASK]", "true": "yes"})}))
case("special-token-literals", "other special token strings typed in the state are NOT sanitized "
     "and encode to their special ids",
     predict("Please [SEP] ignore [CLS] this [PAD] and [UNK] text", Q_NOUL))

# ------------------------------------------------------------------------------------------
# B. states (§3.3)

case("state-dict-nested", "dict state: json.dumps default separators, insertion order, "
     "ensure_ascii=False, true/false/null", predict(TICKET_DICT, Q_MIXED), shape=shape_enum())
case("state-list-conversation", "list state (conversation) that fits: serialized as a JSON array",
     predict(CONVERSATION, Q_NOUL), shape=shape_enum())
case("state-list-left-truncation", "list state longer than the room: truncated from the LEFT (newest "
     "turn kept); usage.truncated*, per-question drop",
     predict(LONG_CONVERSATION, {**Q_NOUL, **Q_CHOICE}))
case("state-str-right-truncation", "str state longer than the room: truncated from the right; "
     "questions with different heads drop different amounts, usage reports the max",
     predict(LONG_TEXT, {**Q_NOUL, **Q_CHOICE}))
case("state-dict-right-truncation", "dict state truncated from the right on the fixed L96 shape",
     predict({"note": LONG_TEXT, "id": 7}, Q_SCORE))
case("state-scalars-and-empties", "number, float, bools, empty string, empty dict, empty list, "
     "null value inside a dict; one logical batch -> all rows use the batch's bucket",
     predict_batch([5, -2.5, True, False, "", {}, [], {"a": None}], Q_NOUL), shape=shape_enum())
case("state-json-escapes", "JSON escapes in a dict state: \\n \\t \\\" \\\\ \\r \\b \\f, \\u00xx "
     "controls, DEL and U+2028 raw, emoji, non-BMP, CJK, RTL",
     predict({"text": "line1\nline2\ttab \"quoted\" back\\slash \r \b \f \u0001 \u001f \u007f",
              "emoji": "😀🎉👍🏽", "nonbmp": "𝄞 𠀋", "cjk": "日本語のテキスト", "rtl": "שלום",
              "sep": "a\u2028b\u2029c", "html": "<b>&amp;</b> a/b"}, Q_NOUL),
     shape=shape_enum())
case("state-number-formats", "Python float repr in a serialized state: 1e-07, 1e+16, -0.0, 3.0, "
     "0.30000000000000004, big int",
     predict({"a": 1e-07, "b": 1e16, "c": -0.0, "d": 3.0, "e": 0.1 + 0.2,
              "f": 12345678901234567890, "g": [], "h": {}}, Q_NOUL), shape=shape_enum())
case("state-multilingual-str", "non-ASCII str state (de, fr, es, ja, ru, emoji)",
     predict("Der Kunde möchte eine Rückerstattung. Le client demande un remboursement. "
             "¿Dónde está mi pedido? お客様は返金を求めています。 Где мой заказ? 😡🔥",
             {**Q_NOUL, **Q_SCORE}), shape=shape_range())

# ------------------------------------------------------------------------------------------
# C. token budgets (§3.4, §3.6)

case("option-48-token-cap", "an option text longer than 48 tokens is cut to its first 48 "
     "(span 49 with [MASK])",
     predict(TICKET, {"c": choice({"long": LONG_TEXT, "short": "brief"})}), shape=shape_enum())
case("head-budget-per-option-cut", "head_max_len=12: budget < 16 -> per = max(4, (12-16)//3) = 4 "
     "(no option cut), instruction cut to the 8-token floor",
     predict(TICKET, {"c": choice(["alpha", "beta", "gamma"],
                                  "a long instruction that keeps going well past eight tokens")},
             head_max_len=12))
case("head-budget-collisions", "34 options at head_max_len 192: per = 176//34 = 5, options sharing "
     "a prefix collide -> usage.options {total, distinct, tokens_per_option}; head exceeds "
     "head_max_len (floors)",
     predict(TICKET, {"many": choice(["refund request category number %d" % i for i in range(30)]
                                     + ["alpha", "beta", "gamma", "delta"])}),
     shape=shape_range(K=64))
case("head-budget-cut-distinct", "20 options at head_max_len 64: per = max(4, 48//20) = 4, "
     "every span cut but still distinct -> no usage.options",
     predict(TICKET, {"c": choice(["%s option text here" % w for w in
                                   ["billing", "technical", "shipping", "account", "other",
                                    "refund", "invoice", "payment", "order", "delivery",
                                    "tracking", "password", "address", "profile", "login",
                                    "crash", "error", "bug", "spam", "legal"]])},
             head_max_len=64), shape=shape_enum())
case("max_len-per-call", "per-call max_len=40 on a flexible shape cuts the state",
     predict(TICKET_DICT, Q_NOUL, max_len=40), shape=shape_range())
case("head_max_len-per-call", "per-call head_max_len=24: budget 24 - options >= 16 -> no per-option "
     "cut; instruction cut to the budget",
     predict(TICKET, {"c": choice(["a", "b"], "Which one of these two short labels fits the "
                                              "ticket text best, in your opinion?")},
             head_max_len=24), shape=shape_range())
case("config-max_len-clamp", "rl_agent_config max_len 48 (< shape 512) is the row budget",
     predict(LONG_TEXT, Q_NOUL), shape=shape_range(), patch={"max_len": 48})
HEAD_CUT_Q = {"c": choice(["alpha beta gamma delta", "epsilon zeta eta theta"], "Pick.")}


def _head_cut_max_len():
    """max_len that keeps every marker but cuts the last option span: last marker + 2."""
    from laya_coreml.common import build_head

    agent = lr.HostAgent(shape=shape_range(), record=False)
    _, markers, _ = build_head(agent.tok, agent._to_internal(HEAD_CUT_Q["c"]), 192)
    return markers[-1] + 2


HEAD_CUT_MAX_LEN = _head_cut_max_len()

case("head-cut-markers-survive", "max_len cuts the head itself after the last marker: all markers "
     "survive, the last option span and the closing [SEP] are cut, room 0 -> whole state dropped",
     predict(TICKET, HEAD_CUT_Q, max_len=HEAD_CUT_MAX_LEN), shape=shape_range())

# ------------------------------------------------------------------------------------------
# D. shapes and packing (§3.8, §3.9)

STATES3 = [TICKET, TICKET_DICT, LONG_TEXT[:400]]
case("enum-logical-batch-min-length", "enumerated lengths, B1: one logical batch (all states): "
     "every row padded to the bucket of the LONGEST row of the whole call",
     predict_batch(STATES3, Q_NOUL), shape=shape_enum())
case("enum-batch_size-1-per-state", "predict_batch batch_size=1: each state is its own logical "
     "batch, so each gets its own bucket",
     predict_batch(STATES3, Q_NOUL, batch_size=1), shape=shape_enum())
case("range-logical-batch", "range/flexible shape 16..512: ceil16 of the logical batch's longest row",
     predict_batch(STATES3, Q_MIXED), shape=shape_range())
case("range-long-row", "range shape: a ~300-token row -> ceil16", predict(LONG_TEXT, Q_CHOICE),
     shape=shape_range())
case("enum-long-row", "enumerated: a ~300-token row -> bucket 384", predict(LONG_TEXT, Q_CHOICE),
     shape=shape_enum())
case("range-b4-dummy-rows", "B4 range: 3 states x 2 questions = 6 rows -> forwards of 4 and 2 "
     "real rows; dummy rows keep attention on column 0",
     predict_batch(STATES3, {**Q_NOUL, **Q_SCORE}), shape=shape_range(B=4))
case("enum-b4-many-forwards", "B4 enumerated: 5 states x 3 questions = 15 rows -> 4 forwards",
     predict_batch([TICKET, SNAKE_STATE, TICKET_DICT, CONVERSATION, "Short."], Q_MIXED),
     shape=shape_enum(B=4))
case("fixed-b4", "fixed L96 B4: 2 states x 3 questions -> forwards of 4 and 2 rows, all L96",
     predict_batch([SNAKE_STATE, "Safe route: no. Food reachable through empty cells: no."],
                   Q_SNAKE), shape=shape_fixed(B=4))
case("fixed-b1-batch-of-states", "fixed L96 B1 predict_batch: 3 states x 1 question = 3 forwards",
     predict_batch(STATES3, Q_NOUL))
case("predict_batch-no-states", "predict_batch([]) -> [] (no tokenization, no forward)",
     predict_batch([], Q_NOUL))
case("empty-questions", "questions {} -> empty answers, zero usage, no forward",
     predict(TICKET, {}))
case("empty-questions-batch", "predict_batch with questions {}: one empty result per state",
     predict_batch([TICKET, {"a": 1}], {}), shape=shape_enum())

# ------------------------------------------------------------------------------------------
# E. temperatures and the abstention gate (§4.1, §4.2)

ALL_BUCKETS = {
    "c2": choice(["a", "b"]),
    "c5": choice(["a", "b", "c", "d", "e"]),
    "c6": choice(["a", "b", "c", "d", "e", "f"]),
    "c10": choice(["o%d" % i for i in range(10)]),
    "c11": choice(["o%d" % i for i in range(11)]),
    "s2": score(["x", "y"]),
    "s3": score(["x", "y", "z"]),
    "s7": score(["l%d" % i for i in range(7)]),
    "s11": score(["l%d" % i for i in range(11)]),
    "n": noul(),
}
case("temperature-every-bucket", "every bucket key (type:2, 3-5, 6-10, 11+) looked up with distinct "
     "temperatures; boundaries 2/5/6/10/11",
     predict(TICKET, ALL_BUCKETS), shape=shape_range(),
     patch={"temperature_by_options": {"choice:2": 0.7, "choice:3-5": 0.9, "choice:6-10": 1.1,
                                       "choice:11+": 1.3, "score:2": 1.5, "score:3-5": 1.7,
                                       "score:6-10": 1.9, "score:11+": 2.1, "noul:2": 2.3},
            "temperature": [4.0, 4.5, 5.0]})
case("temperature-fallback-list", "empty temperature_by_options: every bucket falls back to "
     "temperature[qtype]", predict(TICKET, ALL_BUCKETS), shape=shape_range(),
     patch={"temperature_by_options": {}, "temperature": [0.8, 2.5, 3.0]})
case("temperature-clamp-warning", "out-of-range / non-numeric temperatures are clamped to [0.5, 5] "
     "(or 1.0) with one RuntimeWarning at load (bucket entries first, then temperature[i])",
     predict(TICKET, {"c12": ALL_BUCKETS["c11"], "c2": ALL_BUCKETS["c2"], "n": noul(),
                      "s3": ALL_BUCKETS["s3"], "s7": ALL_BUCKETS["s7"]}),
     shape=shape_range(),
     patch={"temperature_by_options": {"choice:11+": 0.1006, "choice:2": 7.5, "noul:2": "hot",
                                       "score:3-5": True, "choice:3-5": 1.76},
            "temperature": [1.3, 0.2, None]})
case("min_confidence-scalar", "min_confidence 0.5: abstention passed/abstained, "
     "abstention_threshold, low_confidence flag",
     predict(TICKET, {**Q_MIXED, **{"c12": ALL_BUCKETS["c11"]}}, min_confidence=0.5),
     shape=shape_range())
case("min_confidence-map", "map {noul:2: 0.9, default: 0.5}: bucket recomputed from the answer, "
     "default for others",
     predict(TICKET, {**Q_MIXED, **{"c12": ALL_BUCKETS["c11"]}},
             min_confidence={"noul:2": 0.9, "default": 0.5}), shape=shape_range())
case("min_confidence-map-no-default", "map without 'default': unnamed buckets gate at 0.0",
     predict(TICKET, Q_MIXED, min_confidence={"choice:3-5": 0.99}), shape=shape_range())
case("min_confidence-zero-and-batch", "min_confidence 0 (int) on predict_batch: every answer passed",
     predict_batch([TICKET, SNAKE_STATE], Q_SNAKE, min_confidence=0), shape=shape_range(B=4))
case("min_confidence-one", "min_confidence 1.0: everything below 1 abstains",
     predict(TICKET, Q_MIXED, min_confidence=1.0), shape=shape_range())
case("min_confidence-empty-questions", "gate with no answers: result unchanged",
     predict(TICKET, {}, min_confidence=0.5))

# ------------------------------------------------------------------------------------------
# H. exact ties and near-ties in decoding (fake outputs chosen on purpose)

OPT32 = ["o%d" % i for i in range(32)]
case("tie-uniform-32", "32 equal logits: p = 1/32 = 0.03125 exactly -> round(., 4) = 0.0312 "
     "(ties-to-even on the exact binary value), argmax = first, confidence 0.0, score 15.5",
     predict(TICKET, {"c": choice(OPT32), "s": score(OPT32)}), shape=shape_range(), fake="uniform")
case("tie-argmax-first", "two equal top logits: argmax takes the first; noul with equal logits -> 0.5",
     predict(TICKET, {"c": choice(["x", "y", "z"]), "n": noul(), "s": score(["a", "b", "c"])}),
     shape=shape_range(), fake=["explicit", [[0.5, 0.5, -1.0], [0.25, 0.25], [-3.0, 2.0, 2.0]],
                                [[0.0, 0.0], [1.0, 1.0], [-2.0, -2.0]]])
# near-ties are filled in below (need the reference's own arithmetic to find them)

# ------------------------------------------------------------------------------------------
# G. parallel option layout (§3.10)

PAR = {"option_layout": "parallel"}
case("parallel-choice", "parallel layout: position_ids restart at the first marker for every "
     "option, option_ids = slot+1, closing [SEP]+state continue after the longest span",
     predict(TICKET, Q_CHOICE), shape=shape_range(), patch=PAR)
case("parallel-mixed-b4", "parallel layout, B4, 2 states x 3 question types incl. option_order",
     predict_batch([TICKET, TICKET_DICT],
                   {**Q_NOUL, "s": score(["none", "low", "high"], option_order=[2, 0, 1]),
                    **Q_CHOICE}), shape=shape_range(B=4), patch=PAR)
case("parallel-fixed-truncated", "parallel layout on a fixed L96 shape with a truncated state "
     "(layout computed before the max_len cut)", predict(LONG_TEXT, Q_SCORE), patch=PAR)
case("parallel-head-cut", "parallel layout when max_len cuts the head after the last marker",
     predict(TICKET, HEAD_CUT_Q, max_len=HEAD_CUT_MAX_LEN), shape=shape_range(), patch=PAR)

# ------------------------------------------------------------------------------------------
# F. errors (§5, §3.9): one case per message

ERR_SHAPE = shape_range()
errors = [
    ("err-predict_batch-bare-str", predict_batch("not a list", Q_NOUL)),
    ("err-predict_batch-bare-dict", predict_batch({"a": 1}, Q_NOUL)),
    ("err-questions-not-dict", predict(TICKET, [Q_NOUL["refund"]])),
    ("err-state-none", predict(None, Q_NOUL)),
    ("err-state-none-in-batch", predict_batch([TICKET, None], Q_NOUL)),
    ("err-qid-blank", predict(TICKET, {"  ": noul()})),
    ("err-qid-empty", predict(TICKET, {"": noul()})),
    ("err-definition-not-dict", predict(TICKET, {"q": "is it rude?"})),
    ("err-unknown-type", predict(TICKET, {"q": {"type": "yesno", "instructions": "x"}})),
    ("err-missing-type", predict(TICKET, {"q": {"instructions": "x"}})),
    ("err-no-instructions", predict(TICKET, {"q": {"type": "noul"}})),
    ("err-instructions-null", predict(TICKET, {"q": {"type": "noul", "instructions": None}})),
    ("err-instructions-blank", predict(TICKET, {"q": noul("   ")})),
    ("err-instructions-empty-list", predict(TICKET, {"q": noul([])})),
    ("err-instructions-empty-dict", predict(TICKET, {"q": noul({})})),
    ("err-choice-criteria-type", predict(TICKET, {"q": choice("a, b")})),
    ("err-choice-criteria-missing", predict(TICKET, {"q": {"type": "choice", "instructions": "x"}})),
    ("err-choice-criteria-empty", predict(TICKET, {"q": choice([])})),
    ("err-choice-label-nonscalar", predict(TICKET, {"q": choice(["a", {"b": 1}])})),
    ("err-choice-label-list", predict(TICKET, {"q": choice(["a", ["b"]])})),
    ("err-choice-label-null", predict(TICKET, {"q": choice(["a", None])})),
    ("err-choice-label-repeat", predict(TICKET, {"q": choice([1, "x", 1.0, True])})),
    ("err-choice-label-repeat-bool", predict(TICKET, {"q": choice([False, 0])})),
    ("err-score-criteria-type", predict(TICKET, {"q": score({"0": "low"})})),
    ("err-score-criteria-empty", predict(TICKET, {"q": score([])})),
    ("err-score-level-null", predict(TICKET, {"q": score(["a", "b", None])})),
    ("err-noul-criteria-type", predict(TICKET, {"q": noul(criteria="yes")})),
    ("err-noul-criteria-keys", predict(TICKET, {"q": noul(criteria={"yes": "x", "TRUE": "y"})})),
    ("err-option_order-not-permutation", predict(TICKET, {"q": choice(["a", "b", "c"],
                                                                      option_order=[0, 0, 1])})),
    ("err-option_order-bools", predict(TICKET, {"q": noul(option_order=[False, True])})),
    ("err-option_order-length", predict(TICKET, {"q": score(["a", "b"], option_order=[0, 1, 2])})),
    ("err-option_order-not-list", predict(TICKET, {"q": noul(option_order="01")})),
    ("err-labels-non-noul", predict(TICKET, {"q": choice(["a", "b"],
                                                         labels={"false": "n", "true": "y"})})),
    ("err-noul-labels-equal", predict(TICKET, {"q": noul(labels={"false": "x", "true": " x "})})),
    ("err-noul-labels-keys", predict(TICKET, {"q": noul(labels={"false": "n"})})),
    ("err-noul-labels-blank", predict(TICKET, {"q": noul(labels={"false": "  ", "true": "y"})})),
    ("err-noul-labels-nonstr", predict(TICKET, {"q": noul(labels={"false": 0, "true": "y"})})),
    ("err-first-failing-question", predict(TICKET, {"ok": noul(), "bad1": score([]),
                                                    "bad2": {"type": "x"}})),
    ("err-min_confidence-before-states", predict_batch("not a list", Q_NOUL, min_confidence=2)),
    ("err-min_confidence-range", predict(TICKET, Q_NOUL, min_confidence=1.5)),
    ("err-min_confidence-bool", predict(TICKET, Q_NOUL, min_confidence=True)),
    ("err-min_confidence-str", predict(TICKET, Q_NOUL, min_confidence="0.5")),
    ("err-min_confidence-map-key", predict(TICKET, Q_NOUL, min_confidence={"choice:7": 0.5})),
    ("err-min_confidence-map-empty", predict(TICKET, Q_NOUL, min_confidence={})),
    ("err-min_confidence-map-value", predict(TICKET, Q_NOUL,
                                             min_confidence={"default": -0.1})),
]
for name, call in errors:
    case(name, "error message (docs/host-path.md §5)", call, shape=ERR_SHAPE)

OPT34 = ["option %d" % i for i in range(34)]
case("err-markers-cut-by-max_len", "34 options on the fixed L96 shape: markers past max_len=96 "
     "-> 'only N of its 34 option markers fit'", predict(TICKET, {"many": choice(OPT34)}))
case("err-input-too-long-for-shape", "per-call max_len 128 above the fixed L96 export: the row is "
     "not re-clamped and fails at packing", predict(LONG_TEXT, Q_NOUL, max_len=128))
case("err-too-many-options-for-shape", "34 options on a flexible K=32 export -> max_options error",
     predict(TICKET, {"many": choice(OPT34)}), shape=shape_range(K=32))
case("err-batch-size-zero-shape", "degenerate shape batch_size 0 -> the packing 'Batch must "
     "contain' error (a port may reject such a shape at load instead)",
     predict(TICKET, Q_NOUL), shape=dict(shape_range(), batch_size=0))
case("err-non-finite-outputs", "a NaN in the model output -> FloatingPointError (forwards carry "
     "the NaN as the string \"NaN\")", predict(TICKET, Q_NOUL), fake="nan")
case("err-temperature-not-3", "rl_agent_config temperature with 2 entries -> load error",
     predict(TICKET, Q_NOUL), patch={"temperature": [1.0, 1.0]})
case("err-unknown-option-layout", "rl_agent_config option_layout 'diagonal' -> load error",
     predict(TICKET, Q_NOUL), patch={"option_layout": "diagonal"})
case("err-tokenizer-missing-mask", "tokenizer_config mask_token not in the vocabulary -> load error",
     predict(TICKET, Q_NOUL), tok_patch={"mask_token": "<mask>"})
case("err-tokenizer-missing-pad-object", "tokenizer_config pad_token object without content -> "
     "load error", predict(TICKET, Q_NOUL), tok_patch={"pad_token": {"id": 3}})


# ------------------------------------------------------------------------------------------


def near_tie_logit(T, boundary, side):
    """A float32 logit d such that the reference's f32 softmax([0, d] / T)[1] lands a few float32
    ulps from a 4-decimal rounding boundary (above it for side=+1, below for side=-1)."""

    def p1(d):  # the reference's arithmetic: f32 logits / T, f32 exp, f32 sum and divide
        z = np.array([0.0, d], np.float32) / T
        p = np.exp(z - z.max())
        p = p / p.sum()
        return float(p[1])

    ulp = float(np.spacing(np.float32(boundary)))
    for k in (8, 7, 9, 6, 10, 5, 11):
        target = boundary + side * k * ulp
        lo, hi = -8.0, 8.0
        for _ in range(100):  # p1 is non-decreasing in d
            mid = (lo + hi) / 2
            if p1(np.float32(mid)) < target:
                lo = mid
            else:
                hi = mid
        for d in (np.float32(hi), np.float32(lo)):
            margin = (p1(d) - boundary) * side
            if 4 * ulp <= margin <= 12 * ulp:
                return float(d), p1(d)
    raise RuntimeError("no near tie found for %r" % boundary)


def add_near_ties():
    # noul:2 temperature 1.983 (fixture config); noul = round(p[1], 4)
    rows, notes = [], []
    for boundary, side in ((0.26885, 1), (0.73115, -1), (0.50005, 1), (0.12345, -1)):
        d, p = near_tie_logit(1.983, boundary, side)
        rows.append([0.0, d])
        notes.append("p=%r (boundary %r, %s)" % (p, boundary, "above" if side > 0 else "below"))
    qs = {"n%d" % i: noul("Is statement %d true?" % i) for i in range(len(rows))}
    case("near-tie-rounding", "noul P(true) a few float32 ulps above/below a 4-decimal rounding "
         "boundary (margins 4-12 ulp, outside f32-vs-f64 noise): " + "; ".join(notes),
         predict(TICKET, qs), shape=shape_range(), fake=["explicit", rows, None])


add_near_ties()


# ------------------------------------------------------------------------------------------


def make_fake(spec):
    if isinstance(spec, str):
        return spec
    kind, rows, actions = spec
    assert kind == "explicit"
    return explicit_outputs(rows, actions)


def run_case(c):
    out = {k: c[k] for k in ("name", "covers", "agent_config_patch")}
    if c["tokenizer_config_patch"] is not None:
        out["tokenizer_config_patch"] = c["tokenizer_config_patch"]
    out["fake"] = c["fake"] if isinstance(c["fake"], str) else "explicit"
    out["shape"] = c["shape"]
    call = lr.jsonable(c["call"])
    out["call"] = call
    agent = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            agent = lr.HostAgent(
                shape=c["shape"],
                agent_config_patch=lr.jsonable(c["agent_config_patch"]),
                tokenizer_config_patch=c["tokenizer_config_patch"],
                fake=make_fake(c["fake"]),
            )
            results = lr.run_call(agent, call)
        except Exception as exc:  # noqa: BLE001 - the golden records it
            out["error"] = {"type": type(exc).__name__, "message": str(exc)}
            if agent is not None and agent.forward_log:
                out["forwards"] = [agent.forward_json(e) for e in agent.forward_log]
            return out
    out["warnings"] = [str(w.message) for w in caught]
    out["rows"] = [agent.row_json(it) for it in agent.rows_log]
    out["forwards"] = [agent.forward_json(e) for e in agent.forward_log]
    out["results"] = copy.deepcopy(results)
    return out


def ane_input_cases():
    """The ANE host's `model_inputs` validation (§5), on hand-made fixed-signature batches."""
    from safetensors.numpy import load_file

    from laya_coreml.ane import ANEAgent

    agent = ANEAgent.__new__(ANEAgent)
    agent.shape = {"batch_size": 1, "max_length": 96, "min_length": 96, "max_options": 32,
                   "flexible": False, "lengths": None}
    agent.embedding = load_file(str(lr.BUNDLE / "model.safetensors"))[
        "encoder.embeddings.tok_embeddings.weight"]
    agent.type_embedding = np.zeros((3, agent.embedding.shape[1]), np.float32)
    pos = np.arange(96)
    agent.window = np.abs(pos[:, None] - pos[None, :]) <= 16 // 2

    def good():
        b = {"input_ids": np.full((1, 96), 3, np.int32), "attention_mask": np.zeros((1, 96), np.int32),
             "marker_pos": np.zeros((1, 32), np.int32), "marker_mask": np.zeros((1, 32), np.int32),
             "qtype": np.zeros((1,), np.int32)}
        b["input_ids"][0, :5] = [1, 10, 2, 4, 2]
        b["attention_mask"][0, :5] = 1
        b["marker_pos"][0, 0] = 3
        b["marker_mask"][0, 0] = 1
        return b

    def mod(fn):
        b = good()
        fn(b)
        return b

    specs = [
        ("ane-valid", good()),
        ("ane-extra-field", mod(lambda b: b.__setitem__("position_ids", np.zeros((1, 96), np.int32)))),
        ("ane-wrong-length", mod(lambda b: b.__setitem__("input_ids", np.full((1, 95), 3, np.int32)))),
        ("ane-float-dtype", mod(lambda b: b.__setitem__("qtype", np.zeros((1,), np.float32)))),
        ("ane-token-out-of-vocab", mod(lambda b: b["input_ids"].__setitem__((0, 7), 1400))),
        ("ane-negative-token", mod(lambda b: b["input_ids"].__setitem__((0, 7), -1))),
        ("ane-mask-not-binary", mod(lambda b: b["marker_mask"].__setitem__((0, 1), 2))),
        ("ane-no-valid-key", mod(lambda b: b["attention_mask"].__setitem__((0, slice(None)), 0))),
        ("ane-bad-qtype", mod(lambda b: b["qtype"].__setitem__(0, 3))),
        ("ane-marker-outside", mod(lambda b: b["marker_pos"].__setitem__((0, 2), 96))),
    ]
    out = []
    for name, batch in specs:
        entry = {"name": name,
                 "batch": {k: {"dtype": str(v.dtype), "shape": list(v.shape), "data": v.tolist()}
                           for k, v in batch.items()}}
        try:
            res = agent.model_inputs(batch)
            entry["ok"] = {k: {"dtype": str(v.dtype), "shape": list(v.shape)} for k, v in res.items()}
            ids = np.argwhere(res["marker_map"][0, :, 0, :] == 1)
            entry["ok"]["marker_map_ones"] = ids.tolist()
        except Exception as exc:  # noqa: BLE001
            entry["error"] = {"type": type(exc).__name__, "message": str(exc)}
        out.append(entry)
    return out


def dump_doc(doc):
    """Valid JSON, one case per line (diff-friendly, compact)."""

    def one(x):
        return json.dumps(x, ensure_ascii=False, separators=(",", ":"))

    lines = ["{"]
    keys = list(doc)
    for i, key in enumerate(keys):
        tail = "," if i < len(keys) - 1 else ""
        if isinstance(doc[key], list) and doc[key] and isinstance(doc[key][0], dict):
            lines.append(" %s: [" % one(key))
            items = doc[key]
            for j, item in enumerate(items):
                lines.append("  " + one(item) + ("," if j < len(items) - 1 else ""))
            lines.append(" ]" + tail)
        else:
            lines.append(" %s: %s%s" % (one(key), one(doc[key]), tail))
    lines.append("}")
    return "\n".join(lines) + "\n"


def main():
    import tokenizers

    names = [c["name"] for c in CASES]
    assert len(names) == len(set(names)), "duplicate case names"
    cases = [run_case(c) for c in CASES]
    doc = {
        "schema": "laya-bench-host-goldens/1",
        "reference": {"package": "laya-coreml", "version": lr.REF_VERSION,
                      "tokenizers": tokenizers.__version__, "numpy": np.__version__},
        "bundle": "fixtures/tiny",
        "notes": [
            "call is exactly what the reference received (the request after a JSON round trip).",
            "shape.mode is informational; packing reads lengths/flexible/max_length/min_length.",
            "rows also carry state_stats and option_stats (build_sequence's stats) for convenience.",
            "forwards[].outputs are the fake model's float32 outputs, written as the exact Python "
            "float of each float32; non-finite values are the strings \"NaN\"/\"Infinity\".",
            "fake: hash = laya_ref.fake_outputs, uniform = all real slots 0, explicit = per-row "
            "logits set by the case, nan = hash with logits[0][0] = NaN.",
            "tokenizer_config_patch (only where present) is merged over tokenizer_config.json.",
            "ane_inputs: laya_coreml.ane.ANEAgent.model_inputs on hand-made batches (fixed "
            "B1/L96/K32 signature, V=1400).",
        ],
        "cases": cases,
        "ane_inputs": ane_input_cases(),
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(dump_doc(doc), encoding="utf-8")
    n_err = sum("error" in c for c in cases)
    print("%d cases (%d errors, %d ok), %d ane_inputs -> %s"
          % (len(cases), n_err, len(cases) - n_err, len(doc["ane_inputs"]), OUT))


if __name__ == "__main__":
    main()
