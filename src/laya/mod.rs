//! The Laya host contract, pure and portable: bundles, tokenizer, prompt rows, packing, decoding.

pub mod config;
