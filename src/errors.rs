//! Core error → JS error. The message is prefixed with `[CODE] ` and the JS
//! facade (`lib/errors.js`) moves the code into `err.code`. This works the same
//! for sync exports and for async ones (whose napi errors cannot carry a
//! custom code).

use napi::{Error as JsError, Status};
use scm_core::Error;

pub fn to_js(err: Error) -> JsError {
    let status = match &err {
        Error::InvalidArgument(_) | Error::InvalidMessage { .. } => Status::InvalidArg,
        _ => Status::GenericFailure,
    };
    JsError::new(status, format!("[{}] {err}", err.code()))
}

/// `Result<T, scm_core::Error>` → `napi::Result<T>`.
pub trait IntoJsResult<T> {
    fn js(self) -> napi::Result<T>;
}

impl<T> IntoJsResult<T> for scm_core::Result<T> {
    fn js(self) -> napi::Result<T> {
        self.map_err(to_js)
    }
}

/// A JS argument that is not what the API documents.
pub fn invalid_arg(msg: impl Into<String>) -> JsError {
    to_js(Error::InvalidArgument(msg.into()))
}

/// Parse a JSON string handed over by the facade.
pub fn parse_json<T: serde::de::DeserializeOwned>(json: &str, what: &str) -> napi::Result<T> {
    serde_json::from_str(json).map_err(|e| invalid_arg(format!("{what}: {e}")))
}

/// The key of a string that crossed beside the JSON: the facade writes a
/// long string (a tool output, a written file's content) as
/// `{"scm:lifted": k}` and passes it as `texts[k]`, so it skips JSON
/// escaping in JS and unescaping here (a napi string conversion is a copy).
pub const LIFTED_KEY: &str = "scm:lifted";

/// Parse a message window handed over by the facade and put the lifted
/// strings back (see [`LIFTED_KEY`]).
pub fn parse_messages(
    json: &str,
    texts: Option<Vec<String>>,
    what: &str,
) -> napi::Result<Vec<serde_json::Value>> {
    let mut messages: Vec<serde_json::Value> = parse_json(json, what)?;
    if let Some(mut texts) = texts.filter(|t| !t.is_empty()) {
        for m in &mut messages {
            restore_lifted(m, &mut texts, what)?;
        }
    }
    Ok(messages)
}

fn restore_lifted(v: &mut serde_json::Value, texts: &mut [String], what: &str) -> napi::Result<()> {
    use serde_json::Value;
    match v {
        Value::Object(o) if o.len() == 1 && o.contains_key(LIFTED_KEY) => {
            let k = &o[LIFTED_KEY];
            let text = k
                .as_u64()
                .and_then(|k| texts.get_mut(k as usize))
                .map(std::mem::take)
                .ok_or_else(|| {
                    invalid_arg(format!(
                        "{what}: lifted string {k} is not among the {} sent",
                        texts.len()
                    ))
                })?;
            *v = Value::String(text);
        }
        Value::Object(o) => {
            for x in o.values_mut() {
                restore_lifted(x, texts, what)?;
            }
        }
        Value::Array(a) => {
            for x in a {
                restore_lifted(x, texts, what)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// Serialise a value for the facade to `JSON.parse`.
pub fn to_json<T: serde::Serialize + ?Sized>(value: &T) -> napi::Result<String> {
    serde_json::to_string(value).map_err(|e| to_js(Error::Internal(format!("json: {e}"))))
}
