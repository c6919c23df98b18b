//! Prompt rows: question head, option spans, state and truncation (docs/host-path.md §3.4–§3.6,
//! §3.10). Row layout: `[CLS] <t> question: <ins> [SEP] [MASK] opt0 [MASK] opt1 … [SEP] <state> [SEP]`.

use super::question::{Question, RequestError};
use super::tokenizer::{Tokenizer, TokenizerError};

/// Option text tokens kept per option before the `[MASK]` is added.
pub const OPTION_TOKEN_CAP: usize = 48;

/// What the head budget did to a question's options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptionStats {
    /// Options the question defines.
    pub options: usize,
    /// Options whose (capped) token span is still distinct.
    pub distinct: usize,
    /// The per-option cap applied, if the budget forced one.
    pub tokens_per_option: Option<usize>,
}

/// What fitting the state into the row did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateStats {
    /// Tokens of the whole state.
    pub state_tokens: usize,
    /// Tokens kept in this row.
    pub state_tokens_used: usize,
    /// Tokens cut from this row.
    pub state_tokens_dropped: usize,
}

/// Parallel-layout positions and option slots, one per token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// RoPE position of each token.
    pub position_ids: Vec<u32>,
    /// 0 for shared tokens, `s + 1` for the tokens of option slot `s`.
    pub option_ids: Vec<u32>,
}

/// One model row: a question asked about a state.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Token ids.
    pub ids: Vec<u32>,
    /// Position of each option's `[MASK]`, in slot order.
    pub markers: Vec<usize>,
    /// `qtype` id.
    pub qtype: i32,
    /// Parallel layout, when the checkpoint uses it.
    pub layout: Option<Layout>,
    /// Option budget stats.
    pub options: OptionStats,
    /// State truncation stats.
    pub state: StateStats,
}

/// A question's head: `[CLS] head [SEP] [MASK] opt… [SEP]`, with marker positions.
#[derive(Debug, Clone, PartialEq)]
pub struct Head {
    /// Head token ids.
    pub ids: Vec<u32>,
    /// Marker positions in slot order.
    pub markers: Vec<usize>,
    /// Option budget stats.
    pub stats: OptionStats,
}

/// Encoded texts of one question, independent of the budgets.
#[derive(Debug, Clone, PartialEq)]
pub struct QuestionTokens {
    /// `"<t> question: <ins>"`, mask-sanitized.
    pub head: Vec<u32>,
    /// `" " + option`, mask-sanitized, capped at 48 tokens, in label-index order.
    pub options: Vec<Vec<u32>>,
}

/// Encode a question's head text and option texts.
pub fn encode_question(tok: &Tokenizer, q: &Question) -> Result<QuestionTokens, TokenizerError> {
    let mask = tok.mask.text.as_str();
    let ins = q.instructions.replace(mask, " ");
    let head = tok.encode(&format!("{} question: {}", q.qtype.name(), ins))?;
    let mut options = Vec::with_capacity(q.options.len());
    let mut text = String::new();
    for opt in &q.options {
        text.clear();
        text.push(' ');
        text.push_str(&opt.replace(mask, " "));
        let mut ids = tok.encode(&text)?;
        ids.truncate(OPTION_TOKEN_CAP);
        options.push(ids);
    }
    Ok(QuestionTokens { head, options })
}

/// `build_head`: apply the head budget and assemble the head with its markers.
pub fn build_head(tok: &Tokenizer, qt: &QuestionTokens, q: &Question, head_max_len: usize) -> Head {
    let n = qt.options.len();
    let order: Vec<usize> = q.option_order.clone().unwrap_or_else(|| (0..n).collect());
    let span = |i: usize, cap: usize| -> Vec<u32> {
        let mut v = Vec::with_capacity(qt.options[i].len() + 1);
        v.push(tok.mask.id);
        v.extend_from_slice(&qt.options[i]);
        v.truncate(cap);
        v
    };
    let mut spans: Vec<Vec<u32>> = order.iter().map(|&i| span(i, usize::MAX)).collect();
    let hml = head_max_len as i64;
    let total = |s: &[Vec<u32>]| s.iter().map(Vec::len).sum::<usize>() as i64;
    let mut budget = hml - total(&spans);
    let mut per_option = None;
    if budget < 16 {
        let per = 4.max((hml - 16).div_euclid(n.max(1) as i64)) as usize;
        per_option = Some(per);
        for s in &mut spans {
            s.truncate(per);
        }
        budget = hml - total(&spans);
    }
    let keep = budget.max(8) as usize;
    let head_len = qt.head.len().min(keep);
    let mut ids = Vec::with_capacity(head_len + 3 + total(&spans) as usize);
    ids.push(tok.cls.id);
    ids.extend_from_slice(&qt.head[..head_len]);
    ids.push(tok.sep.id);
    let mut markers = Vec::with_capacity(n);
    for s in &spans {
        markers.push(ids.len());
        ids.extend_from_slice(s);
    }
    ids.push(tok.sep.id);
    let mut distinct: Vec<&Vec<u32>> = spans.iter().collect();
    distinct.sort();
    distinct.dedup();
    Head {
        ids,
        markers,
        stats: OptionStats { options: n, distinct: distinct.len(), tokens_per_option: per_option },
    }
}

/// `build_sequence`: head + state (cut to the room left) + `[SEP]`, clamped to `max_len`.
///
/// Fails with the reference's message when an option marker does not fit in `max_len`.
#[allow(clippy::too_many_arguments)]
pub fn build_row(
    tok: &Tokenizer,
    head: &Head,
    q: &Question,
    state_ids: &[u32],
    truncate_left: bool,
    max_len: usize,
    head_max_len: usize,
    parallel: bool,
) -> Result<Row, RequestError> {
    let head_len = head.ids.len();
    let room = max_len.saturating_sub(head_len + 1);
    let st: &[u32] = if truncate_left {
        &state_ids[state_ids.len().saturating_sub(room)..]
    } else {
        &state_ids[..room.min(state_ids.len())]
    };
    let mut ids = Vec::with_capacity(head_len + st.len() + 1);
    ids.extend_from_slice(&head.ids);
    ids.extend_from_slice(st);
    ids.push(tok.sep.id);
    let layout = parallel.then(|| parallel_layout(&head.markers, head_len, ids.len()));
    ids.truncate(max_len);
    let markers: Vec<usize> = head.markers.iter().copied().filter(|&m| m < max_len).collect();
    if markers.len() != head.stats.options {
        return Err(RequestError::Value(format!(
            "question {}: only {} of its {} option markers fit in max_len={} with head_max_len={} spent on the question; lower head_max_len, raise max_len, or use fewer options",
            super::pyjson::str_repr(&q.id),
            markers.len(),
            head.stats.options,
            max_len,
            head_max_len
        )));
    }
    let layout = layout.map(|mut l| {
        l.position_ids.truncate(max_len);
        l.option_ids.truncate(max_len);
        l
    });
    Ok(Row {
        ids,
        markers,
        qtype: q.qtype as i32,
        layout,
        options: head.stats,
        state: StateStats {
            state_tokens: state_ids.len(),
            state_tokens_used: st.len(),
            state_tokens_dropped: state_ids.len() - st.len(),
        },
    })
}

/// `parallel_layout`: every option restarts at the first marker's position; the head's closing
/// `[SEP]` and the state continue after the longest option.
pub fn parallel_layout(markers: &[usize], head_len: usize, length: usize) -> Layout {
    if markers.is_empty() {
        return Layout { position_ids: (0..length as u32).collect(), option_ids: vec![0; length] };
    }
    let start = markers[0];
    let mut position_ids: Vec<u32> = (0..start as u32).collect();
    let mut option_ids = vec![0u32; start];
    let mut longest = 0;
    for (s, &a) in markers.iter().enumerate() {
        let b = markers.get(s + 1).copied().unwrap_or(head_len - 1);
        let width = b.saturating_sub(a);
        longest = longest.max(width);
        position_ids.extend((start..start + width).map(|p| p as u32));
        option_ids.extend(std::iter::repeat_n(s as u32 + 1, width));
    }
    let after = start + longest;
    let rest = length.saturating_sub(position_ids.len());
    position_ids.extend((after..after + rest).map(|p| p as u32));
    option_ids.extend(std::iter::repeat_n(0, rest));
    Layout { position_ids, option_ids }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parallel_layout_matches_reference_example() {
        // markers [9, 17, 24], head's closing [SEP] at 29 (head_len 30), 38 tokens in all.
        let l = parallel_layout(&[9, 17, 24], 30, 38);
        let mut want: Vec<u32> = (0..9).collect();
        want.extend(9..17);
        want.extend(9..16);
        want.extend(9..14);
        want.extend(17..26);
        assert_eq!(l.position_ids, want);
        let mut opts = vec![0u32; 9];
        opts.extend([1; 8]);
        opts.extend([2; 7]);
        opts.extend([3; 5]);
        opts.extend([0; 9]);
        assert_eq!(l.option_ids, opts);
    }
}
