//! The sampler's samples through the energy rules and integration, the way the protocol chains
//! them (a test of `energy` over `power`'s sampler and a scripted sensor).

use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::energy::{trapezoid_j, validate_power, RawPoint, Rules, Window};
use crate::power::sampler::{Sample, Sampler, SamplerConfig};
use crate::power::{Measurement, Reading, Sensor, SensorError, SensorInfo, SensorKind};

/// One scripted step of the mock sensor.
#[derive(Clone)]
enum Step {
    Watts(f64),
    Fault,
}

/// A sensor that reads its script, then repeats the last step.
struct Scripted {
    info: SensorInfo,
    steps: Vec<Step>,
    i: usize,
}

impl Scripted {
    fn new(steps: Vec<Step>) -> Self {
        let info = SensorInfo {
            kind: SensorKind::Mock,
            spec: "mock".into(),
            source: "mock".into(),
            device: "scripted".into(),
            live: false,
            program: None,
            notes: vec![],
        };
        Scripted { info, steps, i: 0 }
    }
}

impl Sensor for Scripted {
    fn info(&self) -> &SensorInfo {
        &self.info
    }
    fn read(&mut self) -> Result<Reading, SensorError> {
        let step = self.steps.get(self.i).or(self.steps.last()).cloned().unwrap_or(Step::Fault);
        self.i += 1;
        match step {
            Step::Watts(w) => Ok(Reading::power_w("system", w)),
            Step::Fault => Err(SensorError::ReadFailed { sensor: "mock".into(), detail: "injected".into() }),
        }
    }
    fn close(&mut self) -> Result<(), SensorError> {
        Ok(())
    }
}

fn collect(rx: &mpsc::Receiver<Sample>) -> Vec<Sample> {
    rx.try_iter().collect()
}

/// Samples → energy rules → integration, the way the protocol layer will chain them.
fn to_raw_points(samples: &[Sample]) -> Vec<RawPoint> {
    samples
        .iter()
        .map(|s| match s.measurement("system") {
            Ok(Measurement::PowerW { watts }) => RawPoint::value(s.seq, s.t_receive_s(), watts),
            Ok(Measurement::EnergyCounterJ { joules, .. }) => RawPoint::value(s.seq, s.t_receive_s(), joules),
            Err(m) => RawPoint::missing(s.seq, s.t_receive_s(), &m.reason, m.fatal),
        })
        .collect()
}

#[test]
fn sampled_power_flows_into_the_energy_rules_and_integration() {
    let run = |steps: Vec<Step>| {
        let s = Scripted::new(steps);
        let (tx, rx) = mpsc::channel();
        let sampler =
            Sampler::start(Box::new(s), SamplerConfig::new(Duration::from_millis(20), Instant::now()), tx)
                .unwrap();
        std::thread::sleep(Duration::from_millis(200));
        sampler.stop().unwrap();
        to_raw_points(&collect(&rx))
    };
    let rules = Rules::new(500.0, 0.02);

    let points = run(vec![Step::Watts(20.0)]);
    let (t0, t1) = (points[0].t_s, points[points.len() - 1].t_s);
    let window = Window::new(t0, t1).unwrap();
    let watts = validate_power(&points, Some(window), &rules).unwrap();
    let e = trapezoid_j(&watts, window).unwrap();
    assert!((e - 20.0 * (t1 - t0)).abs() < 1e-9, "{e}");

    let points = run(vec![Step::Watts(20.0), Step::Watts(40_089.0), Step::Fault, Step::Watts(20.0)]);
    let rejected = validate_power(&points, None, &rules).unwrap_err();
    let rules_hit: Vec<&str> = rejected.iter().map(|r| r.rule()).collect();
    assert_eq!(rules_hit, ["missing_reading", "above_cap"]);
}
