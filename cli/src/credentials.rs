//! Where tokens come from: a fixed token, a shell command printing one, or
//! (for embedding hosts and tests) a function.
//!
//! The engine asks for new credentials with `FetchCredentials`; a fixed
//! token cannot be renewed, so a refresh with one returns the same token
//! and the next request fails with 401 if it has expired, which is reported.

use std::process::Command;
use std::sync::Arc;

use crate::Error;

/// A function returning a fresh token.
pub type TokenFn = Arc<dyn Fn() -> Result<String, String> + Send + Sync>;

/// Where tokens come from.
#[derive(Clone)]
pub enum TokenSource {
    /// The same token every time (`--token`).
    Fixed(String),
    /// A command run with `sh -c`; its trimmed standard output is the
    /// token (`--token-command`).
    Command(String),
    /// A function (embedding hosts, tests).
    Function(TokenFn),
}

impl std::fmt::Debug for TokenSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TokenSource::Fixed(_) => f.write_str("Fixed(<token>)"),
            TokenSource::Command(c) => write!(f, "Command({c:?})"),
            TokenSource::Function(_) => f.write_str("Function(..)"),
        }
    }
}

impl TokenSource {
    /// Gets a token.
    pub fn fetch(&self) -> Result<String, Error> {
        let token = match self {
            TokenSource::Fixed(token) => token.clone(),
            TokenSource::Command(command) => {
                let output = Command::new("sh")
                    .arg("-c")
                    .arg(command)
                    .output()
                    .map_err(|e| Error::Credentials(format!("running {command:?}: {e}")))?;
                if !output.status.success() {
                    return Err(Error::Credentials(format!(
                        "{command:?} exited with {}: {}",
                        output.status,
                        String::from_utf8_lossy(&output.stderr).trim()
                    )));
                }
                String::from_utf8(output.stdout)
                    .map_err(|_| Error::Credentials(format!("{command:?} printed a token that is not UTF-8")))?
                    .trim()
                    .to_owned()
            }
            TokenSource::Function(f) => f().map_err(Error::Credentials)?,
        };
        if token.is_empty() {
            return Err(Error::Credentials("the token is empty".into()));
        }
        Ok(token)
    }

    /// Whether asking again can give a different token.
    pub fn can_refresh(&self) -> bool {
        !matches!(self, TokenSource::Fixed(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_output_is_trimmed_and_failures_reported() {
        assert_eq!(TokenSource::Command("echo '  abc  '".into()).fetch().unwrap(), "abc");
        assert!(TokenSource::Command("exit 3".into()).fetch().is_err());
        assert!(TokenSource::Command("true".into()).fetch().is_err());
        assert_eq!(TokenSource::Fixed("t".into()).fetch().unwrap(), "t");
        let f = TokenSource::Function(Arc::new(|| Ok("f".into())));
        assert_eq!(f.fetch().unwrap(), "f");
        assert!(f.can_refresh());
        assert!(!TokenSource::Fixed("t".into()).can_refresh());
    }
}
