use codemode::ToolRegistry;
use codemode::tool::{RegistryError, sandbox_name};

use crate::support::echo_tool;

#[test]
fn sandbox_names_follow_the_mapping_rule() {
    assert_eq!(sandbox_name("grep"), "grep");
    assert_eq!(sandbox_name("delete"), "delete");
    assert_eq!(sandbox_name("$x_1"), "$x_1");
    assert_eq!(sandbox_name("get-user"), "get_user");
    assert_eq!(sandbox_name("API-get-self"), "API_get_self");
    assert_eq!(sandbox_name("fs.read"), "fs_read");
    assert_eq!(sandbox_name("a -- b"), "a_b");
    assert_eq!(sandbox_name("3d-view"), "_3d_view");
}

#[test]
fn colliding_sandbox_names_fail_naming_both_tools() {
    let mut r = ToolRegistry::new();
    r.register_namespaced("gh", echo_tool("get-user")).unwrap();
    let err = r
        .register_namespaced("gh", echo_tool("get.user"))
        .unwrap_err();
    assert!(
        matches!(&err, RegistryError::NameCollision { first, second, .. } if first == "get-user" && second == "get.user")
    );
    let text = err.to_string();
    assert!(
        text.contains("get-user") && text.contains("get.user") && text.contains("get_user"),
        "{text}"
    );
    // The same sandbox name in another namespace is fine.
    r.register_namespaced("jira", echo_tool("get-user"))
        .unwrap();
}

#[test]
fn namespace_equal_to_a_top_level_tool_is_an_error_in_either_order() {
    let mut r = ToolRegistry::new();
    r.register(echo_tool("memory")).unwrap();
    let err = r
        .register_namespaced("memory", echo_tool("search"))
        .unwrap_err();
    assert!(err.to_string().contains("memory"), "{err}");

    let mut r = ToolRegistry::new();
    r.register_namespaced("memory", echo_tool("search"))
        .unwrap();
    let err = r.register(echo_tool("memory")).unwrap_err();
    assert!(
        matches!(err, RegistryError::NamespaceShadowsTool { .. }),
        "{err}"
    );
}

#[test]
fn namespaces_must_be_identifiers() {
    let mut r = ToolRegistry::new();
    assert!(matches!(
        r.register_namespaced("my-ns", echo_tool("a")),
        Err(RegistryError::BadNamespace { .. })
    ));
}

#[test]
fn listing_is_sorted_and_carries_what_the_sdk_needs() {
    let mut r = ToolRegistry::new();
    r.register(echo_tool("zz")).unwrap();
    r.register_namespaced("memory", echo_tool("search-nodes"))
        .unwrap();
    r.register(echo_tool("grep")).unwrap();
    let list = r.tools();
    let paths: Vec<&str> = list.iter().map(|t| t.path.as_str()).collect();
    assert_eq!(paths, ["grep", "memory.search_nodes", "zz"]);
    let m = &list[1];
    assert_eq!(m.name, "search-nodes");
    assert_eq!(m.sandbox_name, "search_nodes");
    assert_eq!(m.namespace.as_deref(), Some("memory"));
    assert_eq!(m.description, "echoes its text");
    assert_eq!(m.parameters["required"][0], "text");
    assert!(m.output_schema.is_some());
    assert!(r.get("memory.search_nodes").is_some());
}

#[test]
fn suggestions_find_close_names() {
    let mut r = ToolRegistry::new();
    for n in ["grep", "glob", "read_file", "write_file"] {
        r.register(echo_tool(n)).unwrap();
    }
    r.register_namespaced("memory", echo_tool("search_nodes"))
        .unwrap();
    assert_eq!(r.suggestions("grpe")[0], "grep");
    assert_eq!(r.suggestions("readFile")[0], "read_file");
    assert_eq!(r.suggestions("search_nodes"), ["memory.search_nodes"]);
    assert!(r.suggestions("completely_unrelated_name").is_empty());
}

#[test]
fn filtered_registry_keeps_only_visible_tools() {
    let mut r = ToolRegistry::new();
    r.register(echo_tool("grep")).unwrap();
    r.register(echo_tool("shell")).unwrap();
    let visible = r.filtered(|t| t.path != "shell");
    assert_eq!(visible.len(), 1);
    assert!(visible.get("shell").is_none());
}
