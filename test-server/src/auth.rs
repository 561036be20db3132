//! Tokens, checked as the PowerSync service checks them.
//!
//! The service issues tokens as JWTs signed with HS256 by a key made for
//! this run (`kid` [`KEY_ID`]), with the claims the service requires:
//! `sub`, `iat`, `exp` and `aud` ([`ServiceOptions::audiences`]). A request's
//! token is refused with HTTP 401 and the service's code (the rules of
//! `packages/service-core/src/routes/auth.ts`, `auth/KeyStore.ts` and
//! `auth/utils.ts` in powersync-service):
//!
//! | token | code | description |
//! |---|---|---|
//! | no `Authorization: Token T` / `Bearer T` header | `PSYNC_S2106` | Authentication required |
//! | not three base64url parts with a JSON header and payload | `PSYNC_S2101` | Token is not a well-formed JWT. Check the token format. |
//! | another key id, or none | `PSYNC_S2101` | Could not find an appropriate key in the keystore. ... |
//! | this key id, another algorithm | `PSYNC_S2101` | Unexpected token algorithm ALG |
//! | this key id, a bad signature | `PSYNC_S2101` | signature verification failed |
//! | no `sub`, `iat` or `exp` | `PSYNC_S2101` | JWT payload is missing a required claim "sub" |
//! | `exp` more than 60 s ago (the service's clock tolerance), or expired by [`TestService::expire_token`](crate::TestService::expire_token) | `PSYNC_S2103` | JWT has expired |
//! | no `aud` | `PSYNC_S2105` | JWT payload is missing a required claim "aud" |
//! | `aud` not one of the audiences | `PSYNC_S2105` | Unexpected "aud" claim value: AUD |
//! | `exp - iat` over the longest lifetime (default a day) | `PSYNC_S2104` | Token must expire in a maximum of N seconds, got Ms |
//! | `parameters` claim that is not an object | `PSYNC_S2101` | Payload parameters must be an object |
//!
//! Unlike the service, the static tokens of [`ServiceOptions::static_tokens`]
//! (`dev` by default) are accepted as they are and never expire: a
//! convenience of this test support.

use std::time::{SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ring::hmac;

use super::*;

/// The `kid` of the service's signing key.
pub const KEY_ID: &str = "oplite-test-server";
/// The audience of the tokens the service issues, accepted by default.
pub const AUDIENCE: &str = "oplite-test-server";
/// Seconds an `exp` may lie in the past at a request (the service's
/// `clockTolerance`).
pub const CLOCK_TOLERANCE_SECS: i64 = 60;

/// Why a token was refused: the service's code and description (HTTP 401).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthError {
    /// `PSYNC_S21xx`.
    pub code: &'static str,
    /// The service's description.
    pub description: String,
}

impl AuthError {
    fn new(code: &'static str, description: impl Into<String>) -> Self {
        AuthError { code, description: description.into() }
    }
}

pub(crate) fn now_secs() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0)
}

/// The token of an `Authorization` header (`Token T` or `Bearer T`, one
/// space, no space in T), as the service's `getTokenFromHeader`.
pub(crate) fn token_from_header(value: Option<&str>) -> Result<&str, AuthError> {
    let value = value.unwrap_or("");
    let token = value.strip_prefix("Token ").or_else(|| value.strip_prefix("Bearer "));
    match token {
        Some(t) if !t.is_empty() && !t.contains(char::is_whitespace) => Ok(t),
        _ => Err(AuthError::new("PSYNC_S2106", "Authentication required")),
    }
}

/// The service's signing key and the rules its tokens are checked by.
pub(crate) struct Keys {
    key: hmac::Key,
    pub(crate) audiences: Vec<String>,
    pub(crate) max_lifetime_secs: i64,
    pub(crate) static_tokens: HashSet<String>,
    /// Tokens expired by `expire_token`.
    pub(crate) revoked: HashSet<String>,
    next_id: u64,
}

impl Keys {
    pub(crate) fn new(options: &ServiceOptions) -> Self {
        let mut secret = [0u8; 32];
        ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut secret).expect("system randomness");
        Keys {
            key: hmac::Key::new(hmac::HMAC_SHA256, &secret),
            audiences: options.audiences.clone(),
            max_lifetime_secs: options.max_token_lifetime.as_secs() as i64,
            static_tokens: options.static_tokens.iter().cloned().collect(),
            revoked: HashSet::new(),
            next_id: 1,
        }
    }

    /// A JWT with `claims` as its payload, signed with the service's key.
    pub(crate) fn sign(&self, claims: &Value) -> String {
        let header = json!({"alg": "HS256", "kid": KEY_ID, "typ": "JWT"});
        let signed = format!("{}.{}", URL_SAFE_NO_PAD.encode(header.to_string()), URL_SAFE_NO_PAD.encode(claims.to_string()));
        let signature = hmac::sign(&self.key, signed.as_bytes());
        format!("{signed}.{}", URL_SAFE_NO_PAD.encode(signature.as_ref()))
    }

    /// A new token valid for `ttl_secs` (each one different: `jti`).
    pub(crate) fn issue(&mut self, ttl_secs: i64) -> String {
        let id = self.next_id;
        self.next_id += 1;
        let iat = now_secs();
        self.sign(&json!({"sub": "test-user", "aud": AUDIENCE, "iat": iat, "exp": iat + ttl_secs, "jti": id.to_string()}))
    }

    /// Checks a request's token; Ok(its `exp`, None for a static token).
    pub(crate) fn verify(&self, token: &str) -> Result<Option<i64>, AuthError> {
        let expired = || AuthError::new("PSYNC_S2103", "JWT has expired");
        if self.revoked.contains(token) {
            return Err(expired());
        }
        if self.static_tokens.contains(token) {
            return Ok(None);
        }
        let malformed = || AuthError::new("PSYNC_S2101", "Token is not a well-formed JWT. Check the token format.");
        let parts: Vec<&str> = token.split('.').collect();
        let [header, payload, signature] = parts[..] else { return Err(malformed()) };
        let decode = |part: &str| -> Option<Value> {
            let value: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).ok()?).ok()?;
            value.is_object().then_some(value)
        };
        let (Some(header_json), Some(claims)) = (decode(header), decode(payload)) else { return Err(malformed()) };
        let signature = URL_SAFE_NO_PAD.decode(signature).map_err(|_| malformed())?;
        if header_json["kid"].as_str() != Some(KEY_ID) {
            return Err(AuthError::new(
                "PSYNC_S2101",
                "Could not find an appropriate key in the keystore. The key is missing or no key matched the token KID",
            ));
        }
        let alg = header_json["alg"].as_str().unwrap_or("");
        if alg != "HS256" {
            return Err(AuthError::new("PSYNC_S2101", format!("Unexpected token algorithm {alg}")));
        }
        if hmac::verify(&self.key, format!("{header}.{payload}").as_bytes(), &signature).is_err() {
            return Err(AuthError::new("PSYNC_S2101", "signature verification failed"));
        }
        for claim in ["sub", "iat", "exp"] {
            if claims.get(claim).is_none() {
                return Err(AuthError::new("PSYNC_S2101", format!("JWT payload is missing a required claim \"{claim}\"")));
            }
        }
        let (Some(iat), Some(exp)) = (claims["iat"].as_i64(), claims["exp"].as_i64()) else {
            return Err(AuthError::new("PSYNC_S2101", "\"iat\" and \"exp\" claims must be numbers"));
        };
        if exp <= now_secs() - CLOCK_TOLERANCE_SECS {
            return Err(expired());
        }
        let aud = &claims["aud"];
        let audiences: Vec<&Value> = match aud {
            Value::Null => {
                return Err(AuthError::new("PSYNC_S2105", "JWT payload is missing a required claim \"aud\""));
            }
            Value::Array(list) => list.iter().collect(),
            one => vec![one],
        };
        if !audiences.iter().any(|a| a.as_str().is_some_and(|a| self.audiences.iter().any(|ok| ok == a))) {
            return Err(AuthError::new("PSYNC_S2105", format!("Unexpected \"aud\" claim value: {aud}")));
        }
        if exp - iat > self.max_lifetime_secs {
            return Err(AuthError::new(
                "PSYNC_S2104",
                format!("Token must expire in a maximum of {} seconds, got {}s", self.max_lifetime_secs, exp - iat),
            ));
        }
        if matches!(claims.get("parameters"), Some(p) if !p.is_object() && !p.is_null()) {
            return Err(AuthError::new("PSYNC_S2101", "Payload parameters must be an object"));
        }
        Ok(Some(exp))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new_keys() -> Keys {
        Keys::new(&ServiceOptions::new(Dataset::Buckets(Vec::new())))
    }

    fn code(keys: &Keys, token: &str) -> &'static str {
        keys.verify(token).map(|_| "ok").unwrap_or_else(|e| e.code)
    }

    #[test]
    fn tokens_are_refused_with_the_service_codes() {
        let mut keys = new_keys();
        let now = now_secs();
        let claims = |f: &dyn Fn(&mut Value)| {
            let mut c = json!({"sub": "u", "aud": AUDIENCE, "iat": now, "exp": now + 600});
            f(&mut c);
            c
        };
        let issued = keys.issue(600);
        assert_eq!(keys.verify(&issued).unwrap().unwrap() - now, 600);
        assert_eq!(keys.verify("dev"), Ok(None));
        assert_eq!(code(&keys, "nope"), "PSYNC_S2101");
        assert_eq!(keys.verify("a.b.c").unwrap_err().description, "Token is not a well-formed JWT. Check the token format.");
        // Signed by another key: same header, another signature.
        let other = new_keys().sign(&claims(&|_| {}));
        assert_eq!(keys.verify(&other).unwrap_err().description, "signature verification failed");
        let (head, _) = issued.rsplit_once('.').unwrap();
        assert_eq!(code(&keys, &format!("{head}.AAAA")), "PSYNC_S2101");
        assert_eq!(code(&keys, &keys.sign(&claims(&|c| c["exp"] = json!(now - 61)))), "PSYNC_S2103");
        assert_eq!(code(&keys, &keys.sign(&claims(&|c| c["exp"] = json!(now - 30)))), "ok", "60 s of clock tolerance");
        let wrong_aud = keys.verify(&keys.sign(&claims(&|c| c["aud"] = json!("elsewhere")))).unwrap_err();
        assert_eq!((wrong_aud.code, wrong_aud.description.as_str()), ("PSYNC_S2105", "Unexpected \"aud\" claim value: \"elsewhere\""));
        assert_eq!(code(&keys, &keys.sign(&claims(&|c| c["aud"] = json!(["x", AUDIENCE])))), "ok");
        assert_eq!(code(&keys, &keys.sign(&claims(&|c| { c.as_object_mut().unwrap().remove("aud"); }))), "PSYNC_S2105");
        let missing_sub = keys.verify(&keys.sign(&claims(&|c| { c.as_object_mut().unwrap().remove("sub"); }))).unwrap_err();
        assert_eq!(missing_sub.description, "JWT payload is missing a required claim \"sub\"");
        assert_eq!(code(&keys, &keys.sign(&claims(&|c| c["exp"] = json!(now + 86_401)))), "PSYNC_S2104");
        assert_eq!(code(&keys, &keys.sign(&claims(&|c| c["parameters"] = json!([1])))), "PSYNC_S2101");
        keys.revoked.insert(issued.clone());
        assert_eq!(code(&keys, &issued), "PSYNC_S2103");
        keys.revoked.insert("dev".into());
        assert_eq!(code(&keys, "dev"), "PSYNC_S2103");
    }

    #[test]
    fn the_header_names_token_or_bearer() {
        assert_eq!(token_from_header(Some("Token abc")), Ok("abc"));
        assert_eq!(token_from_header(Some("Bearer abc")), Ok("abc"));
        for bad in [None, Some(""), Some("Basic abc"), Some("Token "), Some("Token a b"), Some("token abc")] {
            assert_eq!(token_from_header(bad).unwrap_err().code, "PSYNC_S2106", "{bad:?}");
        }
    }
}
