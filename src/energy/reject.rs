//! Run-rejection rules (docs/methodology.md, "Rejection rules").
//!
//! The whole run is rejected on any of: a missing reading (a fault, or a lost sequence
//! number), a non-finite, non-positive or above-cap reading, a gap between consecutive
//! samples longer than max(2 s, 3 × sample interval), non-monotonic timestamps, or a sensor
//! that stops (a fatal fault, or samples that end before the run does). For energy counters
//! the same limits apply to the power implied by each pair of readings.
//!
//! Every violation is reported, not just the first, as a [`Rejection`] naming the rule, the
//! sample(s) by sequence number and receive time, and their raw values. Nothing is deleted,
//! clipped or repaired here.

use super::integrate::counter_delta_j;
use super::{CounterPoint, EnergyError, WattPoint, Window};
use serde::{Deserialize, Serialize};
use std::fmt;

/// What the raw record holds for one sample.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Observed {
    /// A value (watts, or joules for a counter), exactly as received.
    Value {
        /// The value.
        value: f64,
    },
    /// No value: the sensor faulted.
    Missing {
        /// The fault message.
        reason: String,
        /// Whether the sensor stopped for good.
        fatal: bool,
    },
}

/// One sample as the rules see it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RawPoint {
    /// Sequence number from the sampler.
    pub seq: u64,
    /// Receive time, seconds.
    pub t_s: f64,
    /// What was received.
    pub value: Observed,
}

impl RawPoint {
    /// A sample with a value.
    pub fn value(seq: u64, t_s: f64, value: f64) -> Self {
        RawPoint { seq, t_s, value: Observed::Value { value } }
    }

    /// A sample whose read faulted.
    pub fn missing(seq: u64, t_s: f64, reason: &str, fatal: bool) -> Self {
        RawPoint { seq, t_s, value: Observed::Missing { reason: reason.to_string(), fatal } }
    }

    fn at(&self) -> SampleRef {
        SampleRef { seq: self.seq, t_s: self.t_s }
    }
}

/// Limits the rules apply.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Rules {
    /// Readings above this are rejected (`--max-watts`, default 500): a loose sanity cap,
    /// not an accuracy bound.
    pub max_watts: f64,
    /// The sampler's interval, seconds (`--sample-interval`).
    pub sample_interval_s: f64,
}

impl Rules {
    /// The default cap, watts.
    pub const DEFAULT_MAX_WATTS: f64 = 500.0;

    /// Rules for a cap and a sample interval.
    pub fn new(max_watts: f64, sample_interval_s: f64) -> Self {
        Rules { max_watts, sample_interval_s }
    }

    /// The longest allowed gap: max(2 s, 3 × interval).
    pub fn max_gap_s(&self) -> f64 {
        (3.0 * self.sample_interval_s).max(2.0)
    }
}

/// A sample named in a rejection.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SampleRef {
    /// Sequence number.
    pub seq: u64,
    /// Receive time, seconds.
    pub t_s: f64,
}

impl fmt::Display for SampleRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sample {} at {:.3} s", self.seq, self.t_s)
    }
}

/// Two times in seconds, with the fewest decimals (3 to 9) at which they read differently, so
/// that a message comparing them never shows two equal figures.
fn apart(a: f64, b: f64) -> (String, String) {
    let mut d = 3;
    while d < 9 && format!("{a:.d$}") == format!("{b:.d$}") {
        d += 1;
    }
    (format!("{a:.d$}"), format!("{b:.d$}"))
}

/// One violated rule; any rejection rejects the whole run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "rule", rename_all = "snake_case")]
pub enum Rejection {
    /// No samples at all.
    NoSamples,
    /// The sensor returned a fault instead of a reading.
    MissingReading {
        /// The sample.
        sample: SampleRef,
        /// The fault message.
        reason: String,
    },
    /// Sequence numbers jump: samples were lost between these two.
    LostSamples {
        /// Last sample before the hole.
        before: SampleRef,
        /// First sample after it.
        after: SampleRef,
        /// How many sequence numbers are missing.
        missing: u64,
    },
    /// NaN or infinite value.
    NonFinite {
        /// The sample.
        sample: SampleRef,
        /// The value as text (`NaN`, `inf`, `-inf`).
        raw: String,
    },
    /// Zero or negative watts.
    NonPositive {
        /// The sample.
        sample: SampleRef,
        /// The value.
        watts: f64,
    },
    /// Watts above the cap.
    AboveCap {
        /// The sample.
        sample: SampleRef,
        /// The value.
        watts: f64,
        /// The cap.
        max_watts: f64,
    },
    /// Too long between two consecutive samples.
    Gap {
        /// Earlier sample.
        before: SampleRef,
        /// Later sample.
        after: SampleRef,
        /// The gap, seconds.
        gap_s: f64,
        /// The allowed maximum, seconds.
        max_gap_s: f64,
    },
    /// A receive time not after the previous one (or not finite).
    NonMonotonicTime {
        /// Earlier sample.
        before: SampleRef,
        /// Later sample.
        after: SampleRef,
    },
    /// The sensor reported that it stopped for good.
    SensorStopped {
        /// The fault sample.
        sample: SampleRef,
        /// The fault message.
        reason: String,
    },
    /// Sampling began after the run window began.
    StartsAfterWindow {
        /// First sample.
        first: SampleRef,
        /// Window start, seconds.
        window_start_s: f64,
    },
    /// Samples end before the run window ends: the sensor stopped.
    EndsBeforeWindow {
        /// Last sample.
        last: SampleRef,
        /// Window end, seconds.
        window_end_s: f64,
    },
    /// A counter without wrap range went down.
    CounterDecreased {
        /// Earlier sample.
        before: SampleRef,
        /// Later sample.
        after: SampleRef,
        /// Earlier value, J.
        before_j: f64,
        /// Later value, J.
        after_j: f64,
    },
    /// A counter value below 0 or above its wrap range.
    CounterOutOfRange {
        /// The sample.
        sample: SampleRef,
        /// The value, J.
        joules: f64,
        /// The wrap range, J (`None` if the counter has none).
        wrap_j: Option<f64>,
    },
    /// A counter did not advance between two samples (frozen or not publishing): the implied
    /// power is not positive.
    CounterNotAdvancing {
        /// Earlier sample.
        before: SampleRef,
        /// Later sample.
        after: SampleRef,
        /// Earlier value, J.
        before_j: f64,
        /// Later value, J.
        after_j: f64,
    },
    /// The power implied by two counter readings is above the cap.
    CounterPowerAboveCap {
        /// Earlier sample.
        before: SampleRef,
        /// Later sample.
        after: SampleRef,
        /// Earlier value, J.
        before_j: f64,
        /// Later value, J.
        after_j: f64,
        /// Implied watts.
        watts: f64,
        /// The cap.
        max_watts: f64,
    },
    /// A block that ran to its end holds fewer samples strictly inside it than the minimum
    /// ([`super::sampling::MIN_SAMPLES_IN_WINDOW`]): the meter delivered slower than requested.
    TooFewSamplesInBlock {
        /// Block index.
        block: u32,
        /// Block start, seconds.
        start_s: f64,
        /// Block end, seconds.
        end_s: f64,
        /// Samples received strictly inside the block.
        samples: usize,
        /// The minimum.
        min_samples: usize,
        /// The largest gap between consecutive samples covering the block, seconds.
        max_gap_s: Option<f64>,
        /// The sample before that gap.
        gap_before: Option<SampleRef>,
        /// The sample after that gap.
        gap_after: Option<SampleRef>,
    },
}

impl Rejection {
    /// The rule's stable name (also the `rule` tag in JSON).
    pub fn rule(&self) -> &'static str {
        match self {
            Rejection::NoSamples => "no_samples",
            Rejection::MissingReading { .. } => "missing_reading",
            Rejection::LostSamples { .. } => "lost_samples",
            Rejection::NonFinite { .. } => "non_finite",
            Rejection::NonPositive { .. } => "non_positive",
            Rejection::AboveCap { .. } => "above_cap",
            Rejection::Gap { .. } => "gap",
            Rejection::NonMonotonicTime { .. } => "non_monotonic_time",
            Rejection::SensorStopped { .. } => "sensor_stopped",
            Rejection::StartsAfterWindow { .. } => "starts_after_window",
            Rejection::EndsBeforeWindow { .. } => "ends_before_window",
            Rejection::CounterDecreased { .. } => "counter_decreased",
            Rejection::CounterOutOfRange { .. } => "counter_out_of_range",
            Rejection::CounterNotAdvancing { .. } => "counter_not_advancing",
            Rejection::CounterPowerAboveCap { .. } => "counter_power_above_cap",
            Rejection::TooFewSamplesInBlock { .. } => "too_few_samples_in_block",
        }
    }
}

impl Rejection {
    /// The samples this rejection names, in the order it names them.
    pub fn samples(&self) -> Vec<SampleRef> {
        match self {
            Rejection::NoSamples => vec![],
            Rejection::MissingReading { sample, .. }
            | Rejection::NonFinite { sample, .. }
            | Rejection::NonPositive { sample, .. }
            | Rejection::AboveCap { sample, .. }
            | Rejection::SensorStopped { sample, .. }
            | Rejection::CounterOutOfRange { sample, .. } => vec![*sample],
            Rejection::LostSamples { before, after, .. }
            | Rejection::Gap { before, after, .. }
            | Rejection::NonMonotonicTime { before, after }
            | Rejection::CounterDecreased { before, after, .. }
            | Rejection::CounterNotAdvancing { before, after, .. }
            | Rejection::CounterPowerAboveCap { before, after, .. } => vec![*before, *after],
            Rejection::StartsAfterWindow { first, .. } => vec![*first],
            Rejection::EndsBeforeWindow { last, .. } => vec![*last],
            Rejection::TooFewSamplesInBlock { gap_before, gap_after, .. } => {
                gap_before.iter().chain(gap_after.iter()).copied().collect()
            }
        }
    }
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.rule())?;
        match self {
            Rejection::NoSamples => write!(f, "the run has no power samples"),
            Rejection::MissingReading { sample, reason } => {
                write!(f, "{sample} has no reading ({reason})")
            }
            Rejection::LostSamples {
                before,
                after,
                missing,
            } => write!(f, "{missing} sample(s) lost between {before} and {after}"),
            Rejection::NonFinite { sample, raw } => write!(f, "{sample} reads {raw}"),
            Rejection::NonPositive { sample, watts } => write!(f, "{sample} reads {watts} W"),
            Rejection::AboveCap {
                sample,
                watts,
                max_watts,
            } => write!(f, "{sample} reads {watts} W, above the {max_watts} W cap"),
            Rejection::Gap {
                before,
                after,
                gap_s,
                max_gap_s,
            } => write!(
                f,
                "{gap_s:.3} s between {before} and {after}, longer than {max_gap_s:.3} s"
            ),
            Rejection::NonMonotonicTime { before, after } => {
                write!(f, "{after} does not come after {before}")
            }
            Rejection::SensorStopped { sample, reason } => {
                write!(f, "sensor stopped at {sample} ({reason})")
            }
            Rejection::StartsAfterWindow {
                first,
                window_start_s,
            } => {
                let (t, w) = apart(first.t_s, *window_start_s);
                write!(f, "first sample {} at {t} s is after the run start at {w} s", first.seq)
            }
            Rejection::EndsBeforeWindow { last, window_end_s } => {
                let (t, w) = apart(last.t_s, *window_end_s);
                write!(f, "last sample {} at {t} s is before the run end at {w} s", last.seq)
            }
            Rejection::CounterDecreased {
                before,
                after,
                before_j,
                after_j,
            } => write!(
                f,
                "counter went from {before_j} J ({before}) down to {after_j} J ({after}) and has no wrap range"
            ),
            Rejection::CounterOutOfRange {
                sample,
                joules,
                wrap_j,
            } => match wrap_j {
                Some(w) => write!(f, "{sample} reads {joules} J, outside [0, {w}] J"),
                None => write!(f, "{sample} reads {joules} J, below 0"),
            },
            Rejection::CounterNotAdvancing {
                before,
                after,
                before_j,
                after_j,
            } => write!(
                f,
                "counter did not advance: {before_j} J ({before}) then {after_j} J ({after})"
            ),
            Rejection::CounterPowerAboveCap {
                before,
                after,
                before_j,
                after_j,
                watts,
                max_watts,
            } => write!(
                f,
                "{before_j} J ({before}) to {after_j} J ({after}) implies {watts} W, above the {max_watts} W cap"
            ),
            Rejection::TooFewSamplesInBlock {
                block,
                start_s,
                end_s,
                samples,
                min_samples,
                max_gap_s,
                gap_before,
                gap_after,
            } => {
                let noun = if *samples == 1 { "sample" } else { "samples" };
                write!(
                    f,
                    "block {block} [{start_s:.3}, {end_s:.3}] s holds {samples} {noun} strictly inside it, fewer than the {min_samples} required"
                )?;
                match (max_gap_s, gap_before, gap_after) {
                    (Some(g), Some(a), Some(b)) => {
                        write!(f, "; the largest gap covering it is {g:.3} s, between {a} and {b}")
                    }
                    _ => Ok(()),
                }
            }
        }
    }
}

/// Rules common to both series kinds: missing/stopped samples, sequence holes, time order,
/// gaps and window coverage.
fn check_common(points: &[RawPoint], window: Option<Window>, rules: &Rules, out: &mut Vec<Rejection>) {
    let (Some(first), Some(last)) = (points.first(), points.last()) else {
        out.push(Rejection::NoSamples);
        return;
    };
    check_missing(points, out);
    let max_gap_s = rules.max_gap_s();
    for pair in points.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        if b.seq > a.seq + 1 {
            out.push(Rejection::LostSamples { before: a.at(), after: b.at(), missing: b.seq - a.seq - 1 });
        }
        let ordered = a.t_s.is_finite() && b.t_s.is_finite() && b.t_s > a.t_s;
        if !ordered {
            out.push(Rejection::NonMonotonicTime { before: a.at(), after: b.at() });
            continue;
        }
        let gap_s = b.t_s - a.t_s;
        if gap_s > max_gap_s {
            out.push(Rejection::Gap { before: a.at(), after: b.at(), gap_s, max_gap_s });
        }
    }
    if let Some(w) = window {
        // Written so that a NaN time also fails.
        let starts_in_time = first.t_s <= w.start_s;
        let ends_in_time = last.t_s >= w.end_s;
        if !starts_in_time {
            out.push(Rejection::StartsAfterWindow { first: first.at(), window_start_s: w.start_s });
        }
        if !ends_in_time {
            out.push(Rejection::EndsBeforeWindow { last: last.at(), window_end_s: w.end_s });
        }
    }
}

/// A fault in place of a reading: `sensor_stopped` when fatal, else `missing_reading`.
fn check_missing(points: &[RawPoint], out: &mut Vec<Rejection>) {
    for p in points {
        if let Observed::Missing { reason, fatal } = &p.value {
            if *fatal {
                out.push(Rejection::SensorStopped { sample: p.at(), reason: reason.clone() });
            } else {
                out.push(Rejection::MissingReading { sample: p.at(), reason: reason.clone() });
            }
        }
    }
}

/// The rules one power reading must pass on its own: finite, positive, at most the cap.
fn check_watts(points: &[RawPoint], rules: &Rules, out: &mut Vec<Rejection>) {
    for p in points {
        let Observed::Value { value: watts } = p.value else {
            continue;
        };
        if !watts.is_finite() {
            out.push(Rejection::NonFinite { sample: p.at(), raw: watts.to_string() });
        } else if watts <= 0.0 {
            out.push(Rejection::NonPositive { sample: p.at(), watts });
        } else if watts > rules.max_watts {
            out.push(Rejection::AboveCap { sample: p.at(), watts, max_watts: rules.max_watts });
        }
    }
}

/// The rules one counter reading must pass on its own: finite, within `[0, wrap]`.
fn check_joules(points: &[RawPoint], wrap_j: Option<f64>, out: &mut Vec<Rejection>) {
    for p in points {
        let Observed::Value { value: joules } = p.value else {
            continue;
        };
        if !joules.is_finite() {
            out.push(Rejection::NonFinite { sample: p.at(), raw: joules.to_string() });
        } else if !(joules >= 0.0 && wrap_j.is_none_or(|w| joules <= w)) {
            out.push(Rejection::CounterOutOfRange { sample: p.at(), joules, wrap_j });
        }
    }
}

/// All rule violations in a power series. `window` is the span the run must cover (from
/// before the first block to after the last idle window); `None` skips the coverage rules.
pub fn check_power(points: &[RawPoint], window: Option<Window>, rules: &Rules) -> Vec<Rejection> {
    let mut out = Vec::new();
    check_common(points, window, rules, &mut out);
    check_watts(points, rules, &mut out);
    out
}

/// The rules each single power reading must pass (a fault in its place, non-finite,
/// non-positive, above the cap), without the series rules (gaps, order, coverage): what the
/// readings taken before measuring are judged by.
pub fn check_power_readings(points: &[RawPoint], rules: &Rules) -> Vec<Rejection> {
    let mut out = Vec::new();
    check_missing(points, &mut out);
    check_watts(points, rules, &mut out);
    out
}

/// [`check_power_readings`] for one energy-counter channel: a fault, a non-finite value or
/// one outside `[0, wrap]`.
pub fn check_counter_readings(points: &[RawPoint], wrap_j: Option<f64>) -> Vec<Rejection> {
    let mut out = Vec::new();
    check_missing(points, &mut out);
    check_joules(points, wrap_j, &mut out);
    out
}

/// All rule violations in an energy-counter series with wrap range `wrap_j`: the common
/// rules, values outside `[0, wrap]`, decreases without a wrap range, and the power implied by
/// each pair of consecutive readings (must be positive and at most the cap).
pub fn check_counter(
    points: &[RawPoint],
    wrap_j: Option<f64>,
    window: Option<Window>,
    rules: &Rules,
) -> Vec<Rejection> {
    let mut out = Vec::new();
    check_common(points, window, rules, &mut out);
    let mut prev: Option<(&RawPoint, f64)> = None;
    for p in points {
        let Observed::Value { value: joules } = p.value else {
            prev = None;
            continue;
        };
        if !joules.is_finite() {
            out.push(Rejection::NonFinite { sample: p.at(), raw: joules.to_string() });
            prev = None;
            continue;
        }
        let in_range = joules >= 0.0 && wrap_j.is_none_or(|w| joules <= w);
        if !in_range {
            out.push(Rejection::CounterOutOfRange { sample: p.at(), joules, wrap_j });
            prev = None;
            continue;
        }
        if let Some((a, before_j)) = prev {
            let dt = p.t_s - a.t_s;
            match counter_delta_j(before_j, joules, wrap_j) {
                Err(EnergyError::CounterDecreased { .. }) => out.push(Rejection::CounterDecreased {
                    before: a.at(),
                    after: p.at(),
                    before_j,
                    after_j: joules,
                }),
                // Range and finiteness were checked above; a bad wrap shows as out of range.
                Err(_) => {}
                Ok(delta) if dt > 0.0 => {
                    let watts = delta / dt;
                    if delta <= 0.0 {
                        out.push(Rejection::CounterNotAdvancing {
                            before: a.at(),
                            after: p.at(),
                            before_j,
                            after_j: joules,
                        });
                    } else if watts > rules.max_watts {
                        out.push(Rejection::CounterPowerAboveCap {
                            before: a.at(),
                            after: p.at(),
                            before_j,
                            after_j: joules,
                            watts,
                            max_watts: rules.max_watts,
                        });
                    }
                }
                // Non-monotonic time is already reported by the common rules.
                Ok(_) => {}
            }
        }
        prev = Some((p, joules));
    }
    out
}

/// Check a power series and, only if no rule is violated, return it as integrable points.
pub fn validate_power(
    points: &[RawPoint],
    window: Option<Window>,
    rules: &Rules,
) -> Result<Vec<WattPoint>, Vec<Rejection>> {
    let rejections = check_power(points, window, rules);
    if !rejections.is_empty() {
        return Err(rejections);
    }
    Ok(points
        .iter()
        .filter_map(|p| match p.value {
            Observed::Value { value } => Some(WattPoint { t_s: p.t_s, watts: value }),
            Observed::Missing { .. } => None,
        })
        .collect())
}

/// Check a counter series and, only if no rule is violated, return it as integrable points.
pub fn validate_counter(
    points: &[RawPoint],
    wrap_j: Option<f64>,
    window: Option<Window>,
    rules: &Rules,
) -> Result<Vec<CounterPoint>, Vec<Rejection>> {
    let rejections = check_counter(points, wrap_j, window, rules);
    if !rejections.is_empty() {
        return Err(rejections);
    }
    Ok(points
        .iter()
        .filter_map(|p| match p.value {
            Observed::Value { value } => Some(CounterPoint { t_s: p.t_s, joules: value }),
            Observed::Missing { .. } => None,
        })
        .collect())
}

/// Counts and extremes of a power series for the report ("1,101 samples, max gap 0.510 s,
/// max 74.47 W").
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SeriesSummary {
    /// Samples.
    pub count: usize,
    /// Longest gap between consecutive samples, seconds (`None` with fewer than 2).
    pub max_gap_s: Option<f64>,
    /// Lowest watts (`None` if empty).
    pub min_watts: Option<f64>,
    /// Highest watts (`None` if empty).
    pub max_watts: Option<f64>,
}

/// Summarise a power series.
pub fn summarize(points: &[WattPoint]) -> SeriesSummary {
    let fold = |f: fn(f64, f64) -> f64| points.iter().map(|p| p.watts).reduce(f);
    SeriesSummary {
        count: points.len(),
        max_gap_s: points.windows(2).map(|w| w[1].t_s - w[0].t_s).reduce(f64::max),
        min_watts: fold(f64::min),
        max_watts: fold(f64::max),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Samples every 0.5 s at `watts`, seq 0..n.
    fn steady(n: u64, watts: f64) -> Vec<RawPoint> {
        (0..n).map(|i| RawPoint::value(i, i as f64 * 0.5, watts)).collect()
    }

    fn rules() -> Rules {
        Rules::new(Rules::DEFAULT_MAX_WATTS, 0.5)
    }

    #[test]
    fn window_messages_show_the_two_times_apart() {
        let r =
            Rejection::EndsBeforeWindow { last: SampleRef { seq: 12, t_s: 1.4692 }, window_end_s: 1.46938 };
        assert_eq!(
            r.to_string(),
            "ends_before_window: last sample 12 at 1.4692 s is before the run end at 1.4694 s"
        );
        let r = Rejection::StartsAfterWindow { first: SampleRef { seq: 0, t_s: 2.5 }, window_start_s: 1.25 };
        assert_eq!(
            r.to_string(),
            "starts_after_window: first sample 0 at 2.500 s is after the run start at 1.250 s"
        );
        // at most nine decimals, even for times that never read differently
        assert_eq!(apart(1.0, 1.0 + 1e-12), ("1.000000000".to_string(), "1.000000000".to_string()));
    }

    #[test]
    fn a_clean_series_passes_and_validates() {
        let p = steady(5, 30.75);
        assert_eq!(check_power(&p, Some(Window::new(0.0, 2.0).unwrap()), &rules()), vec![]);
        let w = validate_power(&p, None, &rules()).unwrap();
        assert_eq!(w.len(), 5);
        assert_eq!(w[4], WattPoint { t_s: 2.0, watts: 30.75 });
    }

    #[test]
    fn a_40089_w_sample_is_rejected_by_the_500_w_cap_with_its_value() {
        let mut p = steady(6, 61.39);
        p[3] = RawPoint::value(3, 1.5, 40_089.0);
        let r = check_power(&p, None, &rules());
        assert_eq!(
            r,
            vec![Rejection::AboveCap {
                sample: SampleRef { seq: 3, t_s: 1.5 },
                watts: 40_089.0,
                max_watts: 500.0
            }]
        );
        assert_eq!(r[0].rule(), "above_cap");
        assert_eq!(r[0].to_string(), "above_cap: sample 3 at 1.500 s reads 40089 W, above the 500 W cap");
        let json = serde_json::to_string(&r[0]).unwrap();
        assert!(json.contains("\"rule\":\"above_cap\"") && json.contains("40089"), "{json}");
        assert!(validate_power(&p, None, &rules()).is_err());
    }

    #[test]
    fn the_cap_is_configurable_and_inclusive() {
        let p = vec![RawPoint::value(0, 0.0, 500.0), RawPoint::value(1, 0.5, 74.47)];
        assert!(check_power(&p, None, &rules()).is_empty());
        let r = check_power(&p, None, &Rules::new(100.0, 0.5));
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].rule(), "above_cap");
    }

    #[test]
    fn a_2_1_s_gap_at_0_5_s_interval_is_rejected() {
        let p = vec![
            RawPoint::value(0, 0.0, 30.0),
            RawPoint::value(1, 0.5, 30.0),
            RawPoint::value(2, 1.0, 30.0),
            RawPoint::value(3, 3.1, 30.0),
        ];
        let r = check_power(&p, None, &rules());
        assert_eq!(r.len(), 1);
        match &r[0] {
            Rejection::Gap { before, after, gap_s, max_gap_s } => {
                assert_eq!((before.seq, after.seq), (2, 3));
                assert!((gap_s - 2.1).abs() < 1e-12);
                assert_eq!(*max_gap_s, 2.0);
            }
            other => panic!("{other:?}"),
        }
        assert!(r[0].to_string().contains("2.100 s between sample 2 at 1.000 s and sample 3 at 3.100 s"));
    }

    #[test]
    fn a_1_4_s_gap_is_accepted_and_exactly_the_limit_too() {
        let p = vec![
            RawPoint::value(0, 0.0, 30.0),
            RawPoint::value(1, 0.5, 30.0),
            RawPoint::value(2, 1.9, 30.0),
            RawPoint::value(3, 3.9, 30.0), // exactly 2.0 s: not longer than the limit
        ];
        assert_eq!(check_power(&p, None, &rules()), vec![]);
    }

    #[test]
    fn the_gap_limit_grows_with_a_long_interval() {
        // 1 s interval → max gap 3 s: 2.5 s passes, 3.2 s does not.
        let r = Rules::new(500.0, 1.0);
        assert_eq!(r.max_gap_s(), 3.0);
        let p =
            vec![RawPoint::value(0, 0.0, 30.0), RawPoint::value(1, 2.5, 30.0), RawPoint::value(2, 5.7, 30.0)];
        let rej = check_power(&p, None, &r);
        assert_eq!(rej.len(), 1);
        assert!(matches!(rej[0], Rejection::Gap { before: SampleRef { seq: 1, .. }, .. }));
    }

    #[test]
    fn non_positive_and_non_finite_readings_are_rejected_with_raw_values() {
        let p = vec![
            RawPoint::value(0, 0.0, 0.0),
            RawPoint::value(1, 0.5, -2.5),
            RawPoint::value(2, 1.0, f64::NAN),
            RawPoint::value(3, 1.5, f64::INFINITY),
            RawPoint::value(4, 2.0, 10.0),
        ];
        let r = check_power(&p, None, &rules());
        assert_eq!(
            r,
            vec![
                Rejection::NonPositive { sample: SampleRef { seq: 0, t_s: 0.0 }, watts: 0.0 },
                Rejection::NonPositive { sample: SampleRef { seq: 1, t_s: 0.5 }, watts: -2.5 },
                Rejection::NonFinite { sample: SampleRef { seq: 2, t_s: 1.0 }, raw: "NaN".into() },
                Rejection::NonFinite { sample: SampleRef { seq: 3, t_s: 1.5 }, raw: "inf".into() },
            ]
        );
    }

    #[test]
    fn missing_readings_and_lost_sequence_numbers_are_rejected() {
        let p = vec![
            RawPoint::value(0, 0.0, 30.0),
            RawPoint::missing(1, 0.5, "read failed: pstr: kIOReturnTimeout", false),
            RawPoint::value(2, 1.0, 30.0),
            RawPoint::value(5, 1.5, 30.0),
        ];
        let r = check_power(&p, None, &rules());
        assert_eq!(
            r,
            vec![
                Rejection::MissingReading {
                    sample: SampleRef { seq: 1, t_s: 0.5 },
                    reason: "read failed: pstr: kIOReturnTimeout".into()
                },
                Rejection::LostSamples {
                    before: SampleRef { seq: 2, t_s: 1.0 },
                    after: SampleRef { seq: 5, t_s: 1.5 },
                    missing: 2
                },
            ]
        );
    }

    #[test]
    fn a_sensor_that_stops_is_rejected_both_ways() {
        let p = vec![
            RawPoint::value(0, 0.0, 30.0),
            RawPoint::value(1, 0.5, 30.0),
            RawPoint::missing(2, 0.7, "sensor stopped: exec:meter: exited (exit status: 1)", true),
        ];
        let r = check_power(&p, Some(Window::new(0.0, 10.0).unwrap()), &rules());
        assert_eq!(r.len(), 2, "{r:?}");
        assert_eq!(r[0].rule(), "sensor_stopped");
        assert!(r[0].to_string().contains("exit status: 1"));
        assert_eq!(
            r[1],
            Rejection::EndsBeforeWindow { last: SampleRef { seq: 2, t_s: 0.7 }, window_end_s: 10.0 }
        );
        // Sampling that starts late is rejected too.
        let p = steady(3, 30.0);
        let r = check_power(&p, Some(Window::new(-0.1, 1.0).unwrap()), &rules());
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].rule(), "starts_after_window");
    }

    #[test]
    fn non_monotonic_timestamps_are_rejected() {
        let p = vec![
            RawPoint::value(0, 0.0, 30.0),
            RawPoint::value(1, 0.5, 30.0),
            RawPoint::value(2, 0.5, 30.0),
            RawPoint::value(3, 0.4, 30.0),
            RawPoint::value(4, f64::NAN, 30.0),
        ];
        let r = check_power(&p, None, &rules());
        let rules_hit: Vec<&str> = r.iter().map(Rejection::rule).collect();
        assert_eq!(rules_hit, ["non_monotonic_time"; 3]);
        assert!(matches!(
            r[0],
            Rejection::NonMonotonicTime { before: SampleRef { seq: 1, .. }, after: SampleRef { seq: 2, .. } }
        ));
    }

    #[test]
    fn an_empty_series_is_rejected() {
        assert_eq!(check_power(&[], None, &rules()), vec![Rejection::NoSamples]);
        assert_eq!(check_counter(&[], None, None, &rules()), vec![Rejection::NoSamples]);
    }

    #[test]
    fn every_violation_is_reported_not_just_the_first() {
        let p = vec![
            RawPoint::value(0, 0.0, 40_089.0),
            RawPoint::value(1, 0.5, 0.0),
            RawPoint::value(2, 5.0, 30.0),
        ];
        let r: Vec<&str> = check_power(&p, None, &rules()).iter().map(Rejection::rule).collect();
        assert_eq!(r, ["gap", "above_cap", "non_positive"]);
    }

    #[test]
    fn counters_pass_when_they_advance_plausibly_through_a_wrap() {
        // 20 W through a wrap at 65,536 J: 65,530 → 65,535 → 4 (= 65,540 − 65,536).
        let p = vec![
            RawPoint::value(0, 0.0, 65_530.0),
            RawPoint::value(1, 0.25, 65_535.0),
            RawPoint::value(2, 0.5, 4.0),
        ];
        assert_eq!(check_counter(&p, Some(65_536.0), None, &rules()), vec![]);
        let c = validate_counter(&p, Some(65_536.0), None, &rules()).unwrap();
        assert_eq!(c.len(), 3);
    }

    #[test]
    fn counter_rules_name_both_samples_and_values() {
        let r = rules();
        // Decrease with no wrap range.
        let p = vec![RawPoint::value(0, 0.0, 100.0), RawPoint::value(1, 0.5, 90.0)];
        assert_eq!(
            check_counter(&p, None, None, &r),
            vec![Rejection::CounterDecreased {
                before: SampleRef { seq: 0, t_s: 0.0 },
                after: SampleRef { seq: 1, t_s: 0.5 },
                before_j: 100.0,
                after_j: 90.0
            }]
        );
        // Frozen counter.
        let p = vec![RawPoint::value(0, 0.0, 100.0), RawPoint::value(1, 0.5, 100.0)];
        assert_eq!(check_counter(&p, None, None, &r)[0].rule(), "counter_not_advancing");
        // 38 J in 0.5 s is 76 W: fine; 300 J in 0.5 s is 600 W: above the cap.
        let p = vec![
            RawPoint::value(0, 0.0, 100.0),
            RawPoint::value(1, 0.5, 138.0),
            RawPoint::value(2, 1.0, 438.0),
        ];
        assert_eq!(
            check_counter(&p, None, None, &r),
            vec![Rejection::CounterPowerAboveCap {
                before: SampleRef { seq: 1, t_s: 0.5 },
                after: SampleRef { seq: 2, t_s: 1.0 },
                before_j: 138.0,
                after_j: 438.0,
                watts: 600.0,
                max_watts: 500.0
            }]
        );
        // A bogus "wrap" (reset to 0 at 100 J of a 65,536 J range) implies ~131 kW: rejected.
        let p = vec![RawPoint::value(0, 0.0, 100.0), RawPoint::value(1, 0.5, 0.0)];
        assert_eq!(check_counter(&p, Some(65_536.0), None, &r)[0].rule(), "counter_power_above_cap");
        // Out of range values.
        let p = vec![RawPoint::value(0, 0.0, 70_000.0), RawPoint::value(1, 0.5, -1.0)];
        let rej = check_counter(&p, Some(65_536.0), None, &r);
        assert_eq!(rej.len(), 2);
        assert!(rej.iter().all(|x| x.rule() == "counter_out_of_range"));
        assert!(rej[0].to_string().contains("70000 J, outside [0, 65536] J"));
    }

    #[test]
    fn summary_reports_count_max_gap_and_extremes() {
        let w = vec![
            WattPoint { t_s: 0.0, watts: 60.32 },
            WattPoint { t_s: 0.5, watts: 74.47 },
            WattPoint { t_s: 1.01, watts: 62.38 },
        ];
        let s = summarize(&w);
        assert_eq!(s.count, 3);
        assert!((s.max_gap_s.unwrap() - 0.51).abs() < 1e-12);
        assert_eq!(s.min_watts, Some(60.32));
        assert_eq!(s.max_watts, Some(74.47));
        let e = summarize(&[]);
        assert_eq!((e.count, e.max_gap_s, e.max_watts), (0, None, None));
    }
}
