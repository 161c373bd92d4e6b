//! `ToolDefinition::builder(name)...build()`.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::definition::{ExecContext, ExecuteFn, ToolDefinition, ToolInner};
use super::names::{is_identifier, sandbox_name};
use super::path_args::PathArgs;
use super::present::{Card, ResultView};
use crate::call::{ToolFailure, Typed};
use crate::schema::{CompiledSchema, SchemaError, ToolSpec, sample_value};

/// Why a tool definition could not be built.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ToolBuildError {
    #[error("tool `{tool}`: parameters: {source}")]
    /// The input schema does not compile.
    Parameters {
        /// The tool.
        tool: String,
        /// Why.
        source: SchemaError,
    },
    #[error("tool `{tool}`: output schema: {source}")]
    /// The output schema does not compile.
    Output {
        /// The tool.
        tool: String,
        /// Why.
        source: SchemaError,
    },
    #[error("tool `{tool}` has no execute body")]
    /// No `execute` body was given.
    NoBody {
        /// The tool.
        tool: String,
    },
    #[error("tool `{tool}`: sandbox name `{sandbox_name}` is not an identifier")]
    /// The sandbox name given is not an identifier.
    BadSandboxName {
        /// The tool.
        tool: String,
        /// The name given.
        sandbox_name: String,
    },
}

/// Builder of a [`ToolDefinition`].
pub struct ToolBuilder {
    name: String,
    sandbox_name: Option<String>,
    description: String,
    parameters: Value,
    output: Option<Value>,
    render: Option<super::definition::RenderFn>,
    execute: Option<ExecuteFn>,
    timeout: Option<Duration>,
    classifier: Option<super::definition::ClassifierFn>,
    present_call: Option<super::definition::PresentCallFn>,
    present_result: Option<super::definition::PresentResultFn>,
    finalize: Option<super::definition::FinalizeFn>,
    value_failure: Option<super::definition::ValueFailureFn>,
    path_args: Option<PathArgs>,
}

impl std::fmt::Debug for ToolBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolBuilder")
            .field("name", &self.name)
            .field("description", &self.description)
            .field("parameters", &self.parameters)
            .finish_non_exhaustive()
    }
}

impl ToolDefinition {
    /// A builder for a tool named `name` (its sandbox name is derived from it).
    pub fn builder(name: impl Into<String>) -> ToolBuilder {
        ToolBuilder {
            name: name.into(),
            sandbox_name: None,
            description: String::new(),
            parameters: serde_json::json!({"type": "object", "properties": {}}),
            output: None,
            render: None,
            execute: None,
            timeout: None,
            classifier: None,
            present_call: None,
            present_result: None,
            finalize: None,
            value_failure: None,
            path_args: None,
        }
    }

    /// A tool from an imported declaration; `execute` is the body (e.g. forwarding to MCP).
    /// A read-only MCP tool is parallel-safe.
    pub fn from_spec<F, Fut>(spec: &ToolSpec, execute: F) -> Result<ToolDefinition, ToolBuildError>
    where
        F: Fn(Value, ExecContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, ToolFailure>> + Send + 'static,
    {
        let mut b = ToolDefinition::builder(&spec.name)
            .description(&spec.description)
            .parameters(spec.parameters.clone())
            .execute(execute);
        if let Some(out) = &spec.output_schema {
            b = b.output_schema(out.clone());
        }
        if spec.read_only {
            b = b.parallel_safe();
        }
        b.build()
    }

    /// A mock of an imported tool for dry runs (`codemode run --tools FILE`): the pipeline still
    /// validates arguments; the body answers with a sample of the output schema (or, without one,
    /// echoes `{tool, args}`).
    pub fn mock_from_spec(spec: &ToolSpec) -> Result<ToolDefinition, ToolBuildError> {
        let answer = spec.output_schema.as_ref().map(sample_value).map(Arc::new);
        let name: Arc<str> = spec.name.as_str().into();
        ToolDefinition::from_spec(spec, move |args, _exec| {
            let value = match &answer {
                Some(v) => Value::clone(v),
                None => serde_json::json!({ "mock": true, "tool": &*name, "args": args }),
            };
            futures::future::ready(Ok(value))
        })
    }
}

impl ToolBuilder {
    /// Overrides the derived sandbox name (must be an identifier).
    pub fn sandbox_name(mut self, name: impl Into<String>) -> Self {
        self.sandbox_name = Some(name.into());
        self
    }
    /// What the tool does, for the model (JSDoc in the SDK; `catalog.search` shows its first line).
    pub fn description(mut self, text: impl Into<String>) -> Self {
        self.description = text.into();
        self
    }
    /// JSON Schema of the arguments: a DSL [`crate::schema::Schema`] or raw JSON.
    pub fn parameters(mut self, schema: impl Into<Value>) -> Self {
        self.parameters = schema.into();
        self
    }
    /// JSON Schema of the canonical value the body returns.
    pub fn output_schema(mut self, schema: impl Into<Value>) -> Self {
        self.output = Some(schema.into());
        self
    }
    /// Canonical value -> content.
    pub fn render(mut self, f: impl Fn(&Value) -> String + Send + Sync + 'static) -> Self {
        self.render = Some(Arc::new(move |value, _typed| f(value)));
        self
    }
    /// A render over the typed value of an [`execute_typed`](Self::execute_typed) body. When
    /// the value is only JSON (a post hook replaced it), it is read as a `T`; JSON that is not a
    /// `T` gets the default render.
    pub fn render_typed<T, F>(mut self, f: F) -> Self
    where
        T: DeserializeOwned + Send + Sync + 'static,
        F: Fn(&T) -> String + Send + Sync + 'static,
    {
        self.render = Some(Arc::new(move |value, typed| {
            match typed.and_then(Typed::downcast::<T>) {
                Some(typed) => f(typed),
                None => match T::deserialize(value) {
                    Ok(parsed) => f(&parsed),
                    Err(_) => super::present::default_render(value),
                },
            }
        }));
        self
    }
    /// Says when a successful typed value of an [`execute_typed`](Self::execute_typed) body
    /// reports a failure of its own (`run_code`'s outcome): the result event then says `error`.
    pub(crate) fn value_failure_typed<T, F>(mut self, f: F) -> Self
    where
        T: DeserializeOwned + Send + Sync + 'static,
        F: Fn(&T) -> Option<super::definition::ValueFailure> + Send + Sync + 'static,
    {
        self.value_failure = Some(Arc::new(move |value, typed| {
            match typed.and_then(Typed::downcast::<T>) {
                Some(typed) => f(typed),
                None => T::deserialize(value).ok().and_then(|parsed| f(&parsed)),
            }
        }));
        self
    }
    /// The async body.
    pub fn execute<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(Value, ExecContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, ToolFailure>> + Send + 'static,
    {
        self.execute = Some(Arc::new(move |args, exec| f(args, exec).boxed()));
        self
    }
    /// An async body that returns a typed value. Its JSON is what programs, events and logs
    /// see; the typed value travels beside it to [`render_typed`](Self::render_typed), the
    /// presenters ([`ResultView::typed`]) and the caller (`CallOutcome::typed`), never parsed
    /// back from the JSON.
    pub fn execute_typed<T, F, Fut>(mut self, f: F) -> Self
    where
        T: Serialize + Send + Sync + 'static,
        F: Fn(Value, ExecContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<T, ToolFailure>> + Send + 'static,
    {
        self.execute = Some(Arc::new(move |args, exec| {
            let slot = exec.typed.clone();
            let body = f(args, exec);
            async move {
                let typed = body.await?;
                let value = serde_json::to_value(&typed).map_err(|e| {
                    ToolFailure::new(format!("the value could not be serialized: {e}"))
                })?;
                slot.set(Typed::new(typed));
                Ok(value)
            }
            .boxed()
        }));
        self
    }
    /// Declared timeout; metadata that the timeout wrapper enforces per attempt.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }
    /// [`ToolBuilder::timeout`] in milliseconds.
    pub fn timeout_ms(self, ms: u64) -> Self {
        self.timeout(Duration::from_millis(ms))
    }
    /// Classifier of DESIGN.md section 4: the call is parallel only when it returns `true`.
    pub fn is_concurrency_safe(
        mut self,
        f: impl Fn(&Value) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.classifier = Some(Arc::new(f));
        self
    }
    /// Every call of this tool is parallel-safe (reads, searches).
    pub fn parallel_safe(self) -> Self {
        self.is_concurrency_safe(|_| true)
    }
    /// A presenter card for the call, from its arguments.
    pub fn present_call(mut self, f: impl Fn(&Value) -> Card + Send + Sync + 'static) -> Self {
        self.present_call = Some(Arc::new(f));
        self
    }
    /// A presenter card for the result, from the arguments and the result.
    pub fn present_result(
        mut self,
        f: impl Fn(&Value, &ResultView<'_>) -> Card + Send + Sync + 'static,
    ) -> Self {
        self.present_result = Some(Arc::new(f));
        self
    }
    /// Tool-owned last word on content (e.g. truncation), after all post hooks: `(content, value)`.
    pub fn finalize_content(
        mut self,
        f: impl Fn(String, &Value) -> String + Send + Sync + 'static,
    ) -> Self {
        self.finalize = Some(Arc::new(f));
        self
    }

    /// Declares which arguments are paths under a root, and how they normalise. Crate-only: a
    /// policy trusts it to say which file a call reaches, so only bodies that resolve their
    /// paths exactly this way (the built-ins) may carry it.
    pub(crate) fn path_args(mut self, args: PathArgs) -> Self {
        self.path_args = Some(args);
        self
    }

    /// Compiles the schemas once.
    ///
    /// # Errors
    /// A malformed schema, a missing body or a sandbox name that is not an identifier.
    pub fn build(self) -> Result<ToolDefinition, ToolBuildError> {
        let tool = self.name.clone();
        let sandbox_name = match self.sandbox_name {
            Some(s) if is_identifier(&s) => s,
            Some(s) => {
                return Err(ToolBuildError::BadSandboxName {
                    tool,
                    sandbox_name: s,
                });
            }
            None => sandbox_name(&self.name),
        };
        let parameters = CompiledSchema::compile(self.parameters).map_err(|source| {
            ToolBuildError::Parameters {
                tool: tool.clone(),
                source,
            }
        })?;
        let output =
            match self.output {
                Some(schema) => Some(CompiledSchema::compile(schema).map_err(|source| {
                    ToolBuildError::Output {
                        tool: tool.clone(),
                        source,
                    }
                })?),
                None => None,
            };
        let execute = self.execute.ok_or(ToolBuildError::NoBody { tool })?;
        Ok(ToolDefinition {
            inner: Arc::new(ToolInner {
                name: self.name,
                sandbox_name,
                description: self.description,
                parameters,
                output,
                render: self.render,
                execute,
                timeout: self.timeout,
                classifier: self.classifier,
                present_call: self.present_call,
                present_result: self.present_result,
                finalize: self.finalize,
                value_failure: self.value_failure,
                path_args: self.path_args,
            }),
        })
    }
}
