//! The JSON Schema of every protocol message, generated from the types in
//! [`proto`](super::proto): one document whose `$defs` hold every type, whose
//! `x-methods` map each method to its params and result, and which validates any one
//! line either side sends (a request, a notification or a response envelope).
//! `conformance/schema/remote/protocol-v1.schema.json` is this document; a test fails
//! when it is stale.

use serde_json::{Map, Value, json};

use super::proto::{MAX_LINE, NOTIFICATIONS, PROTOCOL_VERSION, message_schemas};

/// The protocol's schema document, pretty-printed with a trailing newline.
pub fn render() -> String {
    let mut out = serde_json::to_string_pretty(&document()).expect("a schema document serialises");
    out.push('\n');
    out
}

/// The protocol's schema document.
pub fn document() -> Value {
    let settings = schemars::generate::SchemaSettings::draft2020_12();
    let mut g = settings.into_generator();
    let messages = message_schemas(&mut g);
    let mut methods = Map::new();
    let mut requests = Vec::new();
    let mut notifications = Vec::new();
    for (method, params, result) in messages {
        let params = params.to_value();
        match result {
            Some(result) => {
                methods.insert(
                    method.to_owned(),
                    json!({ "params": params, "result": result.to_value() }),
                );
                requests.push(json!({
                    "type": "object",
                    "properties": {
                        "jsonrpc": { "const": "2.0" },
                        "id": { "type": "integer", "minimum": 0 },
                        "method": { "const": method },
                        "params": params,
                    },
                    "required": ["jsonrpc", "id", "method", "params"],
                }));
            }
            None => {
                methods.insert(method.to_owned(), json!({ "params": params }));
                notifications.push(json!({
                    "type": "object",
                    "properties": {
                        "jsonrpc": { "const": "2.0" },
                        "method": { "const": method },
                        "params": params,
                    },
                    "required": ["jsonrpc", "method", "params"],
                    "not": { "required": ["id"] },
                }));
            }
        }
    }
    debug_assert_eq!(notifications.len(), NOTIFICATIONS.len());
    let defs: Map<String, Value> = g.take_definitions(true).into_iter().collect();
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": format!("https://kvm2-conformance.invalid/schema/remote/protocol-v{PROTOCOL_VERSION}.schema.json"),
        "title": format!("The provider process protocol, version {PROTOCOL_VERSION}"),
        "description": format!(
            "One JSON-RPC 2.0 message per line, at most {MAX_LINE} bytes. Validates any one line: a request (`x-methods` names each method's params and result), a notification, or a response. See docs/remote-protocol.md."
        ),
        "x-protocol-version": PROTOCOL_VERSION,
        "x-methods": methods,
        "oneOf": [
            { "title": "request", "oneOf": requests },
            { "title": "notification", "oneOf": notifications },
            { "$ref": "#/$defs/Response" },
        ],
        "$defs": with_envelopes(defs),
    })
}

fn with_envelopes(mut defs: Map<String, Value>) -> Map<String, Value> {
    defs.insert(
        "Response".into(),
        json!({
            "description": "The answer to one request: `result` (whose schema is the method's in `x-methods`) or `error`.",
            "type": "object",
            "properties": {
                "jsonrpc": { "const": "2.0" },
                "id": { "type": "integer", "minimum": 0 },
                "result": true,
                "error": { "$ref": "#/$defs/ResponseError" },
            },
            "required": ["jsonrpc", "id"],
            "oneOf": [
                { "required": ["result"], "not": { "required": ["error"] } },
                { "required": ["error"], "not": { "required": ["result"] } },
            ],
        }),
    );
    defs.insert(
        "ResponseError".into(),
        json!({
            "description": "A JSON-RPC error: -32700 parse error, -32600 invalid request, -32601 unknown method, -32602 invalid params, -32603 internal error, 1 hook failed (the message is the hook's), 2 unknown handle, 3 unsupported version.",
            "type": "object",
            "properties": {
                "code": { "type": "integer" },
                "message": { "type": "string" },
                "data": true,
            },
            "required": ["code", "message"],
        }),
    );
    defs
}
