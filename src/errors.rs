//! Core error → JS error. The message is prefixed with `[CODE] ` and the JS
//! facade (`lib/errors.js`) moves the code into `err.code`. This works the same
//! for sync exports and for async ones (whose napi errors cannot carry a
//! custom code).

use napi::{Error as JsError, Status};
use scm_core::Error;

pub const CODE_PREFIX_OPEN: char = '[';

pub fn to_js(err: Error) -> JsError {
    let status = match &err {
        Error::InvalidArgument(_) | Error::InvalidMessage { .. } => Status::InvalidArg,
        _ => Status::GenericFailure,
    };
    JsError::new(status, format!("{CODE_PREFIX_OPEN}{}] {err}", err.code()))
}
