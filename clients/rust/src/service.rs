//! The loopback service as the scenario reaches it: tokens from its
//! `/dev/token`, uploads to its `/upload` (the app backend's stand-in), its
//! faults and its log. The SDK's side of it, the [`Authenticator`], counts
//! how often the SDK asked for credentials.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use powersync::error::PowerSyncError;
use powersync::Authenticator;
use serde_json::Value;

use crate::AnyError;

/// One loopback service.
pub struct Service {
    http: reqwest::Client,
    pub url: String,
    /// The token the SDK holds, None once it said it expired.
    token: Mutex<Option<String>>,
    /// How many times the SDK asked for credentials.
    pub credential_fetches: AtomicUsize,
}

impl Service {
    pub fn new(url: &str) -> Arc<Self> {
        Arc::new(Service {
            http: reqwest::Client::new(),
            url: url.trim_end_matches('/').to_owned(),
            token: Mutex::new(None),
            credential_fetches: AtomicUsize::new(0),
        })
    }

    /// A `/dev/` request without a token; its body as text.
    pub async fn dev(&self, post: bool, path: &str) -> Result<String, AnyError> {
        let url = format!("{}{path}", self.url);
        let request = if post {
            self.http.post(url)
        } else {
            self.http.get(url)
        };
        let response = request.send().await?;
        let status = response.status();
        let text = response.text().await?;
        if !status.is_success() {
            return Err(format!("{path}: {status} {text}").into());
        }
        Ok(text)
    }

    /// `GET /dev/log`: uploads, stream requests and counters.
    pub async fn log(&self) -> Result<Value, AnyError> {
        Ok(serde_json::from_str(&self.dev(false, "/dev/log").await?)?)
    }

    /// One counter of the log's `stats`.
    pub async fn stat(&self, name: &str) -> Result<u64, AnyError> {
        Ok(self.log().await?["stats"][name].as_u64().unwrap_or(0))
    }

    /// The token the SDK holds now.
    pub fn current_token(&self) -> Option<String> {
        self.token.lock().unwrap().clone()
    }

    /// Posts `{"batch": batch}` to `/upload` with the SDK's current token,
    /// as the app's backend would receive it.
    pub async fn upload(&self, batch: &Value) -> Result<(), PowerSyncError> {
        let token = self.current_token().unwrap_or_else(|| "dev".into());
        let response = self
            .http
            .post(format!("{}/upload", self.url))
            .header("authorization", format!("Token {token}"))
            .header("content-type", "application/json")
            .body(serde_json::json!({ "batch": batch }).to_string())
            .send()
            .await
            .map_err(PowerSyncError::upload_error)?;
        response
            .error_for_status()
            .map_err(PowerSyncError::upload_error)?;
        Ok(())
    }

    async fn fresh_token(&self) -> Result<String, PowerSyncError> {
        let response = self
            .http
            .get(format!("{}/dev/token?ttl=3600", self.url))
            .send()
            .await
            .map_err(PowerSyncError::upload_error)?;
        let response = response
            .error_for_status()
            .map_err(PowerSyncError::upload_error)?;
        response.text().await.map_err(PowerSyncError::upload_error)
    }
}

/// The SDK's credentials, as an app keeps them: the token fetched last,
/// until the SDK says it expired (`invalidate_credentials`); then a fresh
/// one from the service, counted as a fetch.
pub struct Credentials(pub Arc<Service>);

#[async_trait::async_trait]
impl Authenticator for Credentials {
    async fn resolve_credentials(&self) -> Result<Arc<String>, PowerSyncError> {
        if let Some(token) = self.0.current_token() {
            return Ok(Arc::new(token));
        }
        self.0.credential_fetches.fetch_add(1, Ordering::SeqCst);
        let token = self.0.fresh_token().await?;
        *self.0.token.lock().unwrap() = Some(token.clone());
        Ok(Arc::new(token))
    }

    fn invalidate_credentials(&self) {
        *self.0.token.lock().unwrap() = None;
    }
}
