//! The sandbox's module loader: a program cannot import anything. deno_core's default loader
//! would answer `import("fs")` with a module-resolution message about relative paths, which
//! sends a model looking for the right path; this one says what is true.

use deno_core::{
    ModuleLoadOptions, ModuleLoadReferrer, ModuleLoadResponse, ModuleLoader, ModuleSpecifier,
    ResolutionKind,
};
use deno_error::JsErrorBox;

/// Refuses every import, static or dynamic.
pub(crate) struct NoImports;

/// What a program sees for `import(specifier)`.
pub(crate) fn refusal(specifier: &str) -> String {
    format!(
        "imports are not available in the sandbox (`{specifier}`): a program has `tools`, \
         `console` and JavaScript's built-ins only"
    )
}

impl ModuleLoader for NoImports {
    fn resolve(
        &self,
        specifier: &str,
        _referrer: &str,
        _kind: ResolutionKind,
    ) -> Result<ModuleSpecifier, JsErrorBox> {
        Err(JsErrorBox::type_error(refusal(specifier)))
    }

    fn load(
        &self,
        specifier: &ModuleSpecifier,
        _referrer: Option<&ModuleLoadReferrer>,
        _options: ModuleLoadOptions,
    ) -> ModuleLoadResponse {
        ModuleLoadResponse::Sync(Err(JsErrorBox::type_error(refusal(specifier.as_str()))))
    }
}
