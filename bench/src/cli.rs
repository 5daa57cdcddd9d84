//! Command-line options.

use std::path::PathBuf;

use crate::workloads::Size;

/// The fewest recorded runs per cell the report may be based on.
pub(crate) const MIN_RUNS: usize = 5;

/// What the user asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Options {
    /// Work per run.
    pub(crate) size: Size,
    /// Recorded runs per cell.
    pub(crate) runs: usize,
    /// Also write the report here.
    pub(crate) out: Option<PathBuf>,
    /// Only workloads whose label contains this text.
    pub(crate) only: Option<String>,
    /// Only contenders whose column name contains one of these (lower-cased) fragments, or
    /// equals one written with a leading `=`; empty means all. For profiling one runtime
    /// without the others' samples.
    pub(crate) contenders: Vec<String>,
}

impl Options {
    /// Whether the contender with column `name` is to be run.
    pub(crate) fn runs_contender(&self, name: &str) -> bool {
        let name = name.to_lowercase();
        self.contenders.is_empty()
            || self.contenders.iter().any(|c| match c.strip_prefix('=') {
                Some(exact) => name == exact,
                None => name.contains(c.as_str()),
            })
    }
}

/// The usage text.
pub(crate) const USAGE: &str =
    "usage: baton-bench [--quick] [--runs N] [--out FILE] [--only TEXT] [--contenders LIST]
  --quick            a fifth of the operations per run (about 1-2 minutes in all)
  --runs N           recorded runs per cell, at least 5 (default 5)
  --out FILE         also write the markdown report to FILE
  --only TEXT        only workloads whose label contains TEXT (for example \"echo\")
  --contenders LIST  only the comma-separated contenders whose column names contain one of
                     LIST's names (for example \"raw,baton\"; for profiling one runtime),
                     or whose name is a LIST entry written with a leading '=' (\"=baton\")";

/// Parses the arguments after the program name.
pub(crate) fn parse(args: impl IntoIterator<Item = String>) -> Result<Options, String> {
    let mut options = Options {
        size: Size::Full,
        runs: MIN_RUNS,
        out: None,
        only: None,
        contenders: Vec::new(),
    };
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--quick" => options.size = Size::Quick,
            "--runs" => {
                let value = args.next().ok_or("--runs needs a number")?;
                let runs: usize = value
                    .parse()
                    .map_err(|_| format!("--runs needs a number, got `{value}`"))?;
                if runs < MIN_RUNS {
                    return Err(format!(
                        "--runs must be at least {MIN_RUNS} (medians need five runs), got {runs}"
                    ));
                }
                options.runs = runs;
            }
            "--out" => options.out = Some(args.next().ok_or("--out needs a file path")?.into()),
            "--only" => options.only = Some(args.next().ok_or("--only needs a label fragment")?),
            "--contenders" => {
                let list = args
                    .next()
                    .ok_or("--contenders needs a comma-separated list")?;
                options.contenders = list
                    .split(',')
                    .map(|c| c.trim().to_lowercase())
                    .filter(|c| !c.is_empty())
                    .collect();
                if options.contenders.is_empty() {
                    return Err("--contenders needs at least one name".into());
                }
            }
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    Ok(options)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn defaults_are_full_size_five_runs() {
        let options = parse(args(&[])).expect("no arguments is valid");
        assert_eq!(options.size, Size::Full);
        assert_eq!(options.runs, MIN_RUNS);
    }

    #[test]
    fn quick_out_and_runs_are_read() {
        let options =
            parse(args(&["--quick", "--runs", "7", "--out", "t.md"])).expect("valid arguments");
        assert_eq!(options.size, Size::Quick);
        assert_eq!(options.runs, 7);
        assert_eq!(options.out, Some(PathBuf::from("t.md")));
    }

    #[test]
    fn fewer_than_five_runs_is_refused() {
        let err = parse(args(&["--runs", "3"])).expect_err("3 runs is too few");
        assert!(err.contains("at least 5"), "{err}");
    }

    #[test]
    fn contenders_filter_by_lower_cased_fragment() {
        let options = parse(args(&["--contenders", "Raw, baton"])).expect("valid arguments");
        assert!(options.runs_contender("raw io_uring"));
        assert!(options.runs_contender("Baton"));
        assert!(!options.runs_contender("tokio"));
        assert!(parse(args(&[])).expect("valid").runs_contender("tokio"));
        assert!(parse(args(&["--contenders", ","])).is_err());
    }

    #[test]
    fn a_leading_equals_sign_matches_one_whole_column_name() {
        let options = parse(args(&["--contenders", "=Baton,=tokio"])).expect("valid arguments");
        assert!(options.runs_contender("Baton"));
        assert!(options.runs_contender("tokio"));
        assert!(!options.runs_contender("Baton 2 workers"));
        assert!(!options.runs_contender("tokio mt 2 workers"));
    }

    #[test]
    fn unknown_and_incomplete_arguments_are_refused() {
        assert!(parse(args(&["--fast"])).is_err());
        assert!(parse(args(&["--out"])).is_err());
    }
}
