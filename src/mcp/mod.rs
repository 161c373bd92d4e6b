//! Code Mode over MCP (issue 5): `codemode mcp` serves `run_code` on stdio, with the built-ins and
//! upstream MCP servers (`--upstream NS=CMD`) as tool sources behind the full pipeline.
//!
//! - `upstream`: an upstream server as a tool source (child process, minimal environment).
//! - `content`: an upstream result as a canonical value.
//! - `catalog`: the tools served, rebuilt when an upstream's list changes.
//! - `server`: the `ServerHandler` (progress, cancellation, elicitation approvals), and
//!   `in_flight`: calls in progress and the multi round-trip suspension of MCP 2026-07-28.

mod catalog;
mod content;
mod elicitation;
mod in_flight;
mod live;
mod server;
mod upstream;

use std::time::Duration;

use rmcp::ServiceExt;
use tokio::sync::mpsc;

pub use catalog::{CatalogError, CatalogParts, UpstreamSource, VisibleFilter};
pub use server::CodemodeServer;
pub use upstream::{DEFAULT_STARTUP_TIMEOUT, FlagError, Upstream, UpstreamError, UpstreamSpec};

/// The upstreams that started, the ones that did not (with the reason), and the stream of
/// "tools changed" notices from the ones that did.
#[derive(Debug)]
pub struct StartedUpstreams {
    /// The upstreams that connected and listed their tools, in the order of the specs.
    pub sources: Vec<UpstreamSource>,
    /// One error per upstream that failed to start or to list its tools.
    pub failures: Vec<UpstreamError>,
    /// Receives the namespace of an upstream each time it reports that its tool list changed.
    pub list_changed: mpsc::UnboundedReceiver<String>,
}

/// Start every upstream concurrently and list its tools. One that fails does not stop the others.
pub async fn start_upstreams(specs: &[UpstreamSpec], timeout: Duration) -> StartedUpstreams {
    let (tx, list_changed) = mpsc::unbounded_channel();
    let starts = specs.iter().map(|spec| {
        let tx = tx.clone();
        async move {
            let notify: upstream::ListChanged = std::sync::Arc::new(move |namespace: &str| {
                let _ = tx.send(namespace.to_string());
            });
            let upstream = Upstream::connect(spec, timeout, Some(notify)).await?;
            let specs = upstream.list_tools().await?;
            Ok::<_, UpstreamError>(UpstreamSource { upstream, specs })
        }
    });
    let mut sources = Vec::new();
    let mut failures = Vec::new();
    for started in futures::future::join_all(starts).await {
        match started {
            Ok(source) => sources.push(source),
            Err(e) => failures.push(e),
        }
    }
    StartedUpstreams {
        sources,
        failures,
        list_changed,
    }
}

/// Why [`serve_stdio`] stopped with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The MCP handshake with the client failed.
    #[error("the MCP session did not start: {0}")]
    Start(#[source] Box<rmcp::service::ServerInitializeError>),
    /// The session's task failed.
    #[error("the MCP session ended with an error: {0}")]
    Ended(#[source] tokio::task::JoinError),
}

/// Serve `server` on stdin/stdout until the client disconnects, refreshing the catalog whenever an
/// upstream reports a changed tool list.
pub async fn serve_stdio(
    server: CodemodeServer,
    mut list_changed: mpsc::UnboundedReceiver<String>,
) -> Result<(), ServeError> {
    let refresher = server.clone();
    let refreshing = tokio::spawn(async move {
        while let Some(first) = list_changed.recv().await {
            // A burst of notices needs one refresh per upstream.
            let mut namespaces = std::collections::BTreeSet::from([first]);
            while let Ok(more) = list_changed.try_recv() {
                namespaces.insert(more);
            }
            for namespace in namespaces {
                refresher.refresh(&namespace).await;
            }
        }
    });
    let refreshing = refreshing.abort_handle();
    let served = match server.clone().serve(rmcp::transport::stdio()).await {
        Ok(service) => service
            .waiting()
            .await
            .map(|_| ())
            .map_err(ServeError::Ended),
        Err(e) => Err(ServeError::Start(Box::new(e))),
    };
    refreshing.abort();
    server.shutdown().await;
    served
}
