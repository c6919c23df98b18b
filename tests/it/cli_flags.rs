//! One flag per concept across the commands (docs/cli.md): walks every subcommand with clap's
//! introspection and fails when a concept shows a second visible spelling, and checks that every
//! old spelling still parses, as a hidden alias, on the commands that had it.

use clap::parser::ValueSource;
use clap::{Command, CommandFactory};
use laya_bench::cli::Cli;

/// A concept: its canonical long flag, the commands where it is the concept's flag (`None`:
/// every command that has the flag), and its other spellings, each with the commands that had it
/// and a value to parse (`None` for a switch).
struct Concept {
    name: &'static str,
    canonical: &'static str,
    on: Option<&'static [&'static str]>,
    others: &'static [Other],
}

/// An old spelling of a concept, kept as a hidden alias where it was.
struct Other {
    spelling: &'static str,
    commands: &'static [&'static str],
    value: &'static str,
}

const fn other(spelling: &'static str, commands: &'static [&'static str], value: &'static str) -> Other {
    Other { spelling, commands, value }
}

const JSON_REPORTS: &[&str] = &[
    "speed",
    "energy",
    "convert-check",
    "summary",
    "verify",
    "trace summarize",
    "snake compare",
    "snake bench",
];

const CONCEPTS: &[Concept] = &[
    Concept {
        name: "the JSON report a command writes",
        canonical: "output",
        on: Some(JSON_REPORTS),
        others: &[other("export-json", JSON_REPORTS, "r.json")],
    },
    Concept {
        name: "the Markdown export",
        canonical: "export-markdown",
        on: None,
        others: &[other("markdown", &["summary"], "r.md")],
    },
    Concept {
        name: "the CSV export",
        canonical: "export-csv",
        on: None,
        others: &[other("csv", &["summary"], "r.csv")],
    },
    Concept {
        name: "the model",
        canonical: "model",
        on: None,
        others: &[other("source", &["convert-check"], "builtin:tiny")],
    },
    Concept {
        name: "the one backend a command runs (or each backend it checks on its own)",
        canonical: "backend",
        on: Some(&[
            "predict",
            "doctor",
            "verify",
            "convert-check",
            "trace run",
            "trace record",
            "snake play",
            "snake bench",
        ]),
        others: &[
            other("candidate", &["convert-check"], "portable:f16"),
            other("arm", &["trace run", "trace record"], "f32=portable:f32"),
            other("arm", &["snake play", "snake bench"], "portable:f32"),
        ],
    },
    Concept {
        name: "the arms a command compares",
        canonical: "arm",
        on: Some(&["speed", "energy", "snake compare"]),
        others: &[],
    },
    Concept {
        name: "the padded row length (the graph shape)",
        canonical: "length",
        on: None,
        others: &[other("row-length", &["snake play", "snake compare", "snake bench"], "64")],
    },
    Concept {
        name: "the decision rate (a comma list where a command takes several)",
        canonical: "rate",
        on: None,
        others: &[other("fps", &["snake play"], "5"), other("rates", &["snake bench"], "10,20")],
    },
    Concept {
        name: "how long to run, in time",
        canonical: "seconds",
        on: None,
        others: &[other("duration", &["snake play"], "5s")],
    },
    Concept {
        name: "the random seed (a comma list where a command takes several)",
        canonical: "seed",
        on: None,
        others: &[other("seeds", &["snake compare", "snake bench"], "1,2")],
    },
    Concept {
        name: "requests per call (a comma list sweeps it)",
        canonical: "batch",
        on: Some(&["speed"]),
        others: &[],
    },
    Concept {
        name: "worker threads of the portable engine (a comma list sweeps it)",
        canonical: "threads",
        on: Some(&["speed"]),
        others: &[],
    },
    Concept {
        name: "the speed-up to reach",
        canonical: "target-speedup",
        on: None,
        others: &[other("target", &["bounds"], "4")],
    },
    Concept {
        name: "the energy gain to claim",
        canonical: "target-gain",
        on: None,
        others: &[other("target", &["summary"], "2")],
    },
];

/// Every command and subcommand, by path (`snake bench`), leaves and groups alike.
fn commands() -> Vec<(String, Command)> {
    fn walk(prefix: &str, cmd: &Command, out: &mut Vec<(String, Command)>) {
        for sub in cmd.get_subcommands() {
            let path = if prefix.is_empty() {
                sub.get_name().to_string()
            } else {
                format!("{prefix} {}", sub.get_name())
            };
            out.push((path.clone(), sub.clone()));
            walk(&path, sub, out);
        }
    }
    let mut out = Vec::new();
    walk("", &Cli::command(), &mut out);
    out
}

fn command(path: &str) -> Command {
    commands().into_iter().find(|(p, _)| p == path).unwrap_or_else(|| panic!("no command `{path}`")).1
}

/// The long flags a command's help shows, visible aliases included.
fn visible_longs(cmd: &Command) -> Vec<&str> {
    let shown = cmd.get_arguments().filter(|a| !a.is_hide_set());
    shown.flat_map(|a| a.get_long().into_iter().chain(a.get_visible_aliases().unwrap_or_default())).collect()
}

/// Spellings that are some concept's old spelling and no concept's canonical flag: shown nowhere.
fn retired() -> Vec<&'static str> {
    let mut out: Vec<&str> = CONCEPTS.iter().flat_map(|c| c.others.iter().map(|o| o.spelling)).collect();
    out.retain(|s| CONCEPTS.iter().all(|c| c.canonical != *s));
    out.sort_unstable();
    out.dedup();
    out
}

fn clashes_of(all: &[(String, Command)]) -> Vec<String> {
    let mut clashes = Vec::new();
    for (path, cmd) in all {
        let shown = visible_longs(cmd);
        for spelling in retired() {
            if shown.contains(&spelling) {
                clashes.push(format!(
                    "`{path}` shows --{spelling}, an old spelling kept only as a hidden alias"
                ));
            }
        }
        // A spelling that is one concept's flag and another's old spelling (`--arm`) is checked
        // where the other concept applies.
        for c in CONCEPTS {
            let Some(on) = c.on else { continue };
            if !on.contains(&path.as_str()) {
                continue;
            }
            if !shown.contains(&c.canonical) {
                clashes.push(format!("`{path}` does not show --{} ({})", c.canonical, c.name));
            }
            for o in c.others.iter().filter(|o| shown.contains(&o.spelling)) {
                clashes.push(format!(
                    "`{path}` shows --{} for {}: spell it --{}",
                    o.spelling, c.name, c.canonical
                ));
            }
        }
    }
    clashes
}

#[test]
fn no_concept_shows_a_second_spelling_on_any_command() {
    let all = commands();
    assert!(all.len() >= 17, "the walk found only {} commands", all.len());
    let clashes = clashes_of(&all);
    assert!(clashes.is_empty(), "{}", clashes.join("\n"));
}

#[test]
fn a_visible_second_spelling_is_caught() {
    // The check above, against a command that shows an old spelling again.
    let mut all = commands();
    let (_, bench) = all.iter_mut().find(|(p, _)| p == "snake bench").unwrap();
    *bench = bench.clone().arg(clap::Arg::new("planted").long("rates"));
    let (_, trace) = all.iter_mut().find(|(p, _)| p == "trace run").unwrap();
    *trace = trace.clone().mut_arg("arm", |a| a.long("arm").alias("backend"));
    let clashes = clashes_of(&all).join("\n");
    assert!(clashes.contains("`snake bench` shows --rates"), "{clashes}");
    assert!(clashes.contains("`trace run` shows --arm for the one backend"), "{clashes}");
    assert!(clashes.contains("`trace run` does not show --backend"), "{clashes}");
}

#[test]
fn every_old_spelling_still_parses_where_it_did() {
    for c in CONCEPTS {
        for o in c.others {
            for path in o.commands {
                let cmd = command(path);
                let id = cmd
                    .get_arguments()
                    .find(|a| a.get_long() == Some(c.canonical))
                    .unwrap_or_else(|| panic!("`{path}` has no --{}", c.canonical))
                    .get_id()
                    .clone();
                let flag = format!("--{}", o.spelling);
                // Other required flags are not given: the parse of this one is what is checked.
                let matches = cmd
                    .clone()
                    .ignore_errors(true)
                    .try_get_matches_from([path.rsplit(' ').next().unwrap(), flag.as_str(), o.value])
                    .unwrap_or_else(|e| panic!("`{path} {flag} {}`: {e}", o.value));
                assert_eq!(
                    matches.value_source(id.as_str()),
                    Some(ValueSource::CommandLine),
                    "`{path} {flag} {}` did not set --{}",
                    o.value,
                    c.canonical
                );
            }
        }
    }
}
