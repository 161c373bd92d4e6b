//! The registry: tools by sandbox path (`grep`, `ns.name`), the listing the SDK generator needs,
//! and close-match suggestions for `UNKNOWN_TOOL`.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde_json::Value;

use super::definition::ToolDefinition;
use super::names::is_identifier;
use rustc_hash::FxBuildHasher;

/// A registered tool and where it lives in the sandbox.
#[derive(Clone, Debug)]
pub struct RegisteredTool {
    /// The tool.
    pub tool: ToolDefinition,
    /// Its namespace, when it has one.
    pub namespace: Option<String>,
    /// `name` or `ns.name`.
    pub path: String,
    /// The same path, shared with every call's dispatch without allocating.
    pub(crate) shared_path: Arc<str>,
}

/// What the SDK generator and `codemode tools` need about a visible tool.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolInfo {
    /// The tool's name in its source.
    pub name: String,
    /// Its name in the sandbox (an identifier).
    pub sandbox_name: String,
    /// Its namespace, when it has one.
    pub namespace: Option<String>,
    /// `name` or `namespace.name`: how programs and calls name it.
    pub path: String,
    /// What it does.
    pub description: String,
    /// Its input JSON Schema.
    pub parameters: Value,
    /// Its output JSON Schema, when it declares one.
    pub output_schema: Option<Value>,
}

/// Registration conflicts (DESIGN.md section 2); messages name both parties.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    #[error("tools `{first}` and `{second}` both map to sandbox name `{path}`")]
    /// Two tools map to one sandbox path.
    NameCollision {
        /// The path both map to.
        path: String,
        /// The source name of the tool registered first.
        first: String,
        /// The source name of the second.
        second: String,
    },
    #[error("namespace `{namespace}` is not an identifier")]
    /// The namespace is not an identifier.
    BadNamespace {
        /// The namespace given.
        namespace: String,
    },
    #[error("namespace `{namespace}` has the same name as the top-level tool `{tool}`")]
    /// A namespace has the name of a top-level tool (`tools.x` cannot be both).
    NamespaceShadowsTool {
        /// The namespace.
        namespace: String,
        /// The tool.
        tool: String,
    },
}

/// Tools by sandbox path. Build it, then hand it to a pipeline (it is read-only there).
#[derive(Clone, Default)]
pub struct ToolRegistry {
    by_path: HashMap<String, Arc<RegisteredTool>, FxBuildHasher>,
    namespaces: BTreeMap<String, ()>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut paths: Vec<&String> = self.by_path.keys().collect();
        paths.sort();
        f.debug_struct("ToolRegistry")
            .field("tools", &paths)
            .finish()
    }
}

impl ToolRegistry {
    /// Every registered tool, in no particular order.
    pub(crate) fn registered(&self) -> impl Iterator<Item = &RegisteredTool> {
        self.by_path.values().map(AsRef::as_ref)
    }

    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a top-level tool (`tools.<name>`).
    ///
    /// # Errors
    /// A sandbox-name collision, or a namespace of the same name.
    pub fn register(&mut self, tool: ToolDefinition) -> Result<(), RegistryError> {
        let path = tool.sandbox_name().to_owned();
        if self.namespaces.contains_key(&path) {
            return Err(RegistryError::NamespaceShadowsTool {
                namespace: path,
                tool: tool.name().to_owned(),
            });
        }
        self.insert(path, None, tool)
    }

    /// Registers a tool under a namespace (`tools.<ns>.<name>`).
    ///
    /// # Errors
    /// A namespace that is not an identifier or equals a top-level tool, or a collision inside it.
    pub fn register_namespaced(
        &mut self,
        namespace: &str,
        tool: ToolDefinition,
    ) -> Result<(), RegistryError> {
        if !is_identifier(namespace) {
            return Err(RegistryError::BadNamespace {
                namespace: namespace.to_owned(),
            });
        }
        if let Some(top) = self.by_path.get(namespace) {
            return Err(RegistryError::NamespaceShadowsTool {
                namespace: namespace.to_owned(),
                tool: top.tool.name().to_owned(),
            });
        }
        self.namespaces.insert(namespace.to_owned(), ());
        let path = format!("{namespace}.{}", tool.sandbox_name());
        self.insert(path, Some(namespace.to_owned()), tool)
    }

    fn insert(
        &mut self,
        path: String,
        namespace: Option<String>,
        tool: ToolDefinition,
    ) -> Result<(), RegistryError> {
        if let Some(existing) = self.by_path.get(&path) {
            return Err(RegistryError::NameCollision {
                path,
                first: existing.tool.name().to_owned(),
                second: tool.name().to_owned(),
            });
        }
        let shared_path = path.as_str().into();
        let entry = RegisteredTool {
            tool,
            namespace,
            path: path.clone(),
            shared_path,
        };
        self.by_path.insert(path, Arc::new(entry));
        Ok(())
    }

    /// The tool at a sandbox path.
    pub fn get(&self, path: &str) -> Option<&Arc<RegisteredTool>> {
        self.by_path.get(path)
    }

    /// How many tools it holds.
    pub fn len(&self) -> usize {
        self.by_path.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.by_path.is_empty()
    }

    /// Every tool, sorted by path (stable order for SDK generation).
    pub fn tools(&self) -> Vec<ToolInfo> {
        let mut list: Vec<ToolInfo> = self
            .by_path
            .values()
            .map(|r| ToolInfo {
                name: r.tool.name().to_owned(),
                sandbox_name: r.tool.sandbox_name().to_owned(),
                namespace: r.namespace.clone(),
                path: r.path.clone(),
                description: r.tool.description().to_owned(),
                parameters: r.tool.parameters().clone(),
                output_schema: r.tool.output_schema().cloned(),
            })
            .collect();
        list.sort_by(|a, b| a.path.cmp(&b.path));
        list
    }

    /// A registry holding only the tools `keep` accepts (the visible set under a policy).
    pub fn filtered(&self, mut keep: impl FnMut(&RegisteredTool) -> bool) -> ToolRegistry {
        let by_path: HashMap<_, _, FxBuildHasher> = self
            .by_path
            .iter()
            .filter(|(_, r)| keep(r))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let namespaces = by_path
            .values()
            .filter_map(|r| r.namespace.clone())
            .map(|n| (n, ()))
            .collect();
        ToolRegistry {
            by_path,
            namespaces,
        }
    }

    /// Up to three visible paths close to `wanted` (edit distance, case-insensitive), best first.
    pub fn suggestions(&self, wanted: &str) -> Vec<String> {
        let wanted_lc = wanted.to_ascii_lowercase();
        let bare = wanted_lc.rsplit('.').next().unwrap_or(&wanted_lc);
        let mut scored: Vec<(usize, &str)> = self
            .by_path
            .keys()
            .filter_map(|path| {
                let lc = path.to_ascii_lowercase();
                let name = lc.rsplit('.').next().unwrap_or(&lc);
                let d = levenshtein(&wanted_lc, &lc).min(levenshtein(bare, name));
                let limit = (wanted.len().max(3) / 3).max(2);
                let related = lc.contains(bare) || (bare.len() >= 3 && name.contains(bare));
                (d <= limit || related).then_some((d, path.as_str()))
            })
            .collect();
        scored.sort();
        scored
            .into_iter()
            .take(3)
            .map(|(_, p)| p.to_owned())
            .collect()
    }
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}
