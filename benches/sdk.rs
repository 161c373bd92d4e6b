//! SDK generation cost for a large visible tool set.
//!
//! `sdk_generate_100` renders `tools.d.ts` for 100 tools built from the test corpus;
//! `sdk_serialize_schemas_100` serializes the same schemas to JSON as a floor measured in the
//! same run, since absolute times on shared machines are noisy.

use std::hint::black_box;

use codemode::sdk::{SdkTool, generate_sdk};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::Value;

const FIXTURES: &[(Option<&str>, &str)] = &[
    (None, include_str!("../tests/all/fixtures/sdk/tools.json")),
    (
        Some("github"),
        include_str!("../tests/all/fixtures/sdk/upstream-github.json"),
    ),
    (
        Some("git"),
        include_str!("../tests/all/fixtures/sdk/upstream-git.json"),
    ),
    (
        Some("memory"),
        include_str!("../tests/all/fixtures/sdk/upstream-memory.json"),
    ),
];

/// `count` tools cycling through the corpus; later rounds get a numeric suffix so every name
/// is distinct, as in a registry.
fn tools(count: usize) -> Vec<SdkTool> {
    let mut corpus = Vec::new();
    for (namespace, text) in FIXTURES {
        let json: Value = serde_json::from_str(text).expect("fixture is JSON");
        let list = json
            .pointer("/result/tools")
            .or_else(|| json.get("tools"))
            .unwrap_or(&json);
        for tool in list.as_array().expect("tools array") {
            corpus.push((namespace.map(str::to_owned), tool.clone()));
        }
    }
    (0..count)
        .map(|i| {
            let (namespace, tool) = &corpus[i % corpus.len()];
            let name = tool["name"].as_str().expect("name");
            let round = i / corpus.len();
            let sandbox_name: String = name
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                .collect();
            SdkTool {
                namespace: namespace.clone(),
                sandbox_name: format!("t{round}_{sandbox_name}"),
                original_name: name.to_owned(),
                description: tool["description"].as_str().unwrap_or_default().to_owned(),
                input_schema: tool["inputSchema"].clone(),
                output_schema: tool.get("outputSchema").cloned(),
            }
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let tools = tools(100);
    c.bench_function("sdk_generate_100", |b| {
        b.iter(|| generate_sdk(black_box(&tools)))
    });
    c.bench_function("sdk_serialize_schemas_100", |b| {
        b.iter(|| {
            black_box(&tools)
                .iter()
                .map(|t| {
                    t.input_schema.to_string().len()
                        + t.output_schema.as_ref().map_or(0, |s| s.to_string().len())
                })
                .sum::<usize>()
        })
    });
}

/// Learning a W4-sized result (10,000 records; the first 1,000 are folded): what the learn hook
/// adds to such a call, against serialising the same value (what the pipeline does anyway).
fn learned(c: &mut Criterion) {
    let records = serde_json::Value::Array(
        (0..10_000u64)
            .map(|id| serde_json::json!({"id": id, "name": format!("record-{id}"), "score": (id * 7919) % 10_007}))
            .collect(),
    );
    c.bench_function("learned/fold_10k_records", |b| {
        b.iter(|| codemode::learned::Shape::of(black_box(&records)))
    });
    c.bench_function("learned/serialize_10k_records", |b| {
        b.iter(|| black_box(&records).to_string().len())
    });
}

criterion_group!(benches, bench, learned);
criterion_main!(benches);
