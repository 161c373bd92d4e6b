use serde_json::{Value, json};

use super::*;

fn folded(values: &[Value]) -> Shape {
    let mut shape = Shape::default();
    for value in values {
        shape.fold(value);
    }
    shape
}

fn object(shape: &Shape) -> &ObjectShape {
    shape.object.as_ref().expect("an object shape")
}

fn required(shape: &Shape) -> Vec<&str> {
    let object = object(shape);
    object
        .fields
        .iter()
        .filter(|(_, f)| object.is_required(f))
        .map(|(name, _)| name.as_str())
        .collect()
}

#[test]
fn fields_in_every_result_are_required_and_the_others_optional() {
    let shape = folded(&[
        json!({"id": 1, "name": "a", "note": "x"}),
        json!({"id": 2, "name": "b"}),
    ]);
    assert_eq!(required(&shape), ["id", "name"]);
    assert_eq!(object(&shape).fields["note"].seen, 1);
    assert_eq!(object(&shape).count, 2);
}

#[test]
fn array_elements_merge_into_one_shape() {
    let shape = Shape::of(&json!([{"a": 1}, {"a": 2, "b": true}, {"a": 3}]));
    let items = shape.array.as_deref().expect("an array");
    assert_eq!(required(items), ["a"]);
    assert!(object(items).fields["b"].shape.boolean);
}

#[test]
fn different_kinds_become_a_union_and_null_is_one_of_them() {
    let shape = folded(&[json!("text"), json!(3), json!(null), json!({"k": 1})]);
    assert!(shape.string && shape.number && shape.null && shape.object.is_some());
    assert!(!shape.boolean && shape.array.is_none());
}

#[test]
fn values_are_never_kept_only_kinds_and_field_names() {
    let shape = Shape::of(&json!({"secret": "hunter2", "pin": 4242, "ok": true}));
    let text = serde_json::to_string(&shape).unwrap();
    assert!(
        !text.contains("hunter2") && !text.contains("4242"),
        "{text}"
    );
    assert!(text.contains("secret") && text.contains("pin"));
}

#[test]
fn the_shape_does_not_depend_on_the_order_of_results() {
    let results = [
        json!({"a": 1, "b": [1, "x"]}),
        json!({"a": null}),
        json!({"c": {"d": false}}),
    ];
    let forward = folded(&results);
    let mut reversed = results.to_vec();
    reversed.reverse();
    assert_eq!(forward, folded(&reversed));
}

#[test]
fn merging_two_shapes_is_folding_both_sets_of_results() {
    let first = [json!({"a": 1, "b": "x"}), json!({"a": 2})];
    let second = [json!({"a": 3, "c": [null]})];
    let mut merged = folded(&first);
    merged.merge(&folded(&second));
    let all: Vec<Value> = first.iter().chain(&second).cloned().collect();
    assert_eq!(merged, folded(&all));
    assert_eq!(required(&merged), ["a"]);
}

#[test]
fn positions_below_the_depth_cap_become_unknown() {
    let mut value = json!("leaf");
    for _ in 0..(MAX_DEPTH + 3) {
        value = json!({ "next": value });
    }
    let mut shape = &Shape::of(&value);
    // The result is depth 0; the object at depth MAX_DEPTH is kept, what it holds is not.
    for _ in 0..=MAX_DEPTH {
        shape = &object(shape).fields["next"].shape;
    }
    assert!(shape.unknown, "{shape:?}");
    assert!(shape.object.is_none());
}

#[test]
fn an_object_with_too_many_field_names_becomes_a_map() {
    let wide: serde_json::Map<String, Value> = (0..=MAX_FIELDS)
        .map(|i| (format!("user-{i}"), json!({"score": i})))
        .collect();
    let shape = Shape::of(&Value::Object(wide));
    let object = object(&shape);
    assert!(object.fields.is_empty(), "names are dropped");
    let values = object.map.as_deref().expect("a map");
    assert!(object_has(values, "score"));
    // Later objects at that position fold into the map too.
    let mut again = shape.clone();
    again.fold(&json!({"other": {"score": 1, "extra": "x"}}));
    assert!(object_has(
        again.object.as_ref().unwrap().map.as_ref().unwrap(),
        "extra"
    ));
}

fn object_has(shape: &Shape, field: &str) -> bool {
    shape
        .object
        .as_ref()
        .is_some_and(|o| o.fields.contains_key(field))
}

#[test]
fn only_the_first_elements_of_a_long_array_are_folded() {
    let mut items: Vec<Value> = (0..MAX_ARRAY_SAMPLE).map(|i| json!({"i": i})).collect();
    items.push(json!({"i": 0, "late": true}));
    let shape = Shape::of(&Value::Array(items));
    assert!(!object_has(shape.array.as_deref().unwrap(), "late"));
}

#[test]
fn a_shape_over_the_kept_budget_loses_depth_until_it_fits() {
    // Four levels of 60 names each: 60^3 leaf positions, far over the kept budget.
    let level = |inner: Value| -> Value {
        Value::Object((0..60).map(|i| (format!("f{i}"), inner.clone())).collect())
    };
    let deep = level(level(level(json!(1))));
    let shape = Shape::of(&deep);
    assert!(shape.nodes() <= MAX_NODES, "{}", shape.nodes());
    assert!(shape.nodes() > 60, "not everything went: {}", shape.nodes());
}

#[test]
fn empty_arrays_have_elements_of_no_kind() {
    let shape = Shape::of(&json!({"items": []}));
    assert!(
        object(&shape).fields["items"]
            .shape
            .array
            .as_ref()
            .unwrap()
            .is_empty()
    );
}

#[test]
fn the_cache_form_round_trips() {
    let shape = folded(&[json!({"a": [1, {"b": null}], "c": "x"}), json!([true])]);
    let text = serde_json::to_string(&shape).unwrap();
    assert_eq!(serde_json::from_str::<Shape>(&text).unwrap(), shape);
}

#[test]
fn the_kept_shape_does_not_depend_on_order_even_near_the_render_budget() {
    // 20 fields of 60 numbers each: over the rendered budget, under the kept one.
    let wide: serde_json::Map<String, Value> = (0..20)
        .map(|i| {
            let inner: serde_json::Map<String, Value> =
                (0..60).map(|j| (format!("f{j}"), json!(j))).collect();
            (format!("g{i}"), Value::Object(inner))
        })
        .collect();
    let wide = Value::Object(wide);
    let small = json!({"g": {"x": 1}});
    assert_eq!(
        folded(&[wide.clone(), small.clone()]),
        folded(&[small, wide])
    );
}

#[test]
fn a_result_with_very_many_keys_becomes_a_map_as_it_is_read() {
    let huge: serde_json::Map<String, Value> =
        (0..100_000).map(|i| (format!("k{i}"), json!(i))).collect();
    let shape = Shape::of(&Value::Object(huge));
    let object = object(&shape);
    assert!(object.fields.is_empty());
    assert!(object.map.as_ref().unwrap().number);
}

#[test]
fn keys_that_look_like_data_make_a_map() {
    for key in [
        "12345",
        "a b",
        "src/lib.rs",
        "ada@example.org",
        "123e4567-e89b-12d3-a456-426614174000",
    ] {
        let shape = Shape::of(&json!({ key: 1 }));
        assert!(object(&shape).map.is_some(), "{key}");
    }
    let long = "k".repeat(MAX_NAME_BYTES + 1);
    assert!(object(&Shape::of(&json!({ long: 1 }))).map.is_some());
    for key in [
        "@type",
        "$ref",
        "Content-Type",
        "__proto__",
        "",
        "snake_case",
        "x1",
    ] {
        let shape = Shape::of(&json!({ key: 1 }));
        assert!(object(&shape).map.is_none(), "{key}");
    }
}

#[test]
fn a_shape_over_the_render_budget_is_shown_without_its_deepest_levels() {
    let inner: serde_json::Map<String, Value> =
        (0..60).map(|i| (format!("f{i}"), json!(1))).collect();
    let outer: serde_json::Map<String, Value> = (0..60)
        .map(|i| (format!("g{i}"), Value::Object(inner.clone())))
        .collect();
    let shape = Shape::of(&Value::Object(outer));
    assert!(
        shape.nodes() > RENDERED_NODES,
        "kept whole: {}",
        shape.nodes()
    );
    let shown = shape.within(RENDERED_NODES);
    assert!(shown.nodes() <= RENDERED_NODES);
    assert!(object(&shown).fields["g0"].shape.unknown);
}
