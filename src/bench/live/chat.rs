//! The Chat Completions client: one request to `{endpoint}/chat/completions`, retried on 429,
//! 5xx, timeouts and lost connections; every other failure ends at once. Errors come back as
//! one line that names the URL, what went wrong and what to check.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use reqwest::header::{HeaderMap, RETRY_AFTER};
use serde_json::Value;

/// Attempts per request: the first and two retries.
pub(crate) const ATTEMPTS: u32 = 3;
/// The wait before the first retry; doubled before the next.
const BACKOFF: Duration = Duration::from_millis(200);
/// The longest `Retry-After` honoured (a longer one is cut to this).
const MAX_RETRY_AFTER: Duration = Duration::from_secs(5);
/// Characters of a response body quoted in an error.
const EXCERPT: usize = 300;

/// A client of one endpoint.
pub(crate) struct Chat {
    http: reqwest::Client,
    url: String,
    api_key: Option<String>,
    timeout: Duration,
}

/// What the model answered.
#[derive(Debug)]
pub(crate) struct Reply {
    /// The message text (`None` when the model only called tools).
    pub(crate) content: Option<String>,
    /// The tool calls, in order.
    pub(crate) tool_calls: Vec<ToolCall>,
    /// `stop`, `tool_calls`, `length`, ...
    pub(crate) finish_reason: Option<String>,
    /// The API's own token counts, when it gave them.
    pub(crate) usage: Option<Usage>,
    /// The time of the attempt that answered (earlier failed attempts and waits excluded).
    pub(crate) elapsed: Duration,
}

/// One tool call of a reply.
#[derive(Clone, Debug)]
pub(crate) struct ToolCall {
    /// Its id (made up as `call_N` when the server gave none).
    pub(crate) id: String,
    /// The function name.
    pub(crate) name: String,
    /// The arguments, as the JSON text the model wrote (not necessarily valid).
    pub(crate) arguments: String,
}

/// The `usage` of a reply.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Usage {
    pub(crate) prompt_tokens: u64,
    pub(crate) completion_tokens: u64,
}

/// Why an attempt failed.
struct Failure {
    message: String,
    /// What to check, for the final message.
    hint: &'static str,
    /// Whether another attempt may succeed.
    retry: bool,
    /// The server's `Retry-After`.
    wait: Option<Duration>,
}

impl Chat {
    /// A client of `endpoint` (its `/chat/completions`).
    ///
    /// # Errors
    /// The HTTP client could not be made (no TLS configuration).
    pub(crate) fn new(
        endpoint: &str,
        api_key: Option<String>,
        timeout: Duration,
    ) -> Result<Chat, String> {
        // reqwest is built without a crypto provider: rustls on ring is the process default.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .build()
            .map_err(|e| format!("cannot make the HTTP client: {}", chain(&e)))?;
        Ok(Chat {
            http,
            url: format!("{}/chat/completions", endpoint.trim_end_matches('/')),
            api_key,
            timeout,
        })
    }

    /// Sends `body`, retrying what may pass on a second try.
    ///
    /// # Errors
    /// The request failed for good: the message names the URL, the failure (HTTP status and
    /// the API's error message, a timeout, a refused connection, a reply that is not a chat
    /// completion), the attempts made, and what to check.
    pub(crate) async fn complete(&self, body: &Value) -> Result<Reply, String> {
        let mut backoff = BACKOFF;
        let mut attempt = 1;
        loop {
            let started = Instant::now();
            let failure = match self.attempt(body).await {
                Ok(mut reply) => {
                    reply.elapsed = started.elapsed();
                    return Ok(reply);
                }
                Err(failure) => failure,
            };
            if !failure.retry {
                return Err(format!("{} ({})", failure.message, failure.hint));
            }
            if attempt == ATTEMPTS {
                return Err(format!(
                    "{} (after {ATTEMPTS} attempts; {})",
                    failure.message, failure.hint
                ));
            }
            tokio::time::sleep(failure.wait.unwrap_or(backoff)).await;
            backoff *= 2;
            attempt += 1;
        }
    }

    async fn attempt(&self, body: &Value) -> Result<Reply, Failure> {
        let mut request = self.http.post(&self.url).timeout(self.timeout).json(body);
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        let response = request.send().await.map_err(|e| self.transport(&e))?;
        let status = response.status();
        let wait = retry_after(response.headers());
        let text = response.text().await.map_err(|e| self.transport(&e))?;
        if !status.is_success() {
            return Err(Failure {
                message: format!("HTTP {status} from {}: {}", self.url, api_message(&text)),
                hint: status_hint(status),
                retry: status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error(),
                wait,
            });
        }
        parse(&text).map_err(|e| Failure {
            message: format!(
                "the reply from {} is not a chat completion: {e}; it begins: {}",
                self.url,
                excerpt(&text)
            ),
            hint: "check that --endpoint is an OpenAI-compatible API (its base URL, e.g. http://localhost:8080/v1)",
            retry: false,
            wait: None,
        })
    }

    fn transport(&self, e: &reqwest::Error) -> Failure {
        if e.is_timeout() {
            Failure {
                message: format!(
                    "timed out: no reply from {} within {:.1} s",
                    self.url,
                    self.timeout.as_secs_f64()
                ),
                hint: "raise --request-timeout-s for a slow model, or check that the server is not stuck",
                retry: true,
                wait: None,
            }
        } else if e.is_connect() {
            Failure {
                message: format!("cannot connect to {}: {}", self.url, chain(e)),
                hint: "check --endpoint and that the server is running",
                retry: true,
                wait: None,
            }
        } else {
            Failure {
                message: format!("the request to {} failed: {}", self.url, chain(e)),
                hint: "check --endpoint and the server's log",
                retry: true,
                wait: None,
            }
        }
    }
}

fn status_hint(status: StatusCode) -> &'static str {
    match status.as_u16() {
        401 | 403 => "check the API key (--api-key-env) and that it may use this model",
        404 => "check --endpoint (`/chat/completions` is appended to it) and --model",
        429 => "the API is rate-limiting: wait, or lower --repeat",
        400 | 422 => {
            "the server refused the request: check --model, and that it supports tool calls"
        }
        s if s >= 500 => "the server failed: check its log, and that it can serve this model",
        _ => "check --endpoint, --model and the API key",
    }
}

/// `Retry-After` in seconds (an HTTP date is not honoured), capped.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let seconds: f64 = headers
        .get(RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    (seconds.is_finite() && seconds >= 0.0)
        .then(|| Duration::from_secs_f64(seconds).min(MAX_RETRY_AFTER))
}

/// The API's `{"error": {"message": ...}}` (or `{"error": "..."}`, `{"message": ...}`), else the
/// start of the body.
fn api_message(body: &str) -> String {
    let message = serde_json::from_str::<Value>(body).ok().and_then(|v| {
        let error = v.get("error").unwrap_or(&v);
        error
            .get("message")
            .and_then(Value::as_str)
            .or_else(|| error.as_str())
            .map(str::to_string)
    });
    match message {
        Some(m) => excerpt(&m),
        None if body.trim().is_empty() => "(empty body)".to_string(),
        None => excerpt(body),
    }
}

/// At most [`EXCERPT`] characters of `text`, on one line.
fn excerpt(text: &str) -> String {
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(EXCERPT) {
        Some((cut, _)) => format!("{}...", &line[..cut]),
        None => line,
    }
}

/// An error and its sources, `: `-separated (reqwest's own message is terse).
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let next = s.to_string();
        if !text.contains(&next) {
            text.push_str(": ");
            text.push_str(&next);
        }
        source = s.source();
    }
    text
}

/// Reads a chat completion.
fn parse(text: &str) -> Result<Reply, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("not JSON ({e})"))?;
    if let Some(error) = v.get("error").filter(|e| !e.is_null()) {
        let message = error
            .get("message")
            .and_then(Value::as_str)
            .map_or_else(|| error.to_string(), str::to_string);
        return Err(format!(
            "the API answered with an error: {}",
            excerpt(&message)
        ));
    }
    let choice = v
        .get("choices")
        .and_then(|c| c.get(0))
        .ok_or("it has no `choices[0]`")?;
    let message = choice
        .get("message")
        .filter(|m| m.is_object())
        .ok_or("it has no `choices[0].message`")?;
    let content = message
        .get("content")
        .and_then(Value::as_str)
        .map(str::to_string);
    let mut tool_calls = Vec::new();
    if let Some(calls) = message.get("tool_calls").filter(|c| !c.is_null()) {
        let calls = calls
            .as_array()
            .ok_or("`choices[0].message.tool_calls` is not an array")?;
        for (i, call) in calls.iter().enumerate() {
            let function = call
                .get("function")
                .ok_or_else(|| format!("`tool_calls[{i}]` has no `function`"))?;
            let name = function
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| format!("`tool_calls[{i}].function` has no string `name`"))?;
            let arguments = match function.get("arguments") {
                Some(Value::String(s)) => s.clone(),
                None | Some(Value::Null) => String::new(),
                // Some servers send the object itself.
                Some(other) => other.to_string(),
            };
            let id = call
                .get("id")
                .and_then(Value::as_str)
                .filter(|id| !id.is_empty())
                .map_or_else(|| format!("call_{i}"), str::to_string);
            tool_calls.push(ToolCall {
                id,
                name: name.to_string(),
                arguments,
            });
        }
    }
    let usage = v.get("usage").filter(|u| u.is_object()).map(|u| Usage {
        prompt_tokens: u.get("prompt_tokens").and_then(Value::as_u64).unwrap_or(0),
        completion_tokens: u
            .get("completion_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(0),
    });
    Ok(Reply {
        content,
        tool_calls,
        finish_reason: choice
            .get("finish_reason")
            .and_then(Value::as_str)
            .map(str::to_string),
        usage,
        elapsed: Duration::ZERO,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_with_tool_calls_and_usage_is_read() {
        let reply = parse(
            r#"{"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[
                {"id":"a","type":"function","function":{"name":"f","arguments":"{\"x\":1}"}},
                {"type":"function","function":{"name":"g","arguments":{"y":2}}}]},
                "finish_reason":"tool_calls"}],"usage":{"prompt_tokens":10,"completion_tokens":3}}"#,
        )
        .unwrap();
        assert_eq!(reply.content, None);
        assert_eq!(reply.tool_calls.len(), 2);
        assert_eq!(reply.tool_calls[0].id, "a");
        assert_eq!(reply.tool_calls[0].arguments, r#"{"x":1}"#);
        assert_eq!(reply.tool_calls[1].id, "call_1");
        assert_eq!(reply.tool_calls[1].arguments, r#"{"y":2}"#);
        assert_eq!(reply.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(reply.usage.unwrap().prompt_tokens, 10);
    }

    #[test]
    fn what_is_not_a_completion_says_why() {
        assert!(parse("<html>").unwrap_err().contains("not JSON"));
        assert!(
            parse(r#"{"choices":[]}"#)
                .unwrap_err()
                .contains("choices[0]")
        );
        assert!(
            parse(r#"{"error":{"message":"model not loaded"}}"#)
                .unwrap_err()
                .contains("model not loaded")
        );
        assert_eq!(
            api_message(r#"{"error":{"message":"bad key","type":"auth"}}"#),
            "bad key"
        );
        assert_eq!(api_message(""), "(empty body)");
    }

    #[test]
    fn retry_after_is_read_in_seconds_and_capped() {
        let mut headers = HeaderMap::new();
        headers.insert(RETRY_AFTER, "0".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::ZERO));
        headers.insert(RETRY_AFTER, "3600".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(MAX_RETRY_AFTER));
        headers.insert(
            RETRY_AFTER,
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
        );
        assert_eq!(retry_after(&headers), None);
    }
}
