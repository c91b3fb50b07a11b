//! GitHub's own REST description (`api.github.com.json` from the npm package
//! `@octokit/openapi`) as the contract the fake GitHub and the client are held to: find the
//! operation a recorded request hit (method plus path-template match), check its query
//! parameters are declared ones, and validate its JSON body and the answer's against the
//! operation's schemas, `$ref`s resolved within the file.
//!
//! The validator covers the subset of JSON Schema the description uses for these calls:
//! `$ref`, OpenAPI 3.0's `nullable`, `type`, `enum`, `required`, `properties`,
//! `additionalProperties`, `items`, `allOf`/`anyOf`/`oneOf`, and the `date-time` and `uri`
//! formats. Keywords it does not know are ignored, so it can only be more lenient than GitHub's
//! description, never stricter.

use crate::github::RecordedCall;
use serde_json::Value;
use std::path::Path;

/// The variable naming the description file (`…/api.github.com.json`).
pub const ENV_FILE: &str = "BATON_TEST_GITHUB_OPENAPI";
/// Set to `1` (CI) to make a missing description fail the contract tests instead of skipping.
pub const ENV_REQUIRED: &str = "BATON_TEST_GITHUB_OPENAPI_REQUIRED";

/// The loaded description.
#[derive(Debug)]
pub struct OpenApi {
    doc: Value,
}

/// An operation found for a request.
#[derive(Debug, Clone, Copy)]
pub struct Operation<'a> {
    /// Its path template (`/repos/{owner}/{repo}/issues`).
    pub template: &'a str,
    /// Its `operationId` (`issues/list-for-repo`).
    pub id: &'a str,
    op: &'a Value,
    item: &'a Value,
}

impl OpenApi {
    /// Reads and parses the description.
    pub fn load(path: &Path) -> Result<OpenApi, String> {
        let text = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let doc: Value =
            serde_json::from_slice(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        if doc.get("paths").and_then(Value::as_object).is_none() {
            return Err(format!(
                "{}: no `paths`: not an OpenAPI description",
                path.display()
            ));
        }
        Ok(OpenApi { doc })
    }

    /// The operation for `method` on `raw_path` (percent-encoded, as sent): the template whose
    /// segments match, literal segments preferred over parameters.
    pub fn operation(&self, method: &str, raw_path: &str) -> Option<Operation<'_>> {
        let method = method.to_ascii_lowercase();
        let segs: Vec<&str> = raw_path.split('/').filter(|s| !s.is_empty()).collect();
        let paths = self.doc.get("paths")?.as_object()?;
        let mut best: Option<(usize, Operation<'_>)> = None;
        for (template, item) in paths {
            let tsegs: Vec<&str> = template.split('/').filter(|s| !s.is_empty()).collect();
            if tsegs.len() != segs.len() {
                continue;
            }
            let mut literal = 0;
            let fits = tsegs.iter().zip(&segs).all(|(t, s)| {
                if t.starts_with('{') && t.ends_with('}') {
                    !s.is_empty()
                } else {
                    literal += 1;
                    t == s
                }
            });
            let Some(op) = item.get(&method).filter(|_| fits) else {
                continue;
            };
            if best.as_ref().is_none_or(|(l, _)| literal > *l) {
                let id = op.get("operationId").and_then(Value::as_str).unwrap_or("");
                best = Some((
                    literal,
                    Operation {
                        template,
                        id,
                        op,
                        item,
                    },
                ));
            }
        }
        best.map(|(_, op)| op)
    }

    /// Resolves a local `$ref` (`#/components/schemas/issue`).
    fn resolve<'a>(&'a self, mut v: &'a Value) -> &'a Value {
        for _ in 0..32 {
            let Some(r) = v.get("$ref").and_then(Value::as_str) else {
                return v;
            };
            let Some(pointer) = r.strip_prefix('#') else {
                return v;
            };
            match self.doc.pointer(pointer) {
                Some(target) => v = target,
                None => return v,
            }
        }
        v
    }

    /// Checks one recorded request and its answer against the operation it hit; every
    /// problem found, each naming the call.
    pub fn check_call(&self, call: &RecordedCall) -> Result<(), Vec<String>> {
        let name = format!("{} {}", call.method, call.raw_path);
        let Some(op) = self.operation(&call.method, &call.raw_path) else {
            return Err(vec![format!(
                "{name}: no operation in GitHub's description"
            )]);
        };
        let mut errors = Vec::new();
        let at = |e: String| format!("{name} ({}): {e}", op.id);

        // Query parameters: declared, and of the declared type.
        let params: Vec<&Value> = [op.item.get("parameters"), op.op.get("parameters")]
            .into_iter()
            .flatten()
            .filter_map(Value::as_array)
            .flatten()
            .map(|p| self.resolve(p))
            .collect();
        for (key, value) in &call.query {
            let declared = params.iter().find(|p| {
                p.get("in").and_then(Value::as_str) == Some("query")
                    && p.get("name").and_then(Value::as_str) == Some(key.as_str())
            });
            match declared {
                None => errors.push(at(format!("query parameter `{key}` is not declared"))),
                Some(p) => {
                    if let Some(schema) = p.get("schema") {
                        let schema = self.resolve(schema);
                        let typed = match schema.get("type").and_then(Value::as_str) {
                            Some("integer") => value.parse::<i64>().map(Value::from).ok(),
                            Some("boolean") => value.parse::<bool>().map(Value::from).ok(),
                            _ => Some(Value::String(value.clone())),
                        };
                        match typed {
                            None => {
                                errors.push(at(format!("query `{key}={value}` is not of its type")))
                            }
                            Some(v) => {
                                for e in self.validate(schema, &v) {
                                    errors.push(at(format!("query `{key}`: {e}")));
                                }
                            }
                        }
                    }
                }
            }
        }

        // The request body.
        let body_schema = op
            .op
            .get("requestBody")
            .map(|b| self.resolve(b))
            .and_then(|b| b.pointer("/content/application~1json/schema"));
        match (&call.body, body_schema) {
            (Some(body), Some(schema)) => {
                for e in self.validate(schema, body) {
                    errors.push(at(format!("request body{e}")));
                }
            }
            (Some(_), None) => errors.push(at("a body the operation does not take".into())),
            (None, Some(_)) => {
                let required = op
                    .op
                    .get("requestBody")
                    .map(|b| self.resolve(b))
                    .and_then(|b| b.get("required"))
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                if required {
                    errors.push(at("no body, but the operation requires one".into()));
                }
            }
            (None, None) => {}
        }

        // The answer.
        let responses = op.op.get("responses");
        let described = responses
            .and_then(|r| r.get(call.status.to_string()))
            .or_else(|| responses.and_then(|r| r.get("default")))
            .map(|r| self.resolve(r));
        let conditional = call.method == "GET" && call.header("if-none-match").is_some();
        let schema = match described {
            Some(r) => r.pointer("/content/application~1json/schema"),
            // Any conditional GET may be answered 304 (HTTP's rule, which the description
            // lists for some operations only), without a body.
            None if call.status == 304 && conditional => None,
            // Statuses the description leaves out (500, 429, a secondary-limit 403) carry
            // GitHub's basic error.
            None if call.status >= 400 => self.doc.pointer("/components/schemas/basic-error"),
            None => {
                errors.push(at(format!("status {} is not described", call.status)));
                None
            }
        };
        match (&call.response, schema) {
            (Some(body), Some(schema)) => {
                for e in self.validate(schema, body) {
                    errors.push(at(format!("response {}{e}", call.status)));
                }
            }
            (None, Some(_)) if call.status != 304 => {
                errors.push(at(format!(
                    "status {} without the body it describes",
                    call.status
                )));
            }
            _ => {}
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }

    /// Validates `value` against `schema`; each problem as `/json/pointer: what`.
    pub fn validate(&self, schema: &Value, value: &Value) -> Vec<String> {
        let mut errors = Vec::new();
        self.check(schema, value, "", &mut errors, 0);
        errors
    }

    fn check(
        &self,
        schema: &Value,
        value: &Value,
        at: &str,
        errors: &mut Vec<String>,
        depth: usize,
    ) {
        if depth > 64 {
            return;
        }
        let schema = self.resolve(schema);
        let Some(s) = schema.as_object() else {
            return;
        };
        if value.is_null() && s.get("nullable").and_then(Value::as_bool) == Some(true) {
            return;
        }
        if let Some(all) = s.get("allOf").and_then(Value::as_array) {
            for sub in all {
                self.check(sub, value, at, errors, depth + 1);
            }
        }
        let passes = |sub: &Value| {
            let mut e = Vec::new();
            self.check(sub, value, at, &mut e, depth + 1);
            e
        };
        if let Some(any) = s.get("anyOf").and_then(Value::as_array) {
            let results: Vec<Vec<String>> = any.iter().map(passes).collect();
            if !results.iter().any(Vec::is_empty) {
                let first = results.iter().flatten().next().cloned().unwrap_or_default();
                errors.push(format!("{at}: matches none of anyOf (first: {first})"));
            }
        }
        if let Some(one) = s.get("oneOf").and_then(Value::as_array) {
            let results: Vec<Vec<String>> = one.iter().map(passes).collect();
            let ok = results.iter().filter(|e| e.is_empty()).count();
            if ok != 1 {
                let first = results.iter().flatten().next().cloned().unwrap_or_default();
                errors.push(format!(
                    "{at}: matches {ok} of oneOf, not 1 (first: {first})"
                ));
            }
        }
        if let Some(t) = s.get("type").and_then(Value::as_str) {
            let fits = match t {
                "object" => value.is_object(),
                "array" => value.is_array(),
                "string" => value.is_string(),
                "integer" => value.is_i64() || value.is_u64(),
                "number" => value.is_number(),
                "boolean" => value.is_boolean(),
                "null" => value.is_null(),
                _ => true,
            };
            if !fits {
                errors.push(format!("{at}: {} where {t} is required", kind(value)));
                return;
            }
        }
        if let Some(choices) = s.get("enum").and_then(Value::as_array)
            && !choices.contains(value)
        {
            errors.push(format!(
                "{at}: {value} is not one of {}",
                Value::Array(choices.clone())
            ));
        }
        if let (Some(format), Some(text)) =
            (s.get("format").and_then(Value::as_str), value.as_str())
        {
            let fits = match format {
                "date-time" => text.parse::<jiff::Timestamp>().is_ok(),
                "uri" => text.contains(':') && !text.contains(char::is_whitespace),
                _ => true,
            };
            if !fits {
                errors.push(format!("{at}: `{text}` is not a {format}"));
            }
        }
        if let Some(obj) = value.as_object() {
            if let Some(required) = s.get("required").and_then(Value::as_array) {
                for key in required.iter().filter_map(Value::as_str) {
                    if !obj.contains_key(key) {
                        errors.push(format!("{at}: `{key}` is required"));
                    }
                }
            }
            let props = s.get("properties").and_then(Value::as_object);
            for (key, v) in obj {
                let here = format!("{at}/{key}");
                match props.and_then(|p| p.get(key)) {
                    Some(sub) => self.check(sub, v, &here, errors, depth + 1),
                    None => match s.get("additionalProperties") {
                        Some(Value::Bool(false)) => {
                            errors.push(format!("{here}: not a property the schema allows"));
                        }
                        Some(sub @ Value::Object(_)) => {
                            self.check(sub, v, &here, errors, depth + 1)
                        }
                        _ => {}
                    },
                }
            }
        }
        if let (Some(items), Some(array)) = (s.get("items"), value.as_array()) {
            for (i, v) in array.iter().enumerate() {
                self.check(items, v, &format!("{at}/{i}"), errors, depth + 1);
            }
        }
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn api() -> OpenApi {
        OpenApi {
            doc: json!({
                "paths": {
                    "/repos/{owner}/{repo}/issues/{issue_number}": { "get": { "operationId": "issues/get" } },
                    "/repos/{owner}/{repo}/issues/comments/{comment_id}": { "get": { "operationId": "issues/get-comment" } }
                },
                "components": { "schemas": {
                    "user": { "type": "object", "nullable": true, "required": ["login"],
                              "properties": { "login": { "type": "string" } } },
                    "thing": { "type": "object", "required": ["id", "user", "state"],
                               "additionalProperties": false,
                               "properties": {
                                   "id": { "type": "integer" },
                                   "user": { "$ref": "#/components/schemas/user" },
                                   "state": { "type": "string", "enum": ["open", "closed"] },
                                   "at": { "type": "string", "format": "date-time" },
                                   "tags": { "type": "array", "items": { "oneOf": [
                                       { "type": "string" },
                                       { "type": "object", "required": ["name"] } ] } }
                               } }
                } }
            }),
        }
    }

    #[test]
    fn a_literal_segment_wins_over_a_parameter() {
        let api = api();
        let op = api
            .operation("GET", "/repos/a/b/issues/comments/5")
            .unwrap();
        assert_eq!(op.id, "issues/get-comment");
        assert_eq!(
            api.operation("GET", "/repos/a/b/issues/7").unwrap().id,
            "issues/get"
        );
        assert!(api.operation("POST", "/repos/a/b/issues/7").is_none());
    }

    #[test]
    fn the_validator_finds_each_kind_of_mismatch() {
        let api = api();
        let schema = json!({ "$ref": "#/components/schemas/thing" });
        let good = json!({ "id": 1, "user": null, "state": "open", "at": "2026-01-01T00:00:00Z",
                           "tags": ["x", { "name": "y" }] });
        assert_eq!(api.validate(&schema, &good), Vec::<String>::new());
        let cases = [
            (json!({ "user": null, "state": "open" }), "`id` is required"),
            (
                json!({ "id": "1", "user": null, "state": "open" }),
                "/id: a string where integer",
            ),
            (
                json!({ "id": 1, "user": {}, "state": "open" }),
                "/user: `login` is required",
            ),
            (
                json!({ "id": 1, "user": null, "state": "gone" }),
                "is not one of",
            ),
            (
                json!({ "id": 1, "user": null, "state": "open", "at": "yesterday" }),
                "not a date-time",
            ),
            (
                json!({ "id": 1, "user": null, "state": "open", "extra": 1 }),
                "/extra: not a property",
            ),
            (
                json!({ "id": 1, "user": null, "state": "open", "tags": [3] }),
                "/tags/0: matches 0 of oneOf",
            ),
        ];
        for (value, expected) in cases {
            let errors = api.validate(&schema, &value);
            assert!(
                errors.iter().any(|e| e.contains(expected)),
                "{value}: expected `{expected}` among {errors:?}"
            );
        }
        // `null` only where `nullable` allows it.
        let errors = api.validate(&json!({ "type": "string" }), &Value::Null);
        assert_eq!(errors, vec![": null where string is required".to_owned()]);
    }
}
