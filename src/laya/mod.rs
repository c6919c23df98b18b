//! The Laya host contract, pure and portable: bundles, tokenizer, prompt rows, packing, decoding.

pub mod bpe;
pub mod bundle;
pub mod config;
pub mod decode;
pub mod host;
pub mod prefix;
pub mod prompt;
pub mod pyjson;
pub mod question;
pub mod request;
pub mod tokenizer;
pub mod workload;
