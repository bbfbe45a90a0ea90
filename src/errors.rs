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

/// Serialise a value for the facade to `JSON.parse`.
pub fn to_json<T: serde::Serialize + ?Sized>(value: &T) -> napi::Result<String> {
    serde_json::to_string(value).map_err(|e| to_js(Error::Internal(format!("json: {e}"))))
}
