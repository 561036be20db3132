//! The command line: where the service is and how to authenticate.

/// What the command line asks for.
pub struct Args {
    pub endpoint: String,
    /// A fixed token; `None` asks the loopback service's `/dev/token`.
    pub token: Option<String>,
    pub upload_url: String,
    pub db: String,
    pub add: String,
}

const USAGE: &str =
    "usage: oplite-rust-todo --endpoint URL (--token JWT | --dev-token) [--upload-url URL] [--db FILE] [--add TEXT]";

pub fn parse(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let (mut endpoint, mut token, mut dev_token, mut upload_url) = (None, None, false, None);
    let (mut db, mut add) = ("todos.db".to_owned(), "written in Rust".to_owned());
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{arg} needs a value\n{USAGE}"));
        match arg.as_str() {
            "--endpoint" => endpoint = Some(value()?.trim_end_matches('/').to_owned()),
            "--token" => token = Some(value()?),
            "--dev-token" => dev_token = true,
            "--upload-url" => upload_url = Some(value()?),
            "--db" => db = value()?,
            "--add" => add = value()?,
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    let endpoint = endpoint.ok_or_else(|| format!("--endpoint is required\n{USAGE}"))?;
    if token.is_none() && !dev_token {
        return Err(format!("--token or --dev-token is required\n{USAGE}"));
    }
    let upload_url = upload_url.unwrap_or_else(|| format!("{endpoint}/upload"));
    Ok(Args { endpoint, token, upload_url, db, add })
}
