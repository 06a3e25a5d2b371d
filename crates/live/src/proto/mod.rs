//! The control protocol: versioned, length-prefixed frames over TCP.

pub mod frame;
pub mod message;
pub mod wire;

pub use frame::{decode, encode, read_msg, write_msg, ProtoError, MAX_TO_CLIENT, MAX_TO_SERVER, PROTOCOL_VERSION};
pub use message::*;
