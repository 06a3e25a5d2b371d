//! Transports: RC, UC, UD queue pairs and the verbs operations over them.

pub mod headers;
pub mod packet;
pub mod qp;
pub mod rq;
