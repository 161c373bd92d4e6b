// The main demo: explore this repository through the built-in tools (`codemode run
// examples/repo_tour.ts --root .`). Searches and reads run inside the sandbox; only the summary
// below reaches the output, and the stats show how many bytes stayed in the sandbox.

const files = await tools.glob({ pattern: "src/**/*.rs" });
const modules = new Map<string, number>();
for (const path of files.paths) {
  const top = path.split("/")[1];
  modules.set(top, (modules.get(top) ?? 0) + 1);
}

// Reads and searches are parallel-safe: these overlap.
const [ops, traits, lib] = await Promise.all([
  tools.grep({ pattern: "fn op_codemode_\\w+", path: "src", max_results: 50 }),
  tools.grep({ pattern: "pub trait \\w+", path: "src/pipeline", max_results: 50 }),
  tools.read_file({ path: "src/lib.rs" }),
]);

const opNames = [...new Set(ops.matches.map((m) => m.text.match(/fn (op_codemode_\w+)/)?.[1]))].sort();
console.log(`${files.paths.length} Rust files in src/, by module:`);
console.table([...modules].map(([module, count]) => ({ module, files: count })));
console.log(`ops the sandbox glue may call: ${opNames.join(", ")}`);
const roles = traits.matches.map((m) => m.text.match(/pub trait (\w+)/)?.[1]).sort();
console.log(`pipeline roles (traits): ${roles.join(", ")}`);

// A write asks for approval first; without an interactive approver it is refused.
try {
  await tools.write_file({ path: "tour.txt", content: "hello" });
} catch (e) {
  console.warn(`write_file refused: ${e.code} (${e.details.by})`);
}

return {
  rust_files: files.paths.length,
  lib_rs_lines: lib.total_lines,
  pipeline_traits: roles.length,
};
