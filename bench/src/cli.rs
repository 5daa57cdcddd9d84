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
}

/// The usage text.
pub(crate) const USAGE: &str = "usage: baton-bench [--quick] [--runs N] [--out FILE] [--only TEXT]
  --quick      a fifth of the operations per run (about 1-2 minutes in all)
  --runs N     recorded runs per cell, at least 5 (default 5)
  --out FILE   also write the markdown report to FILE
  --only TEXT  only workloads whose label contains TEXT (for example \"echo\")";

/// Parses the arguments after the program name.
pub(crate) fn parse(args: impl IntoIterator<Item = String>) -> Result<Options, String> {
    let mut options = Options {
        size: Size::Full,
        runs: MIN_RUNS,
        out: None,
        only: None,
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
    fn unknown_and_incomplete_arguments_are_refused() {
        assert!(parse(args(&["--fast"])).is_err());
        assert!(parse(args(&["--out"])).is_err());
    }
}
