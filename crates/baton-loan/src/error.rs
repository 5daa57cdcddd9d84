//! Errors of the loan driver.

use std::io;

/// Why a [`Loan`](crate::Loan) could not be created.
#[derive(Debug, thiserror::Error)]
pub enum LoanError {
    /// The operating system refused to start the background thread.
    #[error(
        "could not start the loan driver's background thread `{name}`: {source} \
         (check the process's thread limit and available memory)"
    )]
    SpawnBackground {
        /// The thread name that was requested.
        name: String,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
}
