"""The fixture repository of the built-in scenarios: `hookline`, a small Rust webhook delivery
service (32 files). FILES maps relative paths to contents; gen_builtins.py copies it into each
scenario's `builtins.files`."""

FILES = {}

FILES["Cargo.toml"] = '''[package]
name = "hookline"
version = "0.7.2"
edition = "2021"
rust-version = "1.78"
description = "Reliable, signed webhook delivery with retries and a Postgres-backed queue"
license = "Apache-2.0"
repository = "https://github.com/northwind/hookline"

[dependencies]
anyhow = "1"
axum = "0.7"
base64 = "0.22"
hex = "0.4"
hmac = "0.12"
metrics = "0.23"
metrics-exporter-prometheus = "0.15"
rand = "0.8"
reqwest = { version = "0.12", default-features = false, features = ["json", "rustls-tls"] }
serde = { version = "1", features = ["derive"] }
serde_json = "1"
sha2 = "0.10"
sqlx = { version = "0.7", features = ["runtime-tokio", "postgres", "uuid", "chrono", "json"] }
thiserror = "1"
tokio = { version = "1", features = ["full"] }
toml = "0.8"
tracing = "0.1"
tracing-subscriber = { version = "0.3", features = ["env-filter", "json"] }
uuid = { version = "1", features = ["v4", "serde"] }
chrono = { version = "0.4", features = ["serde"] }

[dev-dependencies]
criterion = "0.5"
wiremock = "0.6"

[[bench]]
name = "throughput"
harness = false
'''

FILES["README.md"] = '''# hookline

Reliable, signed webhook delivery. Producers enqueue events over HTTP; workers deliver them to
the subscribed endpoints with an HMAC-SHA256 signature, retry failures with exponential
backoff and jitter, and park an endpoint after too many consecutive failures.

## Running

```sh
export HOOKLINE_DATABASE_URL=postgres://hookline@localhost/hookline
cargo run --release -- --config config/production.toml
```

Migrations in `migrations/` run at startup.

## Layout

- `src/api/` - the producer API (`POST /v1/events`, endpoint management) and its auth
- `src/queue/` - the delivery queue: Postgres (`SELECT ... FOR UPDATE SKIP LOCKED`) or in-memory for tests
- `src/delivery.rs` - one delivery attempt: sign, send, classify the response
- `src/retry.rs` - retry policy and backoff
- `src/scheduler.rs` - the worker loop
- `src/signing.rs` - `Hookline-Signature` header (`t=...,v1=...`)

## Signature

Each request carries `Hookline-Signature: t=<unix seconds>,v1=<hex hmac>` where the HMAC is
computed over `"{t}.{body}"` with the endpoint's secret. Receivers should reject timestamps
older than five minutes.
'''

FILES["CHANGELOG.md"] = '''# Changelog

## 0.7.2 - 2026-02-18
- Fix: a 410 Gone response now disables the endpoint instead of retrying (#212).
- Fix: jitter could exceed `max_backoff_ms` by up to 10%.

## 0.7.1 - 2026-01-30
- Postgres queue: batch claims use `SKIP LOCKED`; two workers no longer deliver the same event.
- Metrics: `hookline_delivery_seconds` histogram buckets start at 5 ms.

## 0.7.0 - 2026-01-12
- New retry policy configuration (`base_backoff_ms`, `max_backoff_ms`, `max_attempts`).
- Endpoints are parked after `park_after_failures` consecutive failures.
- Breaking: the signature header is now `Hookline-Signature` (was `X-Hookline-Sig`).

## 0.6.0 - 2025-11-20
- In-memory queue for tests and local development.
- Structured JSON logs (`log_format = "json"`).
'''

FILES["rustfmt.toml"] = '''edition = "2021"
max_width = 100
imports_granularity = "Module"
'''

FILES[".github/workflows/ci.yml"] = '''name: ci
on:
  push:
    branches: [main]
  pull_request:

jobs:
  test:
    runs-on: ubuntu-latest
    services:
      postgres:
        image: postgres:16
        env:
          POSTGRES_USER: hookline
          POSTGRES_PASSWORD: hookline
        ports: ["5432:5432"]
    env:
      HOOKLINE_DATABASE_URL: postgres://hookline:hookline@localhost/hookline
    steps:
      - uses: actions/checkout@v4
      - uses: dtolnay/rust-toolchain@stable
        with:
          components: clippy, rustfmt
      - run: cargo fmt --check
      - run: cargo clippy --all-targets -- -D warnings
      - run: cargo test --all-targets
'''

FILES["config/default.toml"] = '''listen_addr = "127.0.0.1:8080"
metrics_addr = "127.0.0.1:9090"
database_url = "postgres://hookline@localhost/hookline"
log_format = "pretty"

worker_count = 4
batch_size = 50

request_timeout_ms = 10000
max_attempts = 8
base_backoff_ms = 500
max_backoff_ms = 3600000
park_after_failures = 20
'''

FILES["config/production.toml"] = '''listen_addr = "0.0.0.0:8080"
metrics_addr = "0.0.0.0:9090"
log_format = "json"

worker_count = 32
batch_size = 200

request_timeout_ms = 15000
max_attempts = 12
'''

FILES["migrations/0001_init.sql"] = '''CREATE TABLE endpoints (
    id          UUID PRIMARY KEY,
    tenant_id   UUID NOT NULL,
    url         TEXT NOT NULL,
    secret      TEXT NOT NULL,
    event_types TEXT[] NOT NULL DEFAULT '{}',
    disabled    BOOLEAN NOT NULL DEFAULT FALSE,
    consecutive_failures INT NOT NULL DEFAULT 0,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE deliveries (
    id           UUID PRIMARY KEY,
    endpoint_id  UUID NOT NULL REFERENCES endpoints(id),
    event_type   TEXT NOT NULL,
    payload      JSONB NOT NULL,
    attempt      INT NOT NULL DEFAULT 0,
    next_attempt_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    state        TEXT NOT NULL DEFAULT 'pending',
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE INDEX deliveries_due ON deliveries (next_attempt_at) WHERE state = 'pending';
'''

FILES["migrations/0002_attempts.sql"] = '''CREATE TABLE attempts (
    delivery_id UUID NOT NULL REFERENCES deliveries(id),
    attempt     INT NOT NULL,
    status_code INT,
    error       TEXT,
    duration_ms INT NOT NULL,
    at          TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (delivery_id, attempt)
);
'''

FILES["src/main.rs"] = '''use std::path::PathBuf;

use anyhow::Context;
use hookline::config::Config;
use hookline::{api, metrics, queue, scheduler};
use tracing_subscriber::EnvFilter;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let path = std::env::args()
        .skip_while(|a| a != "--config")
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("config/default.toml"));
    let config = Config::load(&path).with_context(|| format!("loading {}", path.display()))?;
    init_tracing(&config);

    let pool = queue::postgres::connect(&config.database_url).await?;
    sqlx::migrate!("./migrations").run(&pool).await?;
    let queue = queue::postgres::PgQueue::new(pool.clone());

    metrics::install(&config)?;
    let workers = scheduler::spawn_workers(&config, queue.clone());
    let server = api::serve(&config, pool);

    tokio::select! {
        res = server => res?,
        _ = tokio::signal::ctrl_c() => tracing::info!("shutting down"),
    }
    workers.shutdown().await;
    Ok(())
}

fn init_tracing(config: &Config) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    if config.log_format == "json" {
        tracing_subscriber::fmt().json().with_env_filter(filter).init();
    } else {
        tracing_subscriber::fmt().with_env_filter(filter).init();
    }
}
'''

FILES["src/lib.rs"] = '''//! hookline: signed webhook delivery with retries.

pub mod api;
pub mod config;
pub mod delivery;
pub mod error;
pub mod http;
pub mod metrics;
pub mod queue;
pub mod retry;
pub mod scheduler;
pub mod signing;
pub mod storage;
'''

FILES["src/config.rs"] = '''use std::path::Path;

use serde::Deserialize;

use crate::error::Error;

/// Service configuration, read from a TOML file; `HOOKLINE_*` environment variables override
/// individual keys.
#[derive(Debug, Clone, Deserialize)]
pub struct Config {
    pub listen_addr: String,
    pub metrics_addr: String,
    #[serde(default = "default_database_url")]
    pub database_url: String,
    #[serde(default)]
    pub log_format: String,
    pub worker_count: usize,
    pub batch_size: i64,
    pub request_timeout_ms: u64,
    pub max_attempts: u32,
    #[serde(default = "default_base_backoff")]
    pub base_backoff_ms: u64,
    #[serde(default = "default_max_backoff")]
    pub max_backoff_ms: u64,
    #[serde(default = "default_park_after")]
    pub park_after_failures: i32,
    #[serde(default)]
    pub api_keys: Vec<String>,
}

fn default_database_url() -> String {
    "postgres://hookline@localhost/hookline".into()
}

fn default_base_backoff() -> u64 {
    500
}

fn default_max_backoff() -> u64 {
    3_600_000
}

fn default_park_after() -> i32 {
    20
}

impl Config {
    pub fn load(path: &Path) -> Result<Self, Error> {
        let text = std::fs::read_to_string(path)?;
        let mut config: Config = toml::from_str(&text).map_err(|e| Error::Config(e.to_string()))?;
        if let Ok(url) = std::env::var("HOOKLINE_DATABASE_URL") {
            config.database_url = url;
        }
        // TODO: support HOOKLINE_API_KEYS as a comma-separated list
        config.validate()?;
        Ok(config)
    }

    fn validate(&self) -> Result<(), Error> {
        if self.worker_count == 0 {
            return Err(Error::Config("worker_count must be at least 1".into()));
        }
        if self.base_backoff_ms > self.max_backoff_ms {
            return Err(Error::Config("base_backoff_ms exceeds max_backoff_ms".into()));
        }
        Ok(())
    }
}
'''

FILES["src/error.rs"] = '''use thiserror::Error;

#[derive(Debug, Error)]
pub enum Error {
    #[error("configuration: {0}")]
    Config(String),
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
    #[error("http: {0}")]
    Http(#[from] reqwest::Error),
    #[error("endpoint {0} not found")]
    EndpointNotFound(uuid::Uuid),
    #[error("unauthorized")]
    Unauthorized,
}
'''

FILES["src/signing.rs"] = '''use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

pub const HEADER: &str = "Hookline-Signature";

/// The `Hookline-Signature` value for `body` sent at unix time `timestamp`.
pub fn sign(secret: &str, timestamp: i64, body: &[u8]) -> String {
    let mut mac = HmacSha256::new_from_slice(secret.as_bytes()).expect("hmac accepts any key length");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    format!("t={timestamp},v1={}", hex::encode(mac.finalize().into_bytes()))
}

/// Check a signature header as a receiver would; `tolerance_secs` bounds the clock skew.
pub fn verify(secret: &str, header: &str, body: &[u8], now: i64, tolerance_secs: i64) -> bool {
    let mut timestamp = None;
    let mut signatures = Vec::new();
    for part in header.split(',') {
        match part.split_once('=') {
            Some(("t", t)) => timestamp = t.parse::<i64>().ok(),
            Some(("v1", s)) => signatures.push(s),
            _ => {}
        }
    }
    let Some(t) = timestamp else { return false };
    if (now - t).abs() > tolerance_secs {
        return false;
    }
    let expected = sign(secret, t, body);
    let expected = expected.rsplit_once("v1=").map(|(_, s)| s).unwrap_or_default();
    // FIXME: not constant-time; use `subtle::ConstantTimeEq` before exposing verify() publicly
    signatures.iter().any(|s| *s == expected)
}
'''

FILES["src/retry.rs"] = '''use std::time::Duration;

use rand::Rng;

use crate::config::Config;

/// How failed deliveries are retried.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    pub base: Duration,
    pub max: Duration,
    pub max_attempts: u32,
}

impl RetryPolicy {
    pub fn from_config(config: &Config) -> Self {
        RetryPolicy {
            base: Duration::from_millis(config.base_backoff_ms),
            max: Duration::from_millis(config.max_backoff_ms),
            max_attempts: config.max_attempts,
        }
    }

    /// Whether a delivery that failed on attempt `attempt` (1-based) gets another try.
    pub fn should_retry(&self, attempt: u32) -> bool {
        attempt < self.max_attempts
    }
}

/// Delay before retry number `attempt` (1-based): exponential from `policy.base`, capped at
/// `policy.max`, with up to 10% jitter that never exceeds the cap.
pub fn backoff_delay(attempt: u32, policy: &RetryPolicy) -> Duration {
    let exp = policy.base.saturating_mul(2u32.saturating_pow(attempt.saturating_sub(1)));
    let capped = exp.min(policy.max);
    let jitter_ms = rand::thread_rng().gen_range(0..=capped.as_millis() as u64 / 10);
    (capped + Duration::from_millis(jitter_ms)).min(policy.max)
}

/// Delay requested by the receiver in a `Retry-After` header (seconds form only).
pub fn retry_after(value: &str) -> Option<Duration> {
    // TODO: accept the HTTP-date form of Retry-After as well
    value.trim().parse::<u64>().ok().map(Duration::from_secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> RetryPolicy {
        RetryPolicy { base: Duration::from_millis(500), max: Duration::from_secs(60), max_attempts: 8 }
    }

    #[test]
    fn first_retry_waits_about_the_base_delay() {
        let d = backoff_delay(1, &policy());
        assert!(d >= Duration::from_millis(500) && d <= Duration::from_millis(550));
    }

    #[test]
    fn delay_is_capped() {
        assert_eq!(backoff_delay(30, &policy()), Duration::from_secs(60));
    }

    #[test]
    fn retry_after_seconds() {
        assert_eq!(retry_after(" 120 "), Some(Duration::from_secs(120)));
        assert_eq!(retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
    }
}
'''

FILES["src/delivery.rs"] = '''use std::time::{Duration, Instant};

use chrono::Utc;
use tracing::{info, warn};

use crate::config::Config;
use crate::http::client::WebhookClient;
use crate::queue::Delivery;
use crate::retry::{backoff_delay, retry_after, RetryPolicy};
use crate::signing;
use crate::storage::endpoints::Endpoint;

/// What happened to one attempt, and what to do next.
#[derive(Debug, PartialEq)]
pub enum Outcome {
    Delivered { status: u16 },
    RetryIn(Duration),
    GiveUp { reason: String },
    DisableEndpoint,
}

pub struct Deliverer {
    client: WebhookClient,
    policy: RetryPolicy,
    timeout: Duration,
}

impl Deliverer {
    pub fn new(cfg: &Config) -> Self {
        Deliverer {
            client: WebhookClient::new(cfg),
            policy: RetryPolicy::from_config(cfg),
            timeout: Duration::from_millis(cfg.request_timeout_ms),
        }
    }

    pub async fn attempt(&self, delivery: &Delivery, endpoint: &Endpoint) -> Outcome {
        let body = serde_json::to_vec(&delivery.payload).expect("payload is valid JSON");
        let signature = signing::sign(&endpoint.secret, Utc::now().timestamp(), &body);
        let started = Instant::now();
        let result = self.client.post(&endpoint.url, body, &signature, self.timeout).await;
        crate::metrics::record_attempt(started.elapsed(), result.as_ref().ok().map(|r| r.status));
        match result {
            Ok(resp) if (200..300).contains(&resp.status) => {
                info!(delivery = %delivery.id, status = resp.status, "delivered");
                Outcome::Delivered { status: resp.status }
            }
            Ok(resp) if resp.status == 410 => Outcome::DisableEndpoint,
            Ok(resp) if resp.status == 429 || resp.status >= 500 => {
                let hinted = resp.retry_after.as_deref().and_then(retry_after);
                self.next_step(delivery.attempt, hinted)
            }
            Ok(resp) => Outcome::GiveUp { reason: format!("status {}", resp.status) },
            Err(e) => {
                warn!(delivery = %delivery.id, error = %e, "attempt failed");
                self.next_step(delivery.attempt, None)
            }
        }
    }

    fn next_step(&self, attempt: u32, hinted: Option<Duration>) -> Outcome {
        if !self.policy.should_retry(attempt) {
            return Outcome::GiveUp { reason: format!("gave up after {attempt} attempts") };
        }
        // FIXME: a huge Retry-After (days) is honoured as is; clamp it to policy.max
        Outcome::RetryIn(hinted.unwrap_or_else(|| backoff_delay(attempt, &self.policy)))
    }
}
'''

FILES["src/queue/mod.rs"] = '''pub mod memory;
pub mod postgres;

use chrono::{DateTime, Utc};
use serde_json::Value;
use uuid::Uuid;

/// One pending delivery of an event to an endpoint.
#[derive(Debug, Clone)]
pub struct Delivery {
    pub id: Uuid,
    pub endpoint_id: Uuid,
    pub event_type: String,
    pub payload: Value,
    pub attempt: u32,
    pub next_attempt_at: DateTime<Utc>,
}

/// A queue of deliveries that workers claim in batches.
#[allow(async_fn_in_trait)]
pub trait Queue: Clone + Send + Sync + 'static {
    async fn enqueue(&self, delivery: Delivery) -> anyhow::Result<()>;
    async fn claim_due(&self, limit: i64) -> anyhow::Result<Vec<Delivery>>;
    async fn complete(&self, id: Uuid) -> anyhow::Result<()>;
    async fn reschedule(&self, id: Uuid, at: DateTime<Utc>, attempt: u32) -> anyhow::Result<()>;
    async fn fail(&self, id: Uuid, reason: &str) -> anyhow::Result<()>;
}
'''

FILES["src/queue/memory.rs"] = '''use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{Delivery, Queue};

/// In-memory queue for tests and local runs. Not durable.
#[derive(Clone, Default)]
pub struct MemoryQueue {
    inner: Arc<Mutex<HashMap<Uuid, (Delivery, bool)>>>,
}

impl MemoryQueue {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.inner.lock().unwrap().len()
    }
}

impl Queue for MemoryQueue {
    async fn enqueue(&self, delivery: Delivery) -> anyhow::Result<()> {
        self.inner.lock().unwrap().insert(delivery.id, (delivery, false));
        Ok(())
    }

    async fn claim_due(&self, limit: i64) -> anyhow::Result<Vec<Delivery>> {
        let now = Utc::now();
        let mut map = self.inner.lock().unwrap();
        let mut due: Vec<Delivery> = map
            .values_mut()
            .filter(|(d, claimed)| !*claimed && d.next_attempt_at <= now)
            .take(limit as usize)
            .map(|(d, claimed)| {
                *claimed = true;
                d.clone()
            })
            .collect();
        due.sort_by_key(|d| d.next_attempt_at);
        Ok(due)
    }

    async fn complete(&self, id: Uuid) -> anyhow::Result<()> {
        self.inner.lock().unwrap().remove(&id);
        Ok(())
    }

    async fn reschedule(&self, id: Uuid, at: DateTime<Utc>, attempt: u32) -> anyhow::Result<()> {
        if let Some((d, claimed)) = self.inner.lock().unwrap().get_mut(&id) {
            d.next_attempt_at = at;
            d.attempt = attempt;
            *claimed = false;
        }
        Ok(())
    }

    async fn fail(&self, id: Uuid, _reason: &str) -> anyhow::Result<()> {
        // TODO: keep failed deliveries around so tests can assert on the reason
        self.inner.lock().unwrap().remove(&id);
        Ok(())
    }
}
'''

FILES["src/queue/postgres.rs"] = '''use chrono::{DateTime, Utc};
use sqlx::postgres::{PgPool, PgPoolOptions};
use uuid::Uuid;

use super::{Delivery, Queue};

pub async fn connect(url: &str) -> anyhow::Result<PgPool> {
    Ok(PgPoolOptions::new().max_connections(20).connect(url).await?)
}

#[derive(Clone)]
pub struct PgQueue {
    pool: PgPool,
}

impl PgQueue {
    pub fn new(pool: PgPool) -> Self {
        PgQueue { pool }
    }
}

impl Queue for PgQueue {
    async fn enqueue(&self, d: Delivery) -> anyhow::Result<()> {
        sqlx::query(
            "INSERT INTO deliveries (id, endpoint_id, event_type, payload, attempt, next_attempt_at)
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(d.id)
        .bind(d.endpoint_id)
        .bind(&d.event_type)
        .bind(&d.payload)
        .bind(d.attempt as i32)
        .bind(d.next_attempt_at)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn claim_due(&self, limit: i64) -> anyhow::Result<Vec<Delivery>> {
        let rows: Vec<(Uuid, Uuid, String, serde_json::Value, i32, DateTime<Utc>)> = sqlx::query_as(
            "UPDATE deliveries SET state = 'in_flight'
             WHERE id IN (SELECT id FROM deliveries
                          WHERE state = 'pending' AND next_attempt_at <= now()
                          ORDER BY next_attempt_at
                          LIMIT $1 FOR UPDATE SKIP LOCKED)
             RETURNING id, endpoint_id, event_type, payload, attempt, next_attempt_at",
        )
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .into_iter()
            .map(|(id, endpoint_id, event_type, payload, attempt, next_attempt_at)| Delivery {
                id,
                endpoint_id,
                event_type,
                payload,
                attempt: attempt as u32,
                next_attempt_at,
            })
            .collect())
    }

    async fn complete(&self, id: Uuid) -> anyhow::Result<()> {
        sqlx::query("UPDATE deliveries SET state = 'delivered' WHERE id = $1")
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn reschedule(&self, id: Uuid, at: DateTime<Utc>, attempt: u32) -> anyhow::Result<()> {
        sqlx::query("UPDATE deliveries SET state = 'pending', next_attempt_at = $2, attempt = $3 WHERE id = $1")
            .bind(id)
            .bind(at)
            .bind(attempt as i32)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn fail(&self, id: Uuid, reason: &str) -> anyhow::Result<()> {
        // FIXME: reason is dropped; add a `last_error` column in the next migration
        let _ = reason;
        sqlx::query("UPDATE deliveries SET state = 'failed' WHERE id = $1")
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}
'''

FILES["src/http/mod.rs"] = '''pub mod client;
'''

FILES["src/http/client.rs"] = '''use std::time::Duration;

use reqwest::header::{HeaderValue, CONTENT_TYPE, RETRY_AFTER, USER_AGENT};

use crate::config::Config;
use crate::signing;

pub struct Response {
    pub status: u16,
    pub retry_after: Option<String>,
}

/// HTTP client for webhook requests: no redirects, rustls, a fixed user agent.
pub struct WebhookClient {
    inner: reqwest::Client,
}

impl WebhookClient {
    pub fn new(config: &Config) -> Self {
        let inner = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_millis(config.request_timeout_ms / 3))
            .pool_max_idle_per_host(config.worker_count)
            .build()
            .expect("the TLS backend initialises");
        WebhookClient { inner }
    }

    pub async fn post(
        &self,
        url: &str,
        body: Vec<u8>,
        signature: &str,
        timeout: Duration,
    ) -> Result<Response, reqwest::Error> {
        let resp = self
            .inner
            .post(url)
            .timeout(timeout)
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .header(USER_AGENT, concat!("hookline/", env!("CARGO_PKG_VERSION")))
            .header(signing::HEADER, signature)
            .body(body)
            .send()
            .await?;
        let retry_after = resp
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        Ok(Response { status: resp.status().as_u16(), retry_after })
    }
}
'''

FILES["src/api/mod.rs"] = '''pub mod auth;
pub mod routes;

use axum::Router;
use sqlx::PgPool;

use crate::config::Config;

#[derive(Clone)]
pub struct AppState {
    pub pool: PgPool,
    pub api_keys: Vec<String>,
}

pub async fn serve(config: &Config, pool: PgPool) -> anyhow::Result<()> {
    let state = AppState { pool, api_keys: config.api_keys.clone() };
    let app: Router = routes::router(state);
    let listener = tokio::net::TcpListener::bind(&config.listen_addr).await?;
    tracing::info!(addr = %config.listen_addr, "api listening");
    axum::serve(listener, app).await?;
    Ok(())
}
'''

FILES["src/api/auth.rs"] = '''use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::Response;

use super::AppState;

/// Require `Authorization: Bearer <key>` with one of the configured API keys.
pub async fn require_api_key(
    State(state): State<AppState>,
    req: Request,
    next: Next,
) -> Result<Response, StatusCode> {
    let key = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    match key {
        Some(k) if state.api_keys.iter().any(|allowed| allowed == k) => Ok(next.run(req).await),
        // TODO: rate-limit failed attempts per source IP
        _ => Err(StatusCode::UNAUTHORIZED),
    }
}
'''

FILES["src/api/routes.rs"] = '''use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{delete, get, post};
use axum::{middleware, Json, Router};
use chrono::Utc;
use serde::Deserialize;
use serde_json::Value;
use uuid::Uuid;

use super::{auth, AppState};
use crate::queue::Delivery;
use crate::storage::endpoints;

pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/v1/events", post(create_event))
        .route("/v1/endpoints", post(create_endpoint))
        .route("/v1/endpoints/:id", get(get_endpoint))
        .route("/v1/endpoints/:id", delete(delete_endpoint))
        .route_layer(middleware::from_fn_with_state(state.clone(), auth::require_api_key))
        .route("/healthz", get(|| async { "ok" }))
        .with_state(state)
}

#[derive(Deserialize)]
struct NewEvent {
    tenant_id: Uuid,
    event_type: String,
    payload: Value,
}

async fn create_event(
    State(state): State<AppState>,
    Json(event): Json<NewEvent>,
) -> Result<StatusCode, StatusCode> {
    let targets = endpoints::subscribed(&state.pool, event.tenant_id, &event.event_type)
        .await
        .map_err(|_| StatusCode::INTERNAL_SERVER_ERROR)?;
    // FIXME: enqueue in one transaction; a crash halfway leaves some endpoints without the event
    for endpoint in targets {
        let delivery = Delivery {
            id: Uuid::new_v4(),
            endpoint_id: endpoint.id,
            event_type: event.event_type.clone(),
            payload: event.payload.clone(),
            attempt: 0,
            next_attempt_at: Utc::now(),
        };
        endpoints::insert_delivery(&state.pool, &delivery)
            .await
            .map_err(|_| StatusCode::INTERNAL_SERVER_ERROR)?;
    }
    Ok(StatusCode::ACCEPTED)
}

#[derive(Deserialize)]
struct NewEndpoint {
    tenant_id: Uuid,
    url: String,
    event_types: Vec<String>,
}

async fn create_endpoint(
    State(state): State<AppState>,
    Json(body): Json<NewEndpoint>,
) -> Result<Json<endpoints::Endpoint>, StatusCode> {
    // TODO: reject non-https URLs outside of development
    endpoints::create(&state.pool, body.tenant_id, &body.url, &body.event_types)
        .await
        .map(Json)
        .map_err(|_| StatusCode::INTERNAL_SERVER_ERROR)
}

async fn get_endpoint(
    State(state): State<AppState>,
    Path(id): Path<Uuid>,
) -> Result<Json<endpoints::Endpoint>, StatusCode> {
    endpoints::get(&state.pool, id).await.map(Json).map_err(|_| StatusCode::NOT_FOUND)
}

async fn delete_endpoint(State(state): State<AppState>, Path(id): Path<Uuid>) -> StatusCode {
    match endpoints::disable(&state.pool, id).await {
        Ok(()) => StatusCode::NO_CONTENT,
        Err(_) => StatusCode::NOT_FOUND,
    }
}
'''

FILES["src/storage/mod.rs"] = '''pub mod endpoints;
'''

FILES["src/storage/endpoints.rs"] = '''use rand::distributions::Alphanumeric;
use rand::Rng;
use serde::Serialize;
use sqlx::PgPool;
use uuid::Uuid;

use crate::error::Error;
use crate::queue::Delivery;

#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct Endpoint {
    pub id: Uuid,
    pub tenant_id: Uuid,
    pub url: String,
    #[serde(skip_serializing)]
    pub secret: String,
    pub event_types: Vec<String>,
    pub disabled: bool,
    pub consecutive_failures: i32,
}

pub async fn create(pool: &PgPool, tenant_id: Uuid, url: &str, event_types: &[String]) -> Result<Endpoint, Error> {
    let secret: String = rand::thread_rng().sample_iter(&Alphanumeric).take(32).map(char::from).collect();
    let endpoint = sqlx::query_as::<_, Endpoint>(
        "INSERT INTO endpoints (id, tenant_id, url, secret, event_types) VALUES ($1, $2, $3, $4, $5)
         RETURNING id, tenant_id, url, secret, event_types, disabled, consecutive_failures",
    )
    .bind(Uuid::new_v4())
    .bind(tenant_id)
    .bind(url)
    .bind(format!("whsec_{secret}"))
    .bind(event_types)
    .fetch_one(pool)
    .await?;
    Ok(endpoint)
}

pub async fn get(pool: &PgPool, id: Uuid) -> Result<Endpoint, Error> {
    sqlx::query_as::<_, Endpoint>("SELECT id, tenant_id, url, secret, event_types, disabled, consecutive_failures FROM endpoints WHERE id = $1")
        .bind(id)
        .fetch_optional(pool)
        .await?
        .ok_or(Error::EndpointNotFound(id))
}

pub async fn subscribed(pool: &PgPool, tenant_id: Uuid, event_type: &str) -> Result<Vec<Endpoint>, Error> {
    Ok(sqlx::query_as::<_, Endpoint>(
        "SELECT id, tenant_id, url, secret, event_types, disabled, consecutive_failures FROM endpoints
         WHERE tenant_id = $1 AND NOT disabled AND ($2 = ANY(event_types) OR event_types = '{}')",
    )
    .bind(tenant_id)
    .bind(event_type)
    .fetch_all(pool)
    .await?)
}

pub async fn insert_delivery(pool: &PgPool, d: &Delivery) -> Result<(), Error> {
    sqlx::query("INSERT INTO deliveries (id, endpoint_id, event_type, payload) VALUES ($1, $2, $3, $4)")
        .bind(d.id)
        .bind(d.endpoint_id)
        .bind(&d.event_type)
        .bind(&d.payload)
        .execute(pool)
        .await?;
    Ok(())
}

pub async fn record_failure(pool: &PgPool, id: Uuid, park_after: i32) -> Result<bool, Error> {
    let (failures,): (i32,) = sqlx::query_as(
        "UPDATE endpoints SET consecutive_failures = consecutive_failures + 1 WHERE id = $1 RETURNING consecutive_failures",
    )
    .bind(id)
    .fetch_one(pool)
    .await?;
    if failures >= park_after {
        disable(pool, id).await?;
        return Ok(true);
    }
    Ok(false)
}

pub async fn disable(pool: &PgPool, id: Uuid) -> Result<(), Error> {
    sqlx::query("UPDATE endpoints SET disabled = TRUE WHERE id = $1").bind(id).execute(pool).await?;
    Ok(())
}
'''

FILES["src/scheduler.rs"] = '''use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tracing::{error, info};

use crate::config::Config;
use crate::delivery::{Deliverer, Outcome};
use crate::queue::Queue;
use crate::retry::{backoff_delay, RetryPolicy};

pub struct Workers {
    stop: watch::Sender<bool>,
    tasks: JoinSet<()>,
}

impl Workers {
    pub async fn shutdown(mut self) {
        let _ = self.stop.send(true);
        while self.tasks.join_next().await.is_some() {}
    }
}

pub fn spawn_workers<Q: Queue>(cfg: &Config, queue: Q) -> Workers {
    let (stop, stopped) = watch::channel(false);
    let deliverer = Arc::new(Deliverer::new(cfg));
    let mut tasks = JoinSet::new();
    for n in 0..cfg.worker_count {
        let (queue, deliverer, stopped) = (queue.clone(), deliverer.clone(), stopped.clone());
        let batch = cfg.batch_size;
        let policy = RetryPolicy::from_config(cfg);
        tasks.spawn(async move { worker_loop(n, queue, deliverer, policy, batch, stopped).await });
    }
    info!(workers = cfg.worker_count, "delivery workers started");
    Workers { stop, tasks }
}

async fn worker_loop<Q: Queue>(
    n: usize,
    queue: Q,
    deliverer: Arc<Deliverer>,
    policy: RetryPolicy,
    batch: i64,
    stopped: watch::Receiver<bool>,
) {
    let mut idle_rounds = 0u32;
    while !*stopped.borrow() {
        let due = match queue.claim_due(batch).await {
            Ok(due) => due,
            Err(e) => {
                error!(worker = n, error = %e, "claim failed");
                idle_rounds += 1;
                tokio::time::sleep(backoff_delay(idle_rounds, &policy)).await;
                continue;
            }
        };
        if due.is_empty() {
            // TODO: replace polling with LISTEN/NOTIFY on the deliveries table
            tokio::time::sleep(Duration::from_millis(250)).await;
            continue;
        }
        idle_rounds = 0;
        for delivery in due {
            // The endpoint lookup lives in storage; the in-memory queue tests stub it.
            let endpoint = match crate::storage::endpoints::get(todo_pool(), delivery.endpoint_id).await {
                Ok(e) => e,
                Err(e) => {
                    let _ = queue.fail(delivery.id, &e.to_string()).await;
                    continue;
                }
            };
            let outcome = deliverer.attempt(&delivery, &endpoint).await;
            let result = match outcome {
                Outcome::Delivered { .. } => queue.complete(delivery.id).await,
                Outcome::RetryIn(wait) => {
                    let at = Utc::now() + chrono::Duration::from_std(wait).unwrap_or_default();
                    queue.reschedule(delivery.id, at, delivery.attempt + 1).await
                }
                Outcome::GiveUp { reason } => queue.fail(delivery.id, &reason).await,
                Outcome::DisableEndpoint => queue.fail(delivery.id, "endpoint gone (410)").await,
            };
            if let Err(e) = result {
                error!(worker = n, delivery = %delivery.id, error = %e, "queue update failed");
            }
        }
    }
}

fn todo_pool() -> &'static sqlx::PgPool {
    // FIXME: workers should get the pool from spawn_workers instead of this global
    static POOL: std::sync::OnceLock<sqlx::PgPool> = std::sync::OnceLock::new();
    POOL.get().expect("pool initialised in main")
}
'''

FILES["src/metrics.rs"] = '''use std::net::SocketAddr;
use std::time::Duration;

use metrics::{counter, histogram};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};

use crate::config::Config;

pub fn install(config: &Config) -> anyhow::Result<()> {
    let addr: SocketAddr = config.metrics_addr.parse()?;
    PrometheusBuilder::new()
        .with_http_listener(addr)
        .set_buckets_for_metric(
            Matcher::Full("hookline_delivery_seconds".into()),
            &[0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0],
        )?
        .install()?;
    Ok(())
}

pub fn record_attempt(elapsed: Duration, status: Option<u16>) {
    histogram!("hookline_delivery_seconds").record(elapsed.as_secs_f64());
    let class = match status {
        Some(s) if s < 300 => "2xx",
        Some(s) if s < 500 => "4xx",
        Some(_) => "5xx",
        None => "error",
    };
    counter!("hookline_delivery_attempts_total", "class" => class).increment(1);
}
'''

FILES["tests/signing.rs"] = '''use hookline::signing::{sign, verify};

#[test]
fn round_trip() {
    let header = sign("whsec_test", 1_767_225_600, br#"{"id":1}"#);
    assert!(verify("whsec_test", &header, br#"{"id":1}"#, 1_767_225_630, 300));
}

#[test]
fn rejects_old_timestamps() {
    let header = sign("whsec_test", 1_767_225_600, b"{}");
    assert!(!verify("whsec_test", &header, b"{}", 1_767_226_000, 300));
}

#[test]
fn rejects_other_secret() {
    let header = sign("whsec_a", 1_767_225_600, b"{}");
    assert!(!verify("whsec_b", &header, b"{}", 1_767_225_600, 300));
}
'''

FILES["tests/retry.rs"] = '''use std::time::Duration;

use hookline::retry::{backoff_delay, RetryPolicy};

fn policy(max_attempts: u32) -> RetryPolicy {
    RetryPolicy { base: Duration::from_millis(200), max: Duration::from_secs(30), max_attempts }
}

#[test]
fn delays_grow_until_the_cap() {
    let p = policy(10);
    let delays: Vec<Duration> = (1..=10).map(|a| backoff_delay(a, &p)).collect();
    for pair in delays.windows(2) {
        assert!(pair[1] >= pair[0].min(p.max) || pair[1] == p.max);
    }
    assert_eq!(*delays.last().unwrap(), p.max);
}

#[test]
fn stops_after_max_attempts() {
    let p = policy(3);
    assert!(p.should_retry(2));
    assert!(!p.should_retry(3));
}
'''

FILES["tests/delivery.rs"] = '''use hookline::config::Config;
use hookline::delivery::{Deliverer, Outcome};
use hookline::queue::Delivery;
use hookline::storage::endpoints::Endpoint;
use uuid::Uuid;
use wiremock::matchers::{header_exists, method};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn config() -> Config {
    toml::from_str(include_str!("../config/default.toml")).unwrap()
}

fn endpoint(url: String) -> Endpoint {
    Endpoint {
        id: Uuid::new_v4(),
        tenant_id: Uuid::new_v4(),
        url,
        secret: "whsec_test".into(),
        event_types: vec![],
        disabled: false,
        consecutive_failures: 0,
    }
}

fn delivery(attempt: u32) -> Delivery {
    Delivery {
        id: Uuid::new_v4(),
        endpoint_id: Uuid::new_v4(),
        event_type: "invoice.paid".into(),
        payload: serde_json::json!({"invoice": "in_123", "amount": 4200}),
        attempt,
        next_attempt_at: chrono::Utc::now(),
    }
}

#[tokio::test]
async fn delivers_and_signs() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(header_exists("hookline-signature"))
        .respond_with(ResponseTemplate::new(204))
        .mount(&server)
        .await;
    let out = Deliverer::new(&config()).attempt(&delivery(1), &endpoint(server.uri())).await;
    assert_eq!(out, Outcome::Delivered { status: 204 });
}

#[tokio::test]
async fn gone_disables_the_endpoint() {
    let server = MockServer::start().await;
    Mock::given(method("POST")).respond_with(ResponseTemplate::new(410)).mount(&server).await;
    let out = Deliverer::new(&config()).attempt(&delivery(1), &endpoint(server.uri())).await;
    assert_eq!(out, Outcome::DisableEndpoint);
}

#[tokio::test]
async fn server_errors_are_retried() {
    let server = MockServer::start().await;
    Mock::given(method("POST")).respond_with(ResponseTemplate::new(503)).mount(&server).await;
    let out = Deliverer::new(&config()).attempt(&delivery(1), &endpoint(server.uri())).await;
    assert!(matches!(out, Outcome::RetryIn(_)));
    // TODO: assert the delay respects Retry-After once the mock sends one
}
'''

FILES["benches/throughput.rs"] = '''use criterion::{criterion_group, criterion_main, Criterion};
use hookline::signing::sign;

fn bench_sign(c: &mut Criterion) {
    let body = vec![b'x'; 4096];
    c.bench_function("sign 4 KiB", |b| b.iter(|| sign("whsec_bench", 1_767_225_600, &body)));
}

criterion_group!(benches, bench_sign);
criterion_main!(benches);
'''

FILES[".gitignore"] = '''/target
*.log
.env
'''
