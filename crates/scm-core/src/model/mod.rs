//! Object model: types, envelope, the five hashes, stable serialisation.
pub mod hashing;
pub mod object;
pub mod stable_json;

pub use object::*;
