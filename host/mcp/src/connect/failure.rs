//! Why a session could not be opened: one line for anyone, the server's
//! last words for people only, and the error behind it as a cause.

/// Why a session could not be opened. `reason` may go anywhere, the
/// model's `unavailable` result included; `said` (the last line the
/// program wrote to standard error, its secrets redacted) is the server's
/// own text, and goes only to people: `plugins` and the log. `cause`,
/// when there is one, is the error behind `reason` (which already says
/// it in one line), kept for the source chain of a listing's error.
#[derive(Debug)]
pub struct Failure {
    /// Why, in one line that may go anywhere.
    pub reason: String,
    /// The program's last line on standard error, its secrets redacted:
    /// for people only.
    pub said: Option<String>,
    /// The server refused the host's credentials (an HTTP 401 or 403):
    /// whether a login would help.
    pub login: Option<bool>,
    /// The server's `WWW-Authenticate` challenge, when it refused so.
    pub challenge: Option<String>,
    /// Nothing was started or reached: the host refused first (its
    /// install was changed), and trying again cannot help.
    pub settled: bool,
    /// The error behind `reason`, when one is: the start's cause.
    pub cause: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl From<String> for Failure {
    fn from(reason: String) -> Failure {
        Failure {
            reason,
            said: None,
            login: None,
            challenge: None,
            settled: false,
            cause: None,
        }
    }
}

impl Failure {
    /// A failure for `reason`, caused by `cause` (which `reason` says in
    /// one line).
    pub fn caused(
        reason: String,
        cause: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Failure {
        Failure {
            cause: Some(cause.into()),
            ..Failure::from(reason)
        }
    }

    /// The reason with the program's last words, for people.
    pub fn detailed(&self) -> String {
        match &self.said {
            Some(said) => format!("{}; its last words: {said}", self.reason),
            None => self.reason.clone(),
        }
    }

    /// The reason alone, saying where the rest is: for the model.
    pub fn for_model(&self) -> String {
        match &self.said {
            Some(_) => format!(
                "{} (what the server wrote to stderr is shown by `tiny-harness plugins`)",
                self.reason
            ),
            None => self.reason.clone(),
        }
    }
}
