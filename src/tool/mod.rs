//! Tool definitions, sandbox names, rendering, presenter cards and the registry.

mod builder;
mod definition;
mod names;
mod path_args;
mod present;
mod registry;

pub use builder::{ToolBuildError, ToolBuilder};
pub use definition::{ExecContext, ToolDefinition};
pub(crate) use definition::{ProgressReporter, ValueFailure};
pub use names::{is_identifier, sandbox_name};
pub(crate) use path_args::{FileFilter, NormalisedPath, PathArgs, PathScope};
pub use present::{Card, ResultView, SearchHit, default_render};
pub use registry::{RegisteredTool, RegistryError, ToolInfo, ToolRegistry};
