//! SVG pictures of a summarized run, drawn with `plotters`' SVG backend (no system library, no
//! font file: text is written as SVG `<text>` and the viewer picks the font).
//!
//! - [`power_timeline`]: watts over time, blocks shaded by arm, idle windows with their
//!   discarded first seconds marked, rejected samples highlighted in red (a reading above the
//!   plotted range is drawn at the top edge with its value written next to it; nothing is
//!   clipped from the data).
//! - [`latency_cdf`]: the distribution of call latency per arm, as a cumulative curve.
//! - [`energy_per_block`]: energy per decision of every block, with each arm's point estimate
//!   and bootstrap interval as a band.
//!
//! Each function returns the SVG document as a string; the command writes it.

use plotters::coord::Shift;
use plotters::prelude::*;

/// Why a picture could not be drawn.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("cannot draw {what}: {detail}")]
pub struct PlotError {
    /// The picture.
    pub what: String,
    /// What went wrong.
    pub detail: String,
}

/// Colours of the arms, in arm order (none of them red: red marks rejected samples).
const ARM_COLORS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(23, 190, 207),
    RGBColor(140, 86, 75),
];

/// The colour of arm `i`.
pub fn arm_color(i: usize) -> RGBColor {
    ARM_COLORS[i % ARM_COLORS.len()]
}

const REJECTED: RGBColor = RGBColor(214, 39, 40);
const SIZE: (u32, u32) = (1100, 520);

/// A timed block on the timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct BlockBand {
    /// Start, s.
    pub start_s: f64,
    /// End, s.
    pub end_s: f64,
    /// Arm index.
    pub arm: usize,
}

/// An idle window on the timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct IdleBand {
    /// Start, s.
    pub start_s: f64,
    /// End of the discarded first seconds, s.
    pub stable_start_s: f64,
    /// End, s.
    pub end_s: f64,
}

/// A sample named by a rejection rule.
#[derive(Debug, Clone, PartialEq)]
pub struct RejectedPoint {
    /// Receive time, s.
    pub t_s: f64,
    /// Its watts, when it had a number.
    pub watts: Option<f64>,
    /// The rule.
    pub rule: String,
}

/// What the power timeline shows.
#[derive(Debug, Clone, PartialEq)]
pub struct PowerTimeline {
    /// Caption.
    pub title: String,
    /// Arm names.
    pub arms: Vec<String>,
    /// Every sample: receive time, s, and watts (`None` for a fault).
    pub samples: Vec<(f64, Option<f64>)>,
    /// Timed blocks.
    pub blocks: Vec<BlockBand>,
    /// Idle windows.
    pub idles: Vec<IdleBand>,
    /// Samples a rule rejected.
    pub rejected: Vec<RejectedPoint>,
    /// Two samples further apart than this are not joined: the line breaks there (the gap rule's
    /// max(2 s, 3 × interval)); `None`: only missing readings break it.
    pub max_gap_s: Option<f64>,
    /// The y axis, named by the sensor's boundary (`GPU board power [W]`).
    pub y_label: String,
}

/// The power line's pieces: consecutive drawable samples (a reading within the scale), broken at
/// a missing or off-scale reading and where two samples lie more than `max_gap_s` apart, so a gap
/// in the data is a gap in the line, never a straight segment across it.
pub fn line_segments(
    samples: &[(f64, Option<f64>)],
    y_max: f64,
    max_gap_s: Option<f64>,
) -> Vec<Vec<(f64, f64)>> {
    let mut out: Vec<Vec<(f64, f64)>> = Vec::new();
    let mut current: Vec<(f64, f64)> = Vec::new();
    for &(t, w) in samples {
        let drawable = w.filter(|w| w.is_finite() && *w <= y_max);
        let too_far = current.last().zip(max_gap_s).is_some_and(|(&(t0, _), g)| t - t0 > g);
        if (drawable.is_none() || too_far) && !current.is_empty() {
            out.push(std::mem::take(&mut current));
        }
        if let Some(w) = drawable {
            current.push((t, w));
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// One arm's latencies for the CDF.
#[derive(Debug, Clone, PartialEq)]
pub struct LatencySeries {
    /// Arm name.
    pub arm: String,
    /// Call latencies, ms, sorted ascending.
    pub sorted_ms: Vec<f64>,
}

/// One block's energy per decision.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BlockPoint {
    /// Block index.
    pub index: u32,
    /// Arm index.
    pub arm: usize,
    /// J per decision.
    pub j_per_decision: f64,
}

/// An arm's energy per decision with its interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ArmBand {
    /// Point estimate, J (NaN: none, no line is drawn).
    pub value: f64,
    /// Interval, J (`None` when no bootstrap ran).
    pub interval: Option<(f64, f64)>,
}

/// The error of drawing `what`, from what the backend said.
fn fail(what: &str) -> impl Fn(&dyn std::fmt::Display) -> PlotError + '_ {
    move |detail| PlotError { what: what.into(), detail: detail.to_string() }
}

fn finish(what: &str, svg: String) -> Result<String, PlotError> {
    if svg.is_empty() {
        return Err(PlotError { what: what.into(), detail: "the backend produced nothing".into() });
    }
    Ok(svg)
}

fn pad(lo: f64, hi: f64, frac: f64) -> (f64, f64) {
    let span = if hi > lo { hi - lo } else { hi.abs().max(1.0) };
    (lo - span * frac, hi + span * frac)
}

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// Draw the chart's legend (white, bordered) at `position` and write the picture.
fn legend_and_present<'a, 'b: 'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, SVGBackend<'b>, CT>,
    root: &Area<'b>,
    position: SeriesLabelPosition,
    what: &str,
) -> Result<(), PlotError> {
    let e = fail(what);
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(|x| e(&x))?;
    root.present().map_err(|x| e(&x))
}

/// Watts over time with blocks, idle windows, discarded seconds and rejected samples.
pub fn power_timeline(p: &PowerTimeline) -> Result<String, PlotError> {
    let what = "the power timeline";
    let mut svg = String::new();
    draw_power(&SVGBackend::with_string(&mut svg, SIZE).into_drawing_area(), p, what)?;
    finish(what, svg)
}

fn draw_power(root: &Area<'_>, p: &PowerTimeline, what: &str) -> Result<(), PlotError> {
    let e = fail(what);
    root.fill(&WHITE).map_err(|x| e(&x))?;
    // The run's own clock, as the raw record and every rejection message give sample times.
    let first = p.idles.first().map(|i| i.start_s).into_iter().chain(p.samples.first().map(|s| s.0));
    let start = first.fold(f64::INFINITY, f64::min);
    let t0 = 0.0;
    let x0 = if start.is_finite() { (start - 0.5).max(0.0) } else { 0.0 };
    let t1 = p.samples.iter().map(|s| s.0).chain(p.idles.iter().map(|i| i.end_s)).fold(x0 + 1.0, f64::max);
    let is_rejected = |t: f64| p.rejected.iter().any(|r| r.t_s == t);
    let kept_max = p
        .samples
        .iter()
        .filter(|s| !is_rejected(s.0))
        .filter_map(|s| s.1)
        .filter(|w| w.is_finite())
        .fold(1.0_f64, f64::max);
    // Headroom above the highest reading keeps the legend and the labels off the line.
    let y1 = kept_max * 1.8;
    let mut chart = ChartBuilder::on(root)
        .caption(&p.title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(x0..t1, 0.0..y1)
        .map_err(|x| e(&x))?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_desc("time on the run's clock [s] (as in the raw record and rejection messages)")
        .y_desc(p.y_label.as_str())
        .draw()
        .map_err(|x| e(&x))?;
    for (a, name) in p.arms.iter().enumerate() {
        let color = arm_color(a);
        chart
            .draw_series(p.blocks.iter().filter(|b| b.arm == a).map(|b| {
                Rectangle::new([(b.start_s - t0, 0.0), (b.end_s - t0, y1)], color.mix(0.18).filled())
            }))
            .map_err(|x| e(&x))?
            .label(format!("block: {name}"))
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.mix(0.4).filled()));
    }
    let grey = RGBColor(120, 120, 120);
    chart
        .draw_series(p.idles.iter().map(|i| {
            Rectangle::new([(i.start_s - t0, 0.0), (i.stable_start_s - t0, y1)], grey.mix(0.25).filled())
        }))
        .map_err(|x| e(&x))?
        .label("idle: discarded seconds")
        .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], grey.mix(0.4).filled()));
    chart
        .draw_series(p.idles.iter().map(|i| {
            Rectangle::new([(i.stable_start_s - t0, 0.0), (i.end_s - t0, y1)], grey.mix(0.08).filled())
        }))
        .map_err(|x| e(&x))?
        .label("idle: stable window")
        .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], grey.mix(0.15).filled()));
    let segments = line_segments(&p.samples, y1, p.max_gap_s);
    for (k, seg) in segments.into_iter().enumerate() {
        let drawn = chart.draw_series(LineSeries::new(seg, BLACK.stroke_width(1))).map_err(|x| e(&x))?;
        if k == 0 {
            drawn
                .label("samples (receive time; broken at gaps and missing readings)")
                .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 12, y)], BLACK));
        }
    }
    if !p.rejected.is_empty() {
        chart
            .draw_series(p.rejected.iter().enumerate().map(|(k, r)| {
                let t = r.t_s - t0;
                // Off-scale and missing labels sit in the headroom, staggered so neighbours
                // do not overlap.
                let high = y1 * (0.62 - 0.06 * (k % 4) as f64);
                let (y, text) = match r.watts {
                    Some(w) if w.is_finite() && (0.0..=kept_max).contains(&w) => {
                        (w, format!("{}: {w} W", r.rule))
                    }
                    Some(w) => (high, format!("{}: {w} W (off scale)", r.rule)),
                    None => (high, format!("{}: no reading", r.rule)),
                };
                EmptyElement::at((t, y))
                    + Circle::new((0, 0), 6, REJECTED.filled())
                    + Text::new(text, (8, -6), ("sans-serif", 13).into_font().color(&REJECTED))
            }))
            .map_err(|x| e(&x))?
            .label("rejected sample")
            .legend(|(x, y)| Circle::new((x + 6, y), 5, REJECTED.filled()));
    }
    legend_and_present(&mut chart, root, SeriesLabelPosition::UpperRight, what)
}

/// Cumulative distribution of call latency per arm (x up to the largest 99.9th percentile).
pub fn latency_cdf(title: &str, series: &[LatencySeries]) -> Result<String, PlotError> {
    let what = "the latency CDF";
    let mut svg = String::new();
    draw_cdf(&SVGBackend::with_string(&mut svg, SIZE).into_drawing_area(), title, series, what)?;
    finish(what, svg)
}

fn quantile_at(sorted: &[f64], q: f64) -> Option<f64> {
    crate::stats::percentile_sorted(sorted, q)
}

fn draw_cdf(root: &Area<'_>, title: &str, series: &[LatencySeries], what: &str) -> Result<(), PlotError> {
    let e = fail(what);
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let lo = series.iter().filter_map(|s| s.sorted_ms.first().copied()).fold(f64::INFINITY, f64::min);
    let hi = series.iter().filter_map(|s| quantile_at(&s.sorted_ms, 99.9)).fold(f64::NEG_INFINITY, f64::max);
    if !lo.is_finite() || !hi.is_finite() {
        return Err(e(&"no call latencies to draw"));
    }
    let (x0, x1) = pad(lo, hi, 0.03);
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(x0..x1, 0.0..1.0)
        .map_err(|x| e(&x))?;
    chart
        .configure_mesh()
        .x_desc("latency per call over the full boundary [ms] (axis ends at the 99.9th percentile)")
        .y_desc("fraction of calls ≤ x")
        .draw()
        .map_err(|x| e(&x))?;
    for (a, s) in series.iter().enumerate().filter(|(_, s)| !s.sorted_ms.is_empty()) {
        let n = s.sorted_ms.len();
        // At most ~2,000 points per curve: the curve's shape, not one point per call.
        let step = n.div_ceil(2000).max(1);
        let points: Vec<(f64, f64)> = (0..n)
            .step_by(step)
            .chain(std::iter::once(n.saturating_sub(1)))
            .filter(|&i| s.sorted_ms[i] <= x1)
            .map(|i| (s.sorted_ms[i], (i + 1) as f64 / n as f64))
            .collect();
        let color = arm_color(a);
        chart
            .draw_series(LineSeries::new(points, color.stroke_width(2)))
            .map_err(|x| e(&x))?
            .label(format!(
                "{} (P50 {:.2} ms, P95 {:.2} ms)",
                s.arm,
                quantile_at(&s.sorted_ms, 50.0).unwrap_or(f64::NAN),
                quantile_at(&s.sorted_ms, 95.0).unwrap_or(f64::NAN)
            ))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 14, y)], color.stroke_width(2)));
    }
    legend_and_present(&mut chart, root, SeriesLabelPosition::LowerRight, what)
}

/// Energy per decision of every block, with each arm's estimate and bootstrap interval; the y
/// axis is `y_label` (named by the sensor's boundary: `GPU board energy per decision [J]`).
pub fn energy_per_block(
    (title, y_label): (&str, &str),
    arms: &[String],
    blocks: &[BlockPoint],
    bands: &[ArmBand],
) -> Result<String, PlotError> {
    let what = "the energy-per-block picture";
    let mut svg = String::new();
    let area = |svg| SVGBackend::with_string(svg, SIZE).into_drawing_area();
    draw_energy(&area(&mut svg), (title, y_label), arms, blocks, bands, what)?;
    finish(what, svg)
}

fn draw_energy(
    root: &Area<'_>,
    (title, y_label): (&str, &str),
    arms: &[String],
    blocks: &[BlockPoint],
    bands: &[ArmBand],
    what: &str,
) -> Result<(), PlotError> {
    let e = fail(what);
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let values = blocks.iter().map(|b| b.j_per_decision).chain(
        bands
            .iter()
            .flat_map(|b| [Some(b.value), b.interval.map(|i| i.0), b.interval.map(|i| i.1)])
            .flatten(),
    );
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| (l.min(v), h.max(v)));
    if !lo.is_finite() || !hi.is_finite() {
        return Err(e(&"no block energy to draw"));
    }
    // Headroom above the data for the legend (one row per arm), so it hides no point.
    let legend_room = (hi - lo.min(0.0)) * 0.07 * arms.len() as f64;
    let (y0, y1) = pad(lo.min(0.0), hi + legend_room, 0.08);
    let n = blocks.iter().map(|b| b.index).max().map(|m| m as f64 + 1.0).unwrap_or(1.0);
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(-0.5..n - 0.5, y0..y1)
        .map_err(|x| e(&x))?;
    chart
        .configure_mesh()
        .x_desc("block (run order)")
        .x_label_formatter(&|x| {
            // Block indices are whole numbers: label those, leave the ticks between them blank.
            if (x - x.round()).abs() < 1e-9 && *x >= 0.0 {
                format!("{}", x.round() as u64)
            } else {
                String::new()
            }
        })
        .y_desc(y_label)
        .draw()
        .map_err(|x| e(&x))?;
    for (a, name) in arms.iter().enumerate() {
        let color = arm_color(a);
        if let Some(band) = bands.get(a) {
            if let Some((l, h)) = band.interval {
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(-0.5, l), (n - 0.5, h)],
                        color.mix(0.15).filled(),
                    )))
                    .map_err(|x| e(&x))?;
            }
            if band.value.is_finite() {
                let line = vec![(-0.5, band.value), (n - 0.5, band.value)];
                chart.draw_series(LineSeries::new(line, color.stroke_width(1))).map_err(|x| e(&x))?;
            }
        }
        let label = match bands.get(a).and_then(|b| b.interval.map(|i| (b.value, i))) {
            Some((v, (l, h))) => format!("{name}: {v:.4} J [{l:.4}–{h:.4}]"),
            None => name.clone(),
        };
        chart
            .draw_series(
                blocks
                    .iter()
                    .filter(|b| b.arm == a)
                    .map(|b| Circle::new((b.index as f64, b.j_per_decision), 5, color.filled())),
            )
            .map_err(|x| e(&x))?
            .label(label)
            .legend(move |(x, y)| Circle::new((x + 6, y), 5, color.filled()));
    }
    legend_and_present(&mut chart, root, SeriesLabelPosition::UpperRight, what)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Parse an SVG with quick-xml; return every `<text>` content.
    pub(crate) fn well_formed_texts(svg: &str) -> Vec<String> {
        use quick_xml::events::Event;
        let mut reader = quick_xml::Reader::from_str(svg);
        let mut texts = Vec::new();
        let mut in_text = false;
        let mut saw_svg = false;
        loop {
            match reader.read_event().expect("well-formed XML") {
                Event::Start(e) if e.name().as_ref() == b"svg" => saw_svg = true,
                Event::Start(e) if e.name().as_ref() == b"text" => in_text = true,
                Event::End(e) if e.name().as_ref() == b"text" => in_text = false,
                Event::Text(t) if in_text => texts.push(t.decode().unwrap().trim().to_string()),
                Event::Eof => break,
                _ => {}
            }
        }
        assert!(saw_svg, "no <svg> root");
        texts
    }

    fn timeline() -> PowerTimeline {
        let samples: Vec<(f64, Option<f64>)> =
            (0..40).map(|i| (i as f64 * 0.5, Some(if (8..30).contains(&i) { 60.0 } else { 12.0 }))).collect();
        let mut samples = samples;
        samples[12].1 = Some(40089.0);
        PowerTimeline {
            title: "power".into(),
            arms: vec!["mlx".into(), "ane".into()],
            samples,
            blocks: vec![
                BlockBand { start_s: 4.0, end_s: 9.0, arm: 0 },
                BlockBand { start_s: 10.0, end_s: 15.0, arm: 1 },
            ],
            idles: vec![IdleBand { start_s: 0.0, stable_start_s: 1.0, end_s: 4.0 }],
            rejected: vec![RejectedPoint { t_s: 6.0, watts: Some(40089.0), rule: "above_cap".into() }],
            max_gap_s: Some(2.0),
            y_label: "GPU board power [W]".into(),
        }
    }

    #[test]
    fn the_power_line_breaks_at_gaps_and_missing_readings() {
        let samples = [
            (0.0, Some(10.0)),
            (0.5, Some(11.0)),
            (1.0, None),
            (1.5, Some(12.0)),
            (2.0, Some(13.0)),
            (5.0, Some(14.0)),
            (5.5, Some(900.0)),
            (6.0, Some(15.0)),
        ];
        let segs = line_segments(&samples, 100.0, Some(2.0));
        assert_eq!(
            segs,
            vec![
                vec![(0.0, 10.0), (0.5, 11.0)],
                vec![(1.5, 12.0), (2.0, 13.0)],
                vec![(5.0, 14.0)],
                vec![(6.0, 15.0)],
            ]
        );
        assert_eq!(line_segments(&samples[..2], 100.0, None), vec![vec![(0.0, 10.0), (0.5, 11.0)]]);
    }

    #[test]
    fn the_power_timeline_is_well_formed_and_labels_the_rejected_sample() {
        let svg = power_timeline(&timeline()).unwrap();
        let texts = well_formed_texts(&svg);
        assert!(texts.iter().any(|t| t == "above_cap: 40089 W (off scale)"), "{texts:?}");
        for want in
            ["block: mlx", "block: ane", "idle: discarded seconds", "rejected sample", "GPU board power [W]"]
        {
            assert!(texts.iter().any(|t| t == want), "{want} not in {texts:?}");
        }
        // Red marks the rejected sample.
        assert!(svg.contains("#D62728"), "no red marker");
    }

    #[test]
    fn the_latency_cdf_and_energy_pictures_are_well_formed() {
        let series = vec![
            LatencySeries {
                arm: "a".into(),
                sorted_ms: (0..5000).map(|i| 5.0 + i as f64 / 5000.0).collect(),
            },
            LatencySeries { arm: "b".into(), sorted_ms: vec![4.0, 4.5, 5.0] },
            LatencySeries { arm: "an arm without calls".into(), sorted_ms: vec![] },
        ];
        let texts = well_formed_texts(&latency_cdf("latency", &series).unwrap());
        assert!(texts.iter().any(|t| t.starts_with("a (P50 5.50 ms")), "{texts:?}");
        let blocks = [
            BlockPoint { index: 0, arm: 0, j_per_decision: 0.43 },
            BlockPoint { index: 1, arm: 1, j_per_decision: 0.15 },
        ];
        let bands =
            [ArmBand { value: 0.43, interval: Some((0.42, 0.44)) }, ArmBand { value: 0.15, interval: None }];
        let svg = energy_per_block(
            ("energy", "energy per decision [J]"),
            &["a".into(), "b".into()],
            &blocks,
            &bands,
        )
        .unwrap();
        let texts = well_formed_texts(&svg);
        assert!(texts.iter().any(|t| t == "a: 0.4300 J [0.4200–0.4400]"), "{texts:?}");
        assert!(latency_cdf("x", &[]).is_err());
    }
}
